"""Small output helpers shared by the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=160)


def print_json(data: Any) -> None:
    import typer

    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def save(path: Path, text: str) -> str | None:
    """Write `text` to `path`, creating its parent directories; the problem in words (to
    report after the results are shown, so that nothing measured is lost), or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None
