"""Issue 29 item 8: a workload profile (`advise --workload`) with a null, or a value of the wrong
type, where a mapping, a number, a flag or text is expected, at any depth, is refused with
exit 2 and a sentence naming the field, never an internal error (exit 3). Every node of every
seed profile in tests/fuzz/corpus/workload is replaced in turn by each wrong value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.hostile.conftest import ROOT, invoke, refused

SEEDS = sorted((ROOT / "tests" / "fuzz" / "corpus" / "workload").glob("*.yaml"))
WRONG: tuple[Any, ...] = (None, [], {"a": None}, "x", True)


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node's path in a document (the root is `()`)."""
    out = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*at, i))
    return out


def _with(doc: Any, at: tuple[Any, ...], value: Any) -> Any:
    if not at:
        return value
    copy = json.loads(json.dumps(doc))
    node = copy
    for key in at[:-1]:
        node = node[key]
    node[at[-1]] = value
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS, ids=[s.stem for s in SEEDS])
def test_a_wrong_type_at_any_depth_is_exit_2_never_3(seed: Path, tmp_path: Path) -> None:
    doc = YAML(typ="safe").load(seed.read_text(encoding="utf-8"))
    profile = tmp_path / "job.yaml"
    codes: dict[int, int] = {}
    for at in _paths(doc):
        for value in WRONG:
            profile.write_text(json.dumps(_with(doc, at, value)), encoding="utf-8")
            code, output = invoke("advise", "--workload", str(profile))
            where = (".".join(map(str, at)) or "(root)", value)
            assert code in (0, 2), (where, output[-1500:])
            assert "internal error" not in output and "Traceback" not in output, where
            if code == 2:
                assert "hint:" in output, (where, output[-1500:])
            codes[code] = codes.get(code, 0) + 1
    assert codes.get(2, 0) > codes.get(0, 0)  # most wrong values are refused, not shrugged off


@pytest.mark.parametrize(("old", "new", "says"), [
    ("model: {parameters: 7.0e9,", "model: {parameters: ~,", "model.layers: is required"),
    ("model: {parameters: 7.0e9, gated_mlp: true,", "model: {parameters: 7.0e9, gated_mlp: ~,",
     "model.gated_mlp: must be true or false"),
    ("name: p", "name: ~", "name: must be text"),
    ("name: p", "name: [1, 2]", "name: must be text"),
    ("sequence_length: 4096", "sequence_length: {a: 1}", "sequence_length: must be a whole"),
])
def test_each_null_says_the_field_and_the_fix(old: str, new: str, says: str,
                                              tmp_path: Path) -> None:
    """Before: `parameters: ~` was exit 3 (an AssertionError building the model), and a name or
    description of the wrong type was dropped without a word."""
    seed = ROOT / "tests" / "fuzz" / "corpus" / "workload" / "parameters-only.yaml"
    text = seed.read_text(encoding="utf-8")
    assert old in text
    profile = tmp_path / "job.yaml"
    profile.write_text(text.replace(old, new), encoding="utf-8")
    refused(*invoke("advise", "--workload", str(profile)), says)
