"""A gated node's patches themselves, without a cluster (issue 35; split from
test_gate_lifecycle.py): a failed node never keeps an autoscaler-prefixed taint, the gate
removes only its own annotations, a malformed undo record undoes nothing; the proof deadline
inside the autoscaler's startup window; a released node the gate had proven needs a fresh
proof."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleet.labels import (
    GATE_LABEL,
    GATE_MODE_LABEL,
    GATE_PROOF_ANNOTATION,
    GATE_UNDO_ANNOTATION,
    SMOKE_KEY,
    STARTUP_TAINT_PREFIX,
)
from smoke.gate import lifecycle as L
from tests.smoke.gate_cluster import gated_inventory
from tests.smoke.test_gate_lifecycle import DO_NOT_DISRUPT, SCALE_DOWN_DISABLED


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


# -- the patches themselves ----------------------------------------------------------------
def _raw(taints: list[dict[str, str]], *, unschedulable: bool = False,
         ann: dict[str, str] | None = None, labels: dict[str, str] | None = None
         ) -> dict[str, Any]:
    return {"metadata": {"name": "n", "resourceVersion": "7", "labels": labels or {},
                         "annotations": ann or {}},
            "spec": {"taints": taints, "unschedulable": unschedulable}}


GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize("on_fail", ["keep", "replace"])
def test_a_failed_patch_never_leaves_an_autoscaler_prefixed_taint(on_fail: str) -> None:
    """Every autoscaler startup or status prefix (cluster-autoscaler utils/taints/taints.go:
    ignore-taint., startup-taint., status-taint.): none is on a failed node."""
    prefixes = ("ignore-taint.cluster-autoscaler.kubernetes.io/", STARTUP_TAINT_PREFIX,
                "status-taint.cluster-autoscaler.kubernetes.io/")
    patch = L.failed_patch(_raw([GPU, L.startup_taint()]), on_fail)
    keys = [t["key"] for t in patch["spec"]["taints"]]
    assert not any(k.startswith(p) for k in keys for p in prefixes)
    assert GPU in patch["spec"]["taints"] and L.failed_taint() in patch["spec"]["taints"]
    assert patch["spec"]["unschedulable"] is True
    assert patch["metadata"]["resourceVersion"] == "7"
    ann = patch["metadata"]["annotations"]
    assert (SCALE_DOWN_DISABLED in ann) == (on_fail == "keep")
    again = L.failed_patch(_raw(patch["spec"]["taints"], unschedulable=True,
                                ann={k: v for k, v in ann.items() if v}), on_fail)
    assert again["spec"]["taints"].count(L.failed_taint()) == 1  # idempotent
    assert json.loads(again["metadata"]["annotations"][GATE_UNDO_ANNOTATION])["cordoned"]


def test_keep_then_replace_removes_only_the_gates_own_annotations() -> None:
    first = L.failed_patch(_raw([L.startup_taint()], ann={DO_NOT_DISRUPT: "true"}), "keep")
    ann = {k: v for k, v in first["metadata"]["annotations"].items() if v}
    assert DO_NOT_DISRUPT not in first["metadata"]["annotations"]  # somebody else's
    assert json.loads(ann[GATE_UNDO_ANNOTATION])["annotations"] == [SCALE_DOWN_DISABLED]
    later = L.failed_patch(_raw(first["spec"]["taints"], unschedulable=True,
                                ann={**ann, DO_NOT_DISRUPT: "true"}), "replace")
    assert later["metadata"]["annotations"][SCALE_DOWN_DISABLED] is None
    assert DO_NOT_DISRUPT not in later["metadata"]["annotations"]


def test_a_malformed_undo_record_undoes_nothing_and_raises_nothing() -> None:
    for text in ("not json", "[1, 2]", '{"annotations": 5}', '{"annotations": [3, "x/y"]}'):
        raw = _raw([L.failed_taint()], unschedulable=True,
                   ann={GATE_UNDO_ANNOTATION: text}, labels={GATE_LABEL: "failed"})
        body = L.fresh_proof_changes(raw)
        assert "unschedulable" not in body["spec"]  # never uncordons on a guess
        assert L.startup_taint() in body["spec"]["taints"]


# -- the proof deadline, inside the autoscaler's window ------------------------------------
def test_the_proof_deadline_defaults_inside_the_autoscalers_startup_window() -> None:
    from fleet.errors import InputError
    from fleet.gate import AUTOSCALER_STARTUP_WINDOW_S, PROOF_TIMEOUT_MAX_S, PROOF_TIMEOUT_S
    from smoke.gate.session import proof_timeout_s

    assert proof_timeout_s(None) == PROOF_TIMEOUT_S == 600  # not smoke.timeout_s (900)
    assert PROOF_TIMEOUT_S < PROOF_TIMEOUT_MAX_S < AUTOSCALER_STARTUP_WINDOW_S == 15 * 60
    assert proof_timeout_s(PROOF_TIMEOUT_MAX_S) == PROOF_TIMEOUT_MAX_S
    for asked in (PROOF_TIMEOUT_MAX_S + 1, 900, 3600):
        with pytest.raises(InputError) as err:
            proof_timeout_s(asked)
        assert "15 minutes" in err.value.message and "--timeout-s 780" in err.value.hint


def test_gate_run_refuses_a_deadline_past_the_window(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cli.main import app

    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(gated_inventory().to_dict()), encoding="utf-8")
    result = CliRunner().invoke(app, ["gate", "run", "--once", "--inventory", str(inv),
                                      "--timeout-s", "900"])
    assert result.exit_code == 2, result.output
    assert "past the autoscaler's window" in result.output


def test_releasing_a_proven_gated_node_that_smoke_run_quarantined_needs_a_fresh_proof() -> None:
    """`smoke run` quarantined a node the gate had proven: released, it goes back to
    unproven with the startup taint (its old proof no longer counts); a node of no gated
    pool, or of a shadow pool, is released as before."""
    from smoke.cluster.quarantine import UNDO
    from smoke.cluster.release import _release_patch

    smoke_taint = {"key": SMOKE_KEY, "value": "failed", "effect": "NoSchedule"}
    undo = json.dumps({"label": None, "cordoned": True, "tainted": True, "annotations": {}})
    proof = json.dumps({"at": "2026-11-27T00:00:00Z", "run": "r1", "verdict": "pass"})
    gated = _raw([GPU, smoke_taint], unschedulable=True,
                 ann={UNDO: undo, GATE_PROOF_ANNOTATION: proof},
                 labels={GATE_LABEL: "proven", SMOKE_KEY: "failed"})
    patch = _release_patch(gated)
    assert patch is not None
    assert patch["spec"]["taints"] == [GPU, L.startup_taint()]
    assert patch["metadata"]["labels"][GATE_LABEL] == "unproven"
    assert patch["metadata"]["annotations"][GATE_PROOF_ANNOTATION] is None
    assert patch["spec"]["unschedulable"] is None  # the quarantine's own cordon, undone
    for labels in ({SMOKE_KEY: "failed"},
                   {SMOKE_KEY: "failed", GATE_LABEL: "proven", GATE_MODE_LABEL: "shadow"}):
        plain = _raw([GPU, smoke_taint], unschedulable=True, ann={UNDO: undo}, labels=labels)
        patch = _release_patch(plain)
        assert patch is not None and patch["spec"]["taints"] == [GPU]
        assert GATE_LABEL not in patch["metadata"]["labels"]
