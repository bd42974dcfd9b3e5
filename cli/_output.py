"""Small output helpers shared by the commands."""

from __future__ import annotations

import json
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
