"""`accelfleet plan`: the offline plan (filled in by the Google Cloud / offline plan work)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def plan(
    stack_file: Annotated[Path | None, typer.Argument(help="A stacks/Pulumi.<stack>.yaml file.")]
    = None,
) -> None:
    """Offline plan of a stack (not built yet)."""
    from fleet.errors import SetupError

    raise SetupError("`accelfleet plan` is not built yet", hint="see issue 3")
