"""Item 8 (part): an Examples section in every command's `--help`, and every example names a
real command with options it has (a typo'd example is worse than none)."""

from __future__ import annotations

import shlex

from typer.testing import CliRunner

from cli._examples import EXAMPLES
from cli.main import app
from tests.cli.commands import leaf_commands


def test_every_command_shows_examples() -> None:
    leaves = leaf_commands()
    assert set(leaves) == set(EXAMPLES)
    for path in leaves:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "Examples:" in result.output, path
        assert f"accelfleet {' '.join(path)}" in result.output or path == ("completion",)


def test_every_example_uses_options_its_command_has() -> None:
    leaves = leaf_commands()
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
