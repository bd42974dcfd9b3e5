"""Every command of the CLI, for the tests that walk them all."""

from __future__ import annotations

from typing import Any

import typer

from cli.main import app


def leaf_commands() -> dict[tuple[str, ...], Any]:
    """Each runnable command by its words (`("smoke", "run")`): Click's command object."""
    out: dict[tuple[str, ...], Any] = {}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if not subs:
            out[path] = cmd
            return
        for name, sub in subs.items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return out
