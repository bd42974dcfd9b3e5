"""`accelfleet smoke`: prove accelerators perform, chip by chip.

torch and jax are imported only inside the command, by the chosen backend.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._errors import command

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

app = typer.Typer(help="Prove accelerators perform: run smoke probes.", no_args_is_help=True)


class BackendOpt(StrEnum):
    auto = "auto"
    torch = "torch"
    jax = "jax"


class _Bar:
    """A Rich progress bar on stderr while the probes run."""

    def __init__(self, progress: RichProgress) -> None:
        self._p = progress
        self._task: TaskID | None = None

    def start(self, total: int) -> None:
        self._task = self._p.add_task("probes", total=total)

    def step(self, description: str) -> None:
        if self._task is None:
            return
        task = self._p.tasks[self._task]
        if task.description != "probes":
            self._p.advance(self._task)
        self._p.update(self._task, description=description)


@app.command()
@command
def local(
    backend: Annotated[BackendOpt, typer.Option(
        help="PyTorch (GPU, CPU) or JAX (TPU, GPU, CPU); auto picks torch when installed.")]
        = BackendOpt.auto,
    tier: Annotated[int, typer.Option(min=0, max=3, help="Run tiers 0 up to this one: "
                                      "0 inventory, 1 known answer, 2 performance, 3 all-reduce.")]
        = 3,
    expect: Annotated[str | None, typer.Option(
        help="What this host should be, e.g. a3-highgpu-8g, p5.48xlarge, 'v5p 2x2x1', "
        "'tpu7x 2x2x1': sets the device count, memory and peaks to judge against.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the host's JSON document.")]
        = False,
    junit: Annotated[Path | None, typer.Option(
        help="Also write JUnit XML here (one test case per device and probe).")] = None,
    min_tflops: Annotated[float | None, typer.Option(
        min=0, help="Fail any device whose bf16 matmul is below this many TFLOP/s.")] = None,
    min_gbps: Annotated[float | None, typer.Option(
        min=0, help="Fail any device whose memory bandwidth is below this many GB/s.")] = None,
) -> None:
    """Run the smoke probes on this machine's devices and judge each device.

    Exit 0 when nothing failed (warnings are fine), 1 when a probe failed (each failure is
    named: device and probe), 2 for bad input or a missing backend package.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from fleet.errors import CheckFailed
    from smoke import run_local
    from smoke.report import summary, table, write_junit

    err = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as bar:
        report = run_local(backend=backend.value, tier=tier, expect=expect,
                           min_tflops=min_tflops, min_gbps=min_gbps, progress=_Bar(bar))
    if junit is not None:
        write_junit(report, junit)
    if as_json:
        typer.echo(report.to_json())
    else:
        from cli._output import console

        out = console()
        out.print(table(report))
        out.print(summary(report))
    if not report.ok:
        names = ", ".join(f"{r.device} {r.probe}" for r in report.failures)
        raise CheckFailed(f"{len(report.failures)} smoke check(s) failed on {report.host}: "
                          f"{names}", hint="see each failure's reason above; rerun one tier "
                          "with --tier to narrow it down")
