"""accelfleet's Typer app, command and group classes: help rows that show no value type where
it says nothing.

Typer writes a value type beside every parameter (`--json <bool>`, `NODE <list[str]>`); a flag
takes no value and an argument given a metavar (`NODE`) already says what it takes, so their
help rows show none. This is presentation only, done through Typer's own `cls=` hook (the
command and group classes `App` passes to `command()`, `callback()` and `Typer()`): Typer's
classes themselves are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

F = TypeVar("F", bound=Callable[..., Any])


class _FlagOption(TyperOption):
    """An option that shows no value type when it is a flag (no metavar given)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return super().display_type_rich(ctx)


class _MetavarArgument(TyperArgument):
    """An argument that shows its metavar alone (`NODE`), not its Python type beside it; a
    hidden one (caught only to say how to write the command) is left out of the usage line
    too."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.metavar is not None:
            return None
        return super().display_type_rich(ctx)

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        if self.hidden:
            return []
        return super().get_usage_pieces(ctx)  # type: ignore[no-any-return]


def _quiet(param: Any) -> Any:
    """`param` as the subclass above that shows its type only where it says something (the
    same object: only its class changes, to one that adds no state)."""
    if type(param) is TyperOption:
        param.__class__ = _FlagOption
    elif type(param) is TyperArgument:
        param.__class__ = _MetavarArgument
    return param


class Command(TyperCommand):
    """A command whose help rows show no type beside a flag or a metavar'd argument."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = [_quiet(p) for p in self.params]

    def get_help_option(self, ctx: Any) -> TyperOption | None:
        return _quiet(super().get_help_option(ctx))  # type: ignore[no-any-return]


class Group(TyperGroup):
    """A group (`accelfleet`, `accelfleet smoke`, ...) whose help rows read as `Command`'s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = [_quiet(p) for p in self.params]

    def get_help_option(self, ctx: Any) -> TyperOption | None:
        return _quiet(super().get_help_option(ctx))  # type: ignore[no-any-return]


class App(typer.Typer):
    """`typer.Typer` whose commands are `Command`s and whose groups are `Group`s (unless a
    caller names another class)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        super().__init__(**kwargs)

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None,
                **kwargs: Any) -> Callable[[F], F]:
        return super().command(name, cls=cls or Command, **kwargs)

    def callback(self, *, cls: type[TyperGroup] | None = None,
                 **kwargs: Any) -> Callable[[F], F]:
        return super().callback(cls=cls or Group, **kwargs)
