"""Arguments several commands share.

The stack convention, the same on every command that reads a stack: `--stack FILE` names it;
commands with no other positional argument also take it as `STACK_FILE` (the two are one
choice: give it once). Which stack when none is named: one rule for reads and writes
(fleet/stack/rule.py, docs/stack.md), stated by every stack help here. Pool edits (`pool
request/resize/remove`) never default to the example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fleet.stack.rule import RULE

# Every stack argument's and option's help ends with the one rule (fleet/stack/rule.py).
STACK_RULE = f"({RULE})."
StackArg = Annotated[Path | None, typer.Argument(
    metavar="STACK_FILE",
    help=f"A `stacks/Pulumi.<stack>.yaml` file {STACK_RULE}", show_default=False)]
StackOpt = Annotated[Path | None, typer.Option(
    "--stack", metavar="FILE", show_default=False,
    help=f"The stack file, named as an option: the same as STACK_FILE {STACK_RULE}")]


def one_stack(positional: Path | None, option: Path | None) -> Path | None:
    """The stack a command was given, as STACK_FILE or `--stack FILE`; both at once only when
    they name the same file."""
    if positional is not None and option is not None and positional != option:
        from fleet.errors import InputError

        raise InputError(f"two stacks given: {positional} and --stack {option}",
                         hint="name the stack once, as STACK_FILE or with --stack FILE")
    return positional if positional is not None else option
