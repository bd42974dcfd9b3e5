"""The validated fleet, handed from the offline plan to the stack program it runs.

`run_plan` validates the stack file's fleet before any Pulumi code (a bad stack exits 2 with
its SpecError); the program (`stacks/__main__.py`) then reads the same fleet from the Pulumi
config. `handed` lets the plan give the program the fleet it already validated, so a plan
validates once; under `pulumi up` nothing is handed and the program validates its config.

    >>> with handed(raw, fleet):   # raw: the config object the program will read
    ...     run_the_program()      # program_fleet(raw, source) returns `fleet`
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from fleet.model import Fleet

_HANDED: ContextVar[tuple[Any, Fleet] | None] = ContextVar("accelfleet_handed_fleet",
                                                           default=None)


@contextmanager
def handed(raw: Any, fleet: Fleet) -> Iterator[None]:
    """While inside, `program_fleet(raw, ...)` returns `fleet` (validated from `raw`)."""
    token = _HANDED.set((raw, fleet))
    try:
        yield
    finally:
        _HANDED.reset(token)


def was_handed(raw: Any) -> bool:
    """Whether the offline plan handed the fleet of exactly this config (it checked it)."""
    given = _HANDED.get()
    return given is not None and given[0] == raw


def program_fleet(raw: Any, *, source: str) -> Fleet:
    """The program's validated fleet: the one handed for exactly this config, else
    `validate_fleet(raw)` (raises SpecError)."""
    given = _HANDED.get()
    if given is not None and given[0] == raw:
        return given[1]
    from fleet.rules.validate import validate_fleet

    return validate_fleet(raw, source=source)
