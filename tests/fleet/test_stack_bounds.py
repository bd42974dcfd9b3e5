"""Hostile stack files: what a stack may hold is bounded, and each bound is refused with exit 2,
a message naming the limit and the fix, and no traceback, before any heavy work. Each case runs
the real command in a subprocess whose timeout (enforced by the runner, not asserted) stands for
"never hangs"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.errors import StackFileError
from fleet.stack.read import MAX_DEPTH, MAX_POOLS, MAX_STACK_BYTES, check_bounds, read_stack_file

ROOT = Path(__file__).resolve().parents[2]
HEAD = "config:\n  accelfleet:fleet:\n"
RUNNER_BOUND_S = 60  # a hang, not a timing: the refusals take milliseconds


def billion_laughs(levels: int = 9) -> str:
    lines = ["config:", "  other:", '    l0: &l0 ["lol","lol","lol","lol","lol","lol","lol",'
             '"lol","lol","lol"]']
    for i in range(1, levels + 1):
        refs = ",".join([f"*l{i - 1}"] * 10)
        lines.append(f"    l{i}: &l{i} [{refs}]")
    lines += ["  accelfleet:fleet:", "    clusters: *l9"]
    return "\n".join(lines) + "\n"


CORPUS: dict[str, tuple[str, str]] = {
    # name: (file text, what the message must say)
    "deep-600": (HEAD + "    pools: " + "[" * 600 + "]" * 600 + "\n", "levels deep"),
    "deep-40": (HEAD + "    pools: " + "[" * 40 + "]" * 40 + "\n", "levels deep"),
    "billion-laughs": (billion_laughs(), "aliases"),
    "self-alias": ("config:\n  other: &a [*a]\n" + HEAD[8:] + "    pools: []\n", "levels deep"),
    "too-many-pools": (HEAD + "    pools:\n" + "".join(
        f"      - {{name: p{i}}}\n" for i in range(MAX_POOLS + 1)), "pools"),
    "top-level-list": ("- config\n", "not a Pulumi stack file"),
}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=RUNNER_BOUND_S)


@pytest.mark.parametrize("case", sorted(CORPUS))
@pytest.mark.parametrize("command", [("fleet", "validate"), ("plan",)])
def test_hostile_stack_is_refused_with_exit_2(case: str, command: tuple[str, ...],
                                              tmp_path: Path) -> None:
    text, says = CORPUS[case]
    path = tmp_path / "Pulumi.hostile.yaml"
    path.write_text(text, encoding="utf-8")
    out = run_cli(*command, str(path))
    assert out.returncode == 2, out.stderr[-2000:]
    assert says in out.stderr and "hint:" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.big.yaml"
    with path.open("w", encoding="utf-8") as f:
        f.write(HEAD + "    pools: []\n#")
        f.truncate(MAX_STACK_BYTES + 1)  # a sparse file: no 2 MiB of writing
    with pytest.raises(StackFileError, match="MiB"):
        read_stack_file(path)
    out = run_cli("fleet", "validate", str(path))
    assert out.returncode == 2 and "split the fleet" in out.stderr


def nested(depth: int) -> object:
    value: object = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@given(st.integers(min_value=0, max_value=MAX_DEPTH - 2))
@settings(max_examples=30, deadline=None)
def test_any_depth_within_the_bound_passes(depth: int) -> None:
    check_bounds({"config": {"other": nested(depth)}}, "s")


@given(st.integers(min_value=MAX_DEPTH + 1, max_value=400))
@settings(max_examples=30, deadline=None)
def test_any_depth_beyond_the_bound_is_refused(depth: int) -> None:
    with pytest.raises(StackFileError, match="levels deep"):
        check_bounds({"config": {"other": nested(depth)}}, "s")


@given(st.integers(min_value=2, max_value=12), st.integers(min_value=2, max_value=12))
@settings(max_examples=40, deadline=None)
def test_shared_values_count_as_often_as_they_are_repeated(fanout: int, levels: int) -> None:
    """Aliases parse into shared objects; the bound counts each repetition."""
    value: object = ["x"] * fanout
    for _ in range(levels):
        value = [value] * fanout
    total = sum(fanout ** i for i in range(1, levels + 2))  # lists and scalars, roughly
    if total > 300_000:
        with pytest.raises(StackFileError, match="aliases"):
            check_bounds({"config": {"other": value}}, "s")
    elif total < 150_000:
        check_bounds({"config": {"other": value}}, "s")


def test_a_yaml_alias_bomb_parses_in_milliseconds_and_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.bomb.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")
    with pytest.raises(StackFileError, match="aliases"):
        read_stack_file(path)


def test_a_json_stack_reads_as_the_same_yaml(tmp_path: Path) -> None:
    import json

    from ruamel.yaml import YAML

    example = ROOT / "stacks" / "Pulumi.example.yaml"
    as_json = tmp_path / "Pulumi.json.yaml"
    as_json.write_text(json.dumps(YAML(typ="safe").load(example.read_text("utf-8"))),
                       encoding="utf-8")
    assert read_stack_file(as_json) == read_stack_file(example)


def test_json_with_a_duplicate_key_gets_the_yaml_error(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text('{"config": {"accelfleet:fleet": {}, "accelfleet:fleet": {}}}')
    with pytest.raises(StackFileError, match="not valid YAML"):
        read_stack_file(path)


def test_deep_json_is_refused_like_deep_yaml(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.deep.yaml"
    path.write_text('{"config": {"accelfleet:fleet": {"pools": ' + "[" * 5000 + "]" * 5000
                    + "}}}")
    with pytest.raises(StackFileError, match="levels deep"):
        read_stack_file(path)
