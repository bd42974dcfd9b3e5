"""Arguments several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StackArg = Annotated[Path | None, typer.Argument(
    metavar="STACK_FILE",
    help="A `stacks/Pulumi.<stack>.yaml` file (default: the example stack).",
    show_default=False)]
