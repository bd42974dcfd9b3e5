"""`accelfleet smoke`: run smoke probes (filled in by the smoke work)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Prove accelerators perform: run smoke probes.", no_args_is_help=True)
