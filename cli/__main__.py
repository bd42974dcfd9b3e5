"""`python -m cli` runs the accelfleet command."""

from cli.entry import run

run()
