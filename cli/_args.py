"""Arguments several commands share.

The stack convention, the same on every command that reads a stack: `--stack FILE` names it;
commands with no other positional argument also take it as `STACK_FILE` (the two are one
choice: give it once). Pool edits (`pool request/resize/remove`) never default to the example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StackArg = Annotated[Path | None, typer.Argument(
    metavar="STACK_FILE",
    help="A `stacks/Pulumi.<stack>.yaml` file (default: $ACCELFLEET_STACK, $PULUMI_STACK, "
    "the selected Pulumi stack, the only non-example stack, else the example).",
    show_default=False)]
StackOpt = Annotated[Path | None, typer.Option(
    "--stack", metavar="FILE", show_default=False,
    help="The stack file, named as an option: the same as STACK_FILE (every command that reads "
    "a stack takes `--stack FILE`).")]


def one_stack(positional: Path | None, option: Path | None) -> Path | None:
    """The stack a command was given, as STACK_FILE or `--stack FILE`; both at once only when
    they name the same file."""
    if positional is not None and option is not None and positional != option:
        from fleet.errors import InputError

        raise InputError(f"two stacks given: {positional} and --stack {option}",
                         hint="name the stack once, as STACK_FILE or with --stack FILE")
    return positional if positional is not None else option
