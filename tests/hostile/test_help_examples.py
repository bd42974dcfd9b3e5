"""Item 8 (part): an Examples section in every command's `--help`, and every example names a
real command with options it has (a typo'd example is worse than none)."""

from __future__ import annotations

import shlex

import typer
from typer.testing import CliRunner

from cli._examples import EXAMPLES
from cli.main import app


def _leaves(group: object, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    subs = getattr(group, "commands", None)
    if not subs:
        return {prefix: group}
    out: dict[tuple[str, ...], object] = {}
    for name, sub in subs.items():
        out |= _leaves(sub, (*prefix, name))
    return out


def test_every_command_shows_examples() -> None:
    leaves = _leaves(typer.main.get_command(app))
    assert set(leaves) == set(EXAMPLES)
    for path in leaves:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "Examples:" in result.output, path
        assert f"accelfleet {' '.join(path)}" in result.output or path == ("completion",)


def test_every_example_uses_options_its_command_has() -> None:
    leaves = _leaves(typer.main.get_command(app))
    for path, lines in EXAMPLES.items():
        params = getattr(leaves[path], "params", [])
        known = {o for p in params for o in (*p.opts, *p.secondary_opts)}
        for line in lines:
            words = shlex.split(line.replace('"$(', "").replace(')"', ""))
            start = words.index("accelfleet")
            assert tuple(words[start + 1:start + 1 + len(path)]) == path, line
            for word in words[start + 1 + len(path):]:
                if word.startswith("--"):
                    assert word in known, (path, word)
