"""Turning accelfleet errors into words and exit codes, inside a command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import typer

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def reported() -> Iterator[None]:
    """Print an AccelfleetError (message and hint, no traceback) and exit with its code."""
    from fleet.errors import AccelfleetError

    try:
        yield
    except AccelfleetError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None


def command(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of `reported()` for command functions."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with reported():
            return fn(*args, **kwargs)

    return wrapper
