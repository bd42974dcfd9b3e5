"""Issue 22, a thin CLI: each command parses its arguments, calls the library and renders the
result. A command body over 40 lines is work that belongs in `fleet/` or `smoke/` (or in a
small render helper beside it); Typer's classes are configured through its `cls=` hook, never
patched at import."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import typer

from tests.cli.commands import leaf_commands

MAX_BODY_LINES = 40
ROOT = Path(__file__).resolve().parents[2]


def body_lines(fn: Any) -> int:
    """The lines of a function's body, its docstring left out (decorators unwrapped)."""
    fn = inspect.unwrap(fn)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef), fn
    body = node.body
    first = body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        body = body[1:]
    if not body:
        return 0
    end = body[-1].end_lineno
    assert end is not None
    return end - body[0].lineno + 1


def callbacks() -> dict[tuple[str, ...], Any]:
    """Every command's function, and every group's callback (`accelfleet`'s own)."""
    from cli.main import app

    out = {path: cmd.callback for path, cmd in leaf_commands().items()}

    def groups(cmd: Any, path: tuple[str, ...]) -> None:
        if cmd.callback is not None:
            out[(*path, "(callback)")] = cmd.callback
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            if getattr(sub, "commands", None):
                groups(sub, (*path, name))

    groups(typer.main.get_command(app), ())
    return out


def test_body_lines_counts_the_body_without_its_docstring() -> None:
    def f() -> None:
        """Doc.

        More doc.
        """
        x = 1
        del x

    assert body_lines(f) == 2


def test_no_command_body_is_over_40_lines() -> None:
    found = callbacks()
    assert ("smoke", "run") in found and ("fleet", "validate") in found
    long = {" ".join(path): n for path, fn in found.items()
            if (n := body_lines(fn)) > MAX_BODY_LINES}
    assert not long, (f"command bodies over {MAX_BODY_LINES} lines: {long}; move the work "
                      "into fleet/ or smoke/, and rendering into a helper")


def test_every_command_and_group_is_accelfleets_class() -> None:
    """The help rows' presentation comes from cli._typer's classes, given through `cls=`."""
    from cli._typer import Command, Group
    from cli.main import app

    for path, cmd in leaf_commands().items():
        assert isinstance(cmd, Command), path
    root = typer.main.get_command(app)
    assert isinstance(root, Group)
    for name, sub in getattr(root, "commands", {}).items():
        assert isinstance(sub, Command | Group), name


def test_importing_the_cli_leaves_typer_unpatched() -> None:
    """In a fresh interpreter: import cli.main and render every command's help; Typer's
    parameter classes keep their own methods."""
    code = textwrap.dedent("""
        from typer.core import TyperArgument, TyperOption
        before = (TyperOption.display_type_rich, TyperArgument.display_type_rich)
        from typer.testing import CliRunner
        from cli.main import app
        from tests.cli.commands import leaf_commands
        for path in [(), ("smoke",), *leaf_commands()]:
            assert CliRunner().invoke(app, [*path, "--help"]).exit_code == 0, path
        after = (TyperOption.display_type_rich, TyperArgument.display_type_rich)
        assert after == before, after
        for method in after:
            assert method.__module__ == "typer.core", method
        print("unpatched")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "unpatched"


def test_flags_and_metavar_arguments_show_no_type() -> None:
    """What the classes are for: `--json` (a flag) and `NODE` (an argument with a metavar)
    read with no `<bool>` or `<list[str]>` beside them, `--help` included."""
    from typer.testing import CliRunner

    from cli.main import app

    for path in (["smoke", "release"], []):
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "<bool>" not in result.output and "<list" not in result.output
    release = CliRunner().invoke(app, ["smoke", "release", "--help"], env={"COLUMNS": "200"})
    assert "NODE" in release.output and "--json" in release.output
