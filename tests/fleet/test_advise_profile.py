"""Workload profiles are checked strictly: every problem at once, each with the field, what it
accepts and the fix; unknown fields and presets get the nearest names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet.advise import load_workload, parse_workload
from fleet.errors import InputError, UnknownNameError

GOOD: dict[str, Any] = {
    "kind": "training",
    "model": {"layers": 2, "hidden_size": 64, "attention_heads": 4, "vocab_size": 1000},
    "sequence_length": 128, "global_batch_sequences": 8, "tokens": 1e6, "devices": 2,
}


def _problems(data: object) -> str:
    with pytest.raises(InputError) as info:
        parse_workload(data, "test.yaml")
    assert info.value.hint
    return info.value.message


def test_a_good_profile_parses() -> None:
    w = parse_workload(GOOD, "test.yaml", name="test")
    assert w.devices == 2 and w.training is not None and w.training.checkpointing == "selective"
    assert w.model is not None and w.model.total_parameters > 0


@pytest.mark.parametrize(("change", "words"), [
    ({"sequence_lenght": 128}, "did you mean 'sequence_length'"),
    ({"model": {**GOOD["model"], "layer": 2}}, "model.layer: unknown field; did you mean"),
    ({"kind": "trainig"}, "did you mean 'training'"),
    ({"precision": "fp8"}, "catalog holds bf16 peaks only"),
    ({"devices": 0}, "devices: must be at least 1"),
    ({"devices": 2.5}, "must be a whole number"),
    ({"devices": True}, "devices: must be a whole number"),
    ({"tokens": "1e9"}, "write it without quotes"),
    ({"steps": 10}, "`tokens` and `steps` are both given"),
    ({"prompt_tokens": 10}, "is a field of inference workloads"),
    ({"activation_checkpointing": "partial"}, "accepted: none, selective, full"),
    ({"model": {**GOOD["model"], "attention_heads": 5}}, "does not split into 5"),
    ({"model": {**GOOD["model"], "kv_heads": 3}}, "do not group into 3 kv_heads"),
    ({"micro_batch_sequences": 16}, "more than the global batch"),
    ({"per_step": {"flops": 1e15, "traffic_bytes": 1e12}}, "give one of them"),
])
def test_each_problem_names_the_field_and_the_fix(change: dict[str, Any], words: str) -> None:
    message = _problems({**GOOD, **change})
    assert words in message, message
    assert "fix:" in message


def test_every_problem_is_reported_at_once() -> None:
    message = _problems({"kind": "training", "model": {"layers": "two"}, "devices": -1})
    assert "3 problems" in message or "problems found" in message
    for field in ("model.layers", "model.hidden_size", "sequence_length", "devices",
                  "global_batch_sequences"):
        assert field in message, (field, message)


def test_missing_kind_and_model() -> None:
    message = _problems({"devices": 8})
    assert "kind: is required" in message and "model: is required" in message


def test_raw_counts_need_steps() -> None:
    message = _problems({"kind": "training", "per_step": {"flops": 1e15}})
    assert "per_step.traffic_bytes: is required" in message and "steps: is required" in message
    w = parse_workload({"kind": "training", "steps": 100, "devices": 4,
                        "per_step": {"flops": 1e15, "traffic_bytes": 1e12,
                                     "memory_bytes": 1e11, "collective_bytes": 1e10}}, "raw")
    assert w.steps == 100 and w.training_step_flops() == 1e15 and w.gradient_bytes() == 1e10


def test_inference_fields() -> None:
    message = _problems({"kind": "inference", "model": GOOD["model"], "tokens": 5})
    assert "prompt_tokens: is required" in message and "is a field of training" in message


def test_not_a_mapping() -> None:
    with pytest.raises(InputError, match="a mapping of fields"):
        parse_workload(["kind", "training"], "list.yaml")


def test_unknown_preset_suggests_the_nearest() -> None:
    with pytest.raises(UnknownNameError) as info:
        load_workload("llama3-8b-pretrian")
    assert "llama3-8b-pretrain" in info.value.suggestions
    assert "presets:" in info.value.hint


def test_files(tmp_path: Path) -> None:
    good = tmp_path / "job.yaml"
    good.write_text("kind: training\nmodel: {parameters: 1.0e9}\nsequence_length: 1024\n"
                    "global_batch_sequences: 8\nsteps: 5\n", encoding="utf-8")
    assert load_workload(str(good)).name == "job"
    with pytest.raises(InputError, match="does not exist"):
        load_workload(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: training\nmodel: [\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML at line"):
        load_workload(str(bad))
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        load_workload(str(binary))
    with pytest.raises(InputError, match="is a directory"):
        load_workload(str(tmp_path))
