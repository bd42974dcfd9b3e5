"""The docs people read first (the README, the example stack, the spec's and the fleet's
docstrings, docs/) name only commands that exist: every `accelfleet ...` they quote resolves in
the CLI's command tree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "stacks" / "Pulumi.example.yaml",
        *(path for package in ("fleet", "components", "smoke", "cli")
          for path in sorted((ROOT / package).rglob("*.py"))),
        *sorted((ROOT / "docs").glob("*.md"))]
QUOTED = re.compile(r"`accelfleet((?: [a-z][a-z-]*)+)")


def quoted_commands() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for m in QUOTED.finditer(path.read_text(encoding="utf-8")):
            found.append((path.relative_to(ROOT).as_posix(), m[1].split()))
    return [(where, " ".join(words)) for where, words in found]


def resolves(words: list[str]) -> bool:
    command: Any = typer.main.get_command(app)
    for word in words:
        if not hasattr(command, "commands"):
            return True  # the rest are the command's arguments
        sub = command.commands.get(word)
        if sub is None:
            return False
        command = sub
    return True


def test_the_docs_quote_commands() -> None:
    assert len(quoted_commands()) > 10


@pytest.mark.parametrize(("where", "command"), sorted(set(quoted_commands())))
def test_every_quoted_command_exists(where: str, command: str) -> None:
    assert resolves(command.split()), f"{where} quotes `accelfleet {command}`, which is no command"
