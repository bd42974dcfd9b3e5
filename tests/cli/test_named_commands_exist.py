"""Every `accelfleet ...` command line the project shows a person (a hint in an error, a help
text, a doc page, the README) names a command that exists, with options it takes. Issue 35
found `gate` help and two error hints naming `accelfleet plan --inventory FILE`, which did not
exist: a class, checked here for every mention at once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "cli").rglob("*.py")), *sorted((ROOT / "fleet").rglob("*.py")),
           *sorted((ROOT / "smoke").rglob("*.py")), *sorted((ROOT / "components").rglob("*.py")),
           *sorted((ROOT / "policies").rglob("*.py")), *sorted((ROOT / "docs").glob("*.md")),
           ROOT / "README.md", *sorted((ROOT / ".github").rglob("*.yml"))]
# `accelfleet ...` in backticks (code, docs), or a shell line of a doc (`$ accelfleet ...`,
# `run: accelfleet ...`)
MENTION = re.compile(r"`accelfleet ([^`\n]+)`|^\s*(?:\$ |run: |- run: )accelfleet ([^\n#|>]+)",
                     re.MULTILINE)


def _mentions() -> list[tuple[str, str]]:
    out = []
    for path in SOURCES:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for m in MENTION.finditer(text):
            line = (m.group(1) or m.group(2) or "").strip()
            if line:
                out.append((f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}",
                            line))
    return out


def _problem(line: str, root: Any) -> str | None:
    """Why `accelfleet <line>` names nothing real, or None."""
    words = re.split(r"\s+", line.replace("...", " ").strip())
    cmd: Any = root
    for word in words:
        if word.startswith("-"):
            break
        if hasattr(cmd, "commands"):
            sub = cmd.commands.get(word)
            if sub is None:
                if re.fullmatch(r"[a-z][a-z-]*", word):
                    return f"no command {word!r} under {cmd.name!r} (has {sorted(cmd.commands)})"
                break  # an argument or a placeholder (STACK, stacks/..., {cloud})
            cmd = sub
        else:
            break
    options = {"--help", *(opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts))}
    for word in words:
        if word.startswith("--") and len(word) > 2:
            name = re.split(r"[=\[\]|,)]", word)[0]
            if name not in options:
                return f"{cmd.name!r} takes no {name} (takes {sorted(options)})"
    return None


def test_the_mentions_are_found() -> None:
    lines = [line for _, line in _mentions()]
    assert len(lines) > 60  # the docs, the hints, the help texts
    assert any(line.startswith("gate run") for line in lines)


@pytest.mark.parametrize("where,line", _mentions(), ids=lambda v: str(v)[:60])
def test_every_named_command_and_option_exists(where: str, line: str) -> None:
    from cli.main import app

    root = typer.main.get_command(app)
    assert hasattr(root, "commands")
    problem = _problem(line, root)
    assert problem is None, f"{where}: `accelfleet {line}`: {problem}"


def test_a_made_up_option_is_caught() -> None:
    from cli.main import app

    root = typer.main.get_command(app)
    assert hasattr(root, "commands")
    assert _problem("plan --inventory FILE", root) is not None
    assert _problem("gate frobnicate", root) is not None
    assert _problem("plan stacks/Pulumi.prod.yaml --json --out plan.json", root) is None
