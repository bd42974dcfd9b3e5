"""Every error accelfleet raises on purpose, in one tree.

    AccelfleetError                 base: a message, a hint (what to do next) and an exit code
    ├── InputError          exit 2  the user's input is wrong; fixing the input fixes it
    │   ├── StackFileError          a stack file is missing, unreadable or not YAML
    │   ├── SpecError               a fleet spec breaks one or more rules (.problems)
    │   ├── RequestRefused          a pool request would break the fleet (.problems, what works)
    │   └── UnknownNameError        a name the catalog does not know (.suggestions)
    ├── CatalogError        exit 2  accelfleet's own catalog data is inconsistent (a bug: report it)
    ├── SetupError          exit 2  something this run needs is not installed or reachable
    └── CheckFailed         exit 1  a check ran and its verdict is fail

The CLI prints `str(error)` (message, then the hint) and exits with `error.exit_code`; it never
prints a traceback for these. `stacks/__main__.py` turns them into `pulumi.RunError`.
Anything else that escapes a command is a bug in accelfleet, never a failed check: the CLI says
so in one line, names where to report it, and exits EXIT_INTERNAL (3); the traceback is shown
only with ACCELFLEET_DEBUG=1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3  # an unexpected error: a bug in accelfleet
EXIT_INTERRUPTED = 130
MAX_WHERE_CHARS = 200  # where a problem is, as a message names it
MAX_MESSAGE_CHARS = 1_000  # a problem's message or fix
REPORT_URL = "https://github.com/accelfleet/accelfleet/issues"


class AccelfleetError(Exception):
    """Base of every deliberate accelfleet error."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class InputError(AccelfleetError):
    """The user's input is wrong."""


class StackFileError(InputError):
    """A stack file cannot be found, read or parsed."""


class Where(str):
    """Where a problem is: the text a person reads ("pools 'h100'.zones[0]") that also keeps its
    parts, so that `fleet validate --json` reads the section, the item (index and/or name) and
    the field off it instead of parsing the text back. `steps` is the field as it was built
    (`dot` adds a name, `item` an index). A plain `str` where has no parts."""

    section: str
    position: int | None  # the item's index in its list
    name: str | None
    field: str | None
    steps: tuple[str | int, ...]

    def __new__(cls, section: str, *, position: int | None = None, name: str | None = None,
                field: str | None = None, steps: tuple[str | int, ...] | None = None) -> Where:
        text = section
        if position is not None:
            text += f"[{position}]"
        if name is not None:
            text += f" {name!r}"
        if field:
            text += f".{field}"
        self = super().__new__(cls, text)
        self.section, self.position, self.name, self.field = section, position, name, field or None
        self.steps = steps if steps is not None else ((field,) if field else ())
        return self

    def dot(self, path: str) -> Where:
        """A field further in: `.dot("zones")`, `.dot("capacity.block")`."""
        field = f"{self.field}.{path}" if self.field else path
        return Where(self.section, position=self.position, name=self.name, field=field,
                     steps=(*self.steps, path))

    def item(self, index: int) -> Where:
        """Item `index` of this list: `pools` -> `pools[2]`, `...zones` -> `...zones[2]`."""
        if self.field is None and self.position is None and self.name is None:
            return Where(self.section, position=index)
        field = f"{self.field or ''}[{index}]"
        return Where(self.section, position=self.position, name=self.name, field=field,
                     steps=(*self.steps, index))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_where, (self.section, self.position, self.name, self.field, self.steps))


def _where(section: str, position: int | None, name: str | None, field: str | None,
           steps: tuple[str | int, ...]) -> Where:
    return Where(section, position=position, name=name, field=field, steps=steps)


@dataclass(frozen=True)
class Problem:
    """One broken rule in a fleet spec: where, what, what is accepted, and the fix."""

    where: str
    message: str
    hint: str = ""
    accepted: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        # A problem quotes what the user wrote: a 1 MB value never reaches the screen whole.
        for name, limit in (("where", MAX_WHERE_CHARS), ("message", MAX_MESSAGE_CHARS),
                            ("hint", MAX_MESSAGE_CHARS)):
            text = getattr(self, name)
            if len(text) > limit:
                object.__setattr__(self, name, text[:limit - 3] + "...")

    def render(self) -> str:
        text = f"{self.where}: {self.message}"
        if self.accepted:
            text += f" (accepted: {', '.join(self.accepted)})"
        if self.hint:
            text += f"\n    fix: {self.hint}"
        return text


class Problems:
    """The one sink every rule reports to: `add` one problem (where, what, the fix, what is
    accepted); `problems` lists them in the order they were found."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, where: str, message: str, hint: str = "",
            accepted: tuple[str, ...] = ()) -> None:
        self.problems.append(Problem(where, message, hint, accepted))


class SpecError(InputError):
    """A fleet spec breaks one or more rules; `.problems` lists each of them."""

    def __init__(self, problems: Sequence[Problem], *, source: str = "fleet spec",
                 partial: Any = None, records: Sequence[dict[str, Any]] = ()) -> None:
        self.problems = tuple(problems)
        # What could still be worked out: the fleet as far as it resolved (`fleet.model.Fleet`,
        # for team totals; None when the spec did not parse), and each problem as a record
        # (where, pool, field, value, message, accepted, fix) for `fleet validate --json`.
        self.partial = partial
        self.records = tuple(records)
        count = len(self.problems)
        lines = [f"{source}: {count} problem{'s' if count != 1 else ''} found"]
        lines += [f"  - {p.render()}" for p in self.problems]
        super().__init__(
            "\n".join(lines),
            hint="edit the stack file and run `accelfleet fleet validate` again",
        )


class RequestRefused(InputError):
    """A pool request, resize or removal that the fleet's rules refuse: each problem, and what
    would work instead (`alternatives`, each checked against every rule). Nothing was written."""

    def __init__(self, what: str, problems: Sequence[Problem], *,
                 alternatives: Sequence[str] = (), hint: str = "") -> None:
        self.problems = tuple(problems)
        self.alternatives = tuple(alternatives)
        lines = [f"{what} refused (the stack file is unchanged):"]
        lines += [f"  - {p.render()}" for p in self.problems]
        if self.alternatives:
            hint = "what would work instead:\n" + "\n".join(
                f"    - {a}" for a in self.alternatives) + (f"\n  {hint}" if hint else "")
        super().__init__("\n".join(lines), hint=hint or "fix what each problem names and "
                         "run the command again")


class UnknownNameError(InputError):
    """A name that the catalog does not know."""

    def __init__(
        self,
        what: str,
        name: str,
        known: Iterable[str],
        *,
        hint: str = "",
        suggestions: Sequence[str] | None = None,
    ) -> None:
        self.name = name
        self.suggestions = tuple(suggest(name, known) if suggestions is None else suggestions)
        message = f"unknown {what} {name!r}"
        if self.suggestions:
            message += f"; did you mean {', '.join(repr(s) for s in self.suggestions)}?"
        super().__init__(
            message, hint=hint or "run `accelfleet catalog list` to see every known name"
        )


class CatalogError(AccelfleetError):
    """accelfleet's own catalog data is inconsistent."""

    def __init__(self, message: str) -> None:
        super().__init__(
            message,
            hint="this is a bug in accelfleet's catalog data files; please report it",
        )


class SetupError(AccelfleetError):
    """Something this run needs is not installed or not reachable."""


class CheckFailed(AccelfleetError):
    """A check ran and failed."""

    exit_code = EXIT_CHECK_FAILED


def suggest(name: str, known: Iterable[str], *, limit: int = 3) -> list[str]:
    """The known names nearest to `name`, best first (case-insensitive)."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    hits = get_close_matches(name.lower(), list(by_lower), n=limit, cutoff=0.5)
    if not hits:
        hits = [k for k in by_lower if name.lower() in k or (k and k in name.lower())][:limit]
    return [by_lower[h] for h in hits]
