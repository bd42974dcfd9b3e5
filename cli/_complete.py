"""What the shell completes for an option's value: the choices it takes (`--format`,
`--capacity`; `completion`'s shells are cli.main's), or the names the stack holds (teams,
pools); never file names for a value that is no file. Each is imported only when the shell
asks (`accelfleet --help` loads none of them), and a completion never fails aloud: a stack it
cannot read completes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer


def _starting(values: Iterable[str], incomplete: str) -> list[str]:
    return [v for v in values if v.startswith(incomplete)]


def formats(incomplete: str) -> list[str]:
    from cli.plan_diff import FORMATS

    return _starting(FORMATS, incomplete)


def capacities(incomplete: str) -> list[str]:
    from fleet.requests.request import CAPACITIES

    return _starting(CAPACITIES, incomplete)


def teams(ctx: typer.Context, incomplete: str) -> list[str]:
    return _starting(_names(ctx, "teams"), incomplete)


def pools(ctx: typer.Context, incomplete: str) -> list[str]:
    return _starting(_names(ctx, "pools"), incomplete)


def pool_list(ctx: typer.Context, incomplete: str) -> list[str]:
    """`--pools a,b,c`: the names after the last comma, each with what comes before it."""
    done, _, last = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    taken = set(done.split(",")) if done else set()
    return [prefix + n for n in _starting(_names(ctx, "pools"), last) if n not in taken]


def _names(ctx: typer.Context, key: str) -> list[str]:
    """The `name` of each entry of the stack's `key` list (the stack the command would read:
    `--stack`, STACK_FILE, else the one chosen by default)."""
    from pathlib import Path

    given: Any = ctx.params.get("stack") or ctx.params.get("stack_file")
    try:
        from fleet.stack.choice import stack_to_read
        from fleet.stack.read import read_stack_file

        raw = read_stack_file(stack_to_read(Path(given) if given else None))
    except Exception:  # a shell's completion request never shows an error
        return []
    items = raw.get(key)
    if not isinstance(items, list):
        return []
    return [i["name"] for i in items if isinstance(i, dict) and isinstance(i.get("name"), str)]
