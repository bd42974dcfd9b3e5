"""`python -m cli` runs the accelfleet command."""

from cli.main import run

run()
