"""Issue 21 item 2: one convention for the stack argument. Every command that reads a stack
takes `--stack FILE`; those with no other positional argument also take it as STACK_FILE, and
the two are one choice."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from tests.cli.commands import leaf_commands

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.example.yaml"


def test_every_command_that_reads_a_stack_takes_the_stack_option() -> None:
    readers = []
    for path, cmd in leaf_commands().items():
        params = getattr(cmd, "params", [])
        positional = any(getattr(p, "metavar", None) == "STACK_FILE" for p in params)
        option = [p for p in params if "--stack" in getattr(p, "opts", [])]
        if positional or option:
            readers.append(path)
            assert option, f"accelfleet {' '.join(path)} takes STACK_FILE but not --stack FILE"
            assert option[0].metavar == "FILE", path
    # the commands a stack drives, pool edits and smoke runs among them
    assert {("fleet", "validate"), ("plan",), ("pool", "request"), ("pool", "resize"),
            ("pool", "remove"), ("smoke", "run"), ("smoke", "release"), ("up",),
            ("advise",), ("queue", "show")} <= set(readers)


def test_the_option_and_the_argument_name_the_same_stack() -> None:
    env = {"COLUMNS": "200"}
    by_arg = runner.invoke(app, ["fleet", "validate", str(EXAMPLE), "--json"], env=env)
    by_opt = runner.invoke(app, ["fleet", "validate", "--stack", str(EXAMPLE), "--json"],
                           env=env)
    assert by_arg.exit_code == by_opt.exit_code == 0, by_opt.output
    assert by_arg.output == by_opt.output
    same = runner.invoke(app, ["queue", "show", str(EXAMPLE), "--stack", str(EXAMPLE)], env=env)
    assert same.exit_code == 0, same.output


def test_two_different_stacks_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "Pulumi.other.yaml"
    other.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    result = runner.invoke(app, ["plan", str(EXAMPLE), "--stack", str(other)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "two stacks given" in result.output and "--stack FILE" in result.output
