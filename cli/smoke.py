"""`accelfleet smoke`: prove accelerators perform, chip by chip.

torch and jax are imported only inside the command, by the chosen backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import _complete
from cli._args import StackOpt, one_stack
from cli._errors import command
from cli._terminal import echo, echo_json, literal
from cli._typer import App
from cli.smoke_options import (
    ContextOpt,
    HistoryOpt,
    HtmlOpt,
    KubeconfigOpt,
    MetricsOpt,
    NoHistoryOpt,
    OutputsOpt,
    StackArg,
    SustainOpt,
    check_outputs,
)
from fleet import smoke_defaults as SD
from fleet.labels import SMOKE_FAILED, SMOKE_KEY

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID
    from rich.table import Table

    from smoke.cluster.quarantine import Cap
    from smoke.cluster.run import RunReport
    from smoke.probes.results import HostReport
    from smoke.session import SmokeRequest, SmokeResult

app = App(rich_markup_mode="markdown",
                  help="Prove accelerators perform: run smoke probes here (local) or on every "
                  "node of a deployed fleet (run, render); act on the verdict (release, "
                  "status), show a saved run again (report) and follow each node over time "
                  "(history).", no_args_is_help=True)


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
        metavar="|".join(BackendOpt),
        help="PyTorch (GPU, CPU) or JAX (TPU, GPU, CPU); auto picks torch when installed.")]
        = BackendOpt.auto,
    tier: Annotated[int, typer.Option(min=0, max=SD.TOP_TIER, metavar="N", help="Run tiers 0 "
                                      "up to this one: 0 inventory, 1 known answer, 2 "
                                      "performance, 3 all-reduce.")]
        = SD.LOCAL_TIER,
    expect: Annotated[str | None, typer.Option(
        metavar="ACCELERATOR",
        help="What this host should be, e.g. a3-highgpu-8g, p5.48xlarge, 'v5p 2x2x1', "
        "'tpu7x 2x2x1': sets the device count, memory and peaks to judge against.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the host's JSON document.")]
        = False,
    junit: Annotated[Path | None, typer.Option(
        metavar="FILE",
        help="Also write JUnit XML here (one test case per device and probe).")] = None,
    min_tflops: Annotated[float | None, typer.Option(
        min=0, metavar="TFLOPS",
        help="Fail any device whose bf16 matmul is below this many TFLOP/s.")] = None,
    min_gbps: Annotated[float | None, typer.Option(
        min=0, metavar="GBPS",
        help="Fail any device whose memory bandwidth is below this many GB/s.")] = None,
    sustain_s: SustainOpt = None,
    html: HtmlOpt = None,
    metrics: MetricsOpt = None,
    history: HistoryOpt = None,
    no_history: NoHistoryOpt = False,
) -> None:
    """Run the smoke probes on this machine's devices and judge each device.

    Exit 0 when nothing failed (warnings are fine), 1 when a probe failed (each failure is
    named: device and probe), 2 for bad input or a missing backend package.
    """
    from cli._output import writable
    from cli.smoke_options import show_drift
    from fleet.errors import CheckFailed, InputError
    from smoke import run_local
    from smoke.reports.files import keep_host

    writable(junit)
    check_outputs(html, metrics, history, no_history)
    with _progress_bar() as bar:
        report = run_local(backend=backend.value, tier=tier, expect=expect,
                           min_tflops=min_tflops, min_gbps=min_gbps, progress=bar,
                           sustain_s=sustain_s)
    _show_host(report, as_json)
    kept = keep_host(report, junit=junit, html=html, metrics=metrics, history=history,
                     record_history=not no_history)
    asked = [p for p in (junit, html, metrics) if p is not None]
    for path in (p for p in kept.written if p in asked):  # said where --json keeps stdout clean
        echo(f"wrote {path}", err=as_json)
    show_drift(kept.drifted)
    unsaved = "; ".join(kept.problems) or None
    if not report.ok:
        names = ", ".join(f"{r.device} {r.probe}" for r in report.failures)
        raise CheckFailed(f"{len(report.failures)} smoke check(s) failed on {report.host}: "
                          f"{names}" + (f"; {unsaved}" if unsaved else ""),
                          hint="see each failure's reason above; rerun one tier "
                          "with --tier to narrow it down")
    if unsaved:
        raise InputError(unsaved, hint="the results are printed above; choose writable "
                         "paths for --junit, --html, --metrics and --history next time")


@contextmanager
def _progress_bar() -> Iterator[_Bar]:
    """A progress bar on stderr while the probes run (none when stderr is no terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from cli._terminal import safe_console

    err = safe_console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as bar:
        yield _Bar(bar)


def _show_host(report: HostReport, as_json: bool) -> None:
    """The host's JSON document, or its table and summary."""
    if as_json:
        echo_json(report.to_json())
        return
    from cli._output import console
    from smoke.reports.text import summary, table

    out = console()
    out.print(table(report, out.width))
    out.print(summary(report), markup=False)  # reasons are text, never markup


class LiveTable:
    """The run on stderr: one row per pool (state, pods done, the latest detail), live while
    the pods run when stderr is a terminal."""

    def __init__(self, console: Console) -> None:
        self._rows: dict[str, tuple[str, int, int, str]] = {}
        self._console = console
        self._live: Live | None = None

    def __enter__(self) -> LiveTable:
        if self._console.is_terminal:
            from rich.live import Live

            self._live = Live(self, console=self._console, transient=False,
                              refresh_per_second=4, redirect_stdout=False,
                              redirect_stderr=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def update(self, pool: str, state: str, done: int, total: int, detail: str) -> None:
        self._rows[pool] = (state, done, total, detail)

    def __rich__(self) -> Table:
        from rich.table import Table

        colour = {"done": "green", "failed": "bold red", "running": "cyan", "pending": "yellow",
                  "skipped": "dim"}
        t = Table(title="accelfleet smoke run", expand=False)
        for col in ("pool", "state", "pods", "detail"):
            t.add_column(col, overflow="fold")
        for pool, (state, done, total, detail) in sorted(self._rows.items()):
            c = colour.get(state, "white")
            t.add_row(literal(pool), f"[{c}]{literal(state)}[/{c}]", f"{done}/{total}",
                      literal(detail))
        return t


def _images(values: list[str]) -> dict[str, str]:
    from smoke.cluster.access import key_values

    return key_values(values, "--image", "BACKEND=REF",
                      "torch=nvcr.io/nvidia/pytorch:25.01-py3@sha256:...")


def _pool_names(value: str | None) -> list[str] | None:
    return None if not value else [p.strip() for p in value.split(",") if p.strip()]


PoolsOpt = Annotated[str | None, typer.Option(
    "--pools", metavar="POOL,...", help="Only these pools (comma-separated names).",
    show_default=False, autocompletion=_complete.pool_list)]
TierOpt = Annotated[int | None, typer.Option(
    "--tier", min=0, max=SD.TOP_TIER, metavar="N", help="Run tiers 0 up to this one on every node "
    "(default: the stack's smoke.max_tier): 0 inventory, 1 known answer, 2 performance, "
    "3 fabric across nodes.", show_default=False)]
TimeoutOpt = Annotated[int | None, typer.Option(
    "--timeout-s", min=5, metavar="SECONDS", help="Per pool: how long its pods may take to "
    "be scheduled and finish (default: the stack's smoke.timeout_s).", show_default=False)]
ImageOpt = Annotated[list[str] | None, typer.Option(
    "--image", metavar="KEY=REF", help="Run the agent in image REF instead of the pinned one "
    "for KEY (torch, torch-efa or jax). Repeatable.", show_default=False)]


def _request(stack_file: Path | None, outputs: Path | None, pools: str | None,
             tier: int | None, timeout_s: int | None, image: list[str] | None,
             sustain_s: float | None, **more: Any) -> SmokeRequest:
    """The run the options ask for; `more`: the rest of SmokeRequest's fields."""
    from smoke.session import SmokeRequest

    return SmokeRequest(stack_file=stack_file, outputs=outputs, pools=_pool_names(pools),
                        tier=tier, timeout_s=timeout_s, images=_images(image or []),
                        sustain_s=sustain_s, **more)


@app.command()
@command
def render(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    outputs: OutputsOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="Write one YAML file per cluster into this directory "
        "instead of printing.", show_default=False)] = None,
    pools: PoolsOpt = None,
    tier: TierOpt = None,
    timeout_s: TimeoutOpt = None,
    image: ImageOpt = None,
    sustain_s: SustainOpt = None,
) -> None:
    """Print (or write) the exact manifests `smoke run` would submit, with no cluster: for
    review and for CI. Exit 0, or 2 for a bad stack or option."""
    stack_file = one_stack(stack_file, stack)
    from cli._output import writable
    from smoke.cluster.workload import write_manifests
    from smoke.session import plan_run

    writable(out, directory=True)
    run, source, _ = plan_run(_request(stack_file, outputs, pools, tier, timeout_s, image,
                                       sustain_s), run_id="render")
    read = source.read(outputs)
    if out is not None:
        paths = write_manifests(run, out)
        for w in run.pools:
            state = f"skipped: {w.skipped}" if w.skipped else f"{w.kind} {w.name}, {w.pods} pods"
            echo(f"{w.cluster or '-'}/{w.pool.name}: {state}")
        echo(f"wrote {len(paths)} file(s) to {out} from {read}")
        return
    import tempfile

    echo(f"# accelfleet smoke render: from {literal(read)}")  # a YAML comment: still YAML
    with tempfile.TemporaryDirectory() as tmp:
        for path in write_manifests(run, Path(tmp)):
            echo(path.read_text(encoding="utf-8"), nl=False)


@app.command()
@command
def run(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    outputs: OutputsOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    pools: PoolsOpt = None,
    tier: TierOpt = None,
    timeout_s: TimeoutOpt = None,
    image: ImageOpt = None,
    sustain_s: SustainOpt = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the run document (per pool, node, device) as JSON.")] = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", metavar="FILE", help="Write JUnit XML here: a testsuite per pool, a "
        "testcase per node and probe.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="Keep the run here: run.json, junit.xml and the "
        "submitted manifests.",
        show_default=False)] = None,
    quarantine: Annotated[bool, typer.Option(
        "--quarantine", help=f"Cordon, taint ({SMOKE_KEY}={SMOKE_FAILED}:NoSchedule), label "
        "and annotate every node that failed, with an Event saying why; a TPU slice goes "
        "whole. Never on warn or skipped.")] = False,
    max_quarantine: Annotated[str | None, typer.Option(
        "--max-quarantine", metavar="N|P%", help="At most this many nodes per pool (slices "
        "for TPU pools), counting those quarantined already; default 10% of the pool, at "
        "least one. Past that cap, no more nodes get quarantined and the run exits 1.",
        show_default=False)] = None,
    html: HtmlOpt = None,
    metrics: MetricsOpt = None,
    history: HistoryOpt = None,
    no_history: NoHistoryOpt = False,
) -> None:
    """Run the smoke probes on every node the stack provisioned, in parallel on every cluster
    and pool, and judge every node, device and fabric.

    Exit 0 when nothing failed (warnings are fine) and at least one node was tested; 1 when
    something failed (each failure is named: pool, node, device, probe), nothing was tested,
    or a pool's quarantine cap was reached; 2 for bad input
    or a cluster that cannot be reached; 130 when interrupted (every object the run created
    is deleted first).
    """
    stack_file = one_stack(stack_file, stack)
    from cli._output import writable
    from cli._terminal import safe_console
    from smoke.cluster.access import parse_contexts
    from smoke.session import run_smoke

    reads = (("the stack file", stack_file), ("the outputs file", outputs),
             ("the kubeconfig", kubeconfig))
    writable(junit, reads=reads)
    writable(out, directory=True)
    check_outputs(html, metrics, history, no_history, reads)
    request = _request(stack_file, outputs, pools, tier, timeout_s, image, sustain_s,
                       quarantine=_cap(quarantine, max_quarantine), kubeconfig=kubeconfig,
                       contexts=parse_contexts(context or []), junit=junit, out=out,
                       html=html, metrics=metrics, history=history,
                       record_history=not no_history)
    result = run_smoke(request, progress=LiveTable(safe_console(stderr=True)))
    show_run(result, as_json=as_json)
    _exit_as(result)


def show_run(result: SmokeResult, *, as_json: bool = False) -> None:
    """The run's table and summary (or its JSON document), what quarantine did, and what the
    history says drifted."""
    from cli.smoke_options import show_drift

    lines = result.quarantine.lines() if result.quarantine else []
    if result.read:
        lines.append(f"read {result.read}")
    if as_json:
        echo_json(result.to_json())
        for line in lines:
            echo(line, err=True)
    else:
        from cli._output import console
        from smoke.reports.text import run_summary, run_table

        c = console()
        c.print(run_table(result.report))
        c.print(run_summary(result.report), markup=False)  # pod reasons are text, not markup
        for line in lines:
            c.print(line, markup=False)
    show_drift(result.drifted)


def exit_if_interrupted(report: RunReport) -> None:
    """Exit 130 when the run was interrupted, saying that what it created is gone (or what
    could not be deleted)."""
    if report.cancelled:
        echo(f"interrupted: run {report.run_id} stopped; every object it created was "
             "deleted" if not report.cleanup_errors else "; ".join(report.cleanup_errors),
             err=True)
        from fleet.errors import EXIT_INTERRUPTED

        raise typer.Exit(EXIT_INTERRUPTED)


def _exit_as(result: SmokeResult) -> None:
    """Exit 130 when interrupted, 1 when something failed, 2 when a file was not written."""
    from fleet.errors import CheckFailed, InputError

    report = result.report
    exit_if_interrupted(report)
    if not result.ok:
        lines = result.problems()
        raise CheckFailed(f"{len(lines)} smoke check(s) failed in run {report.run_id}:\n  "
                          + "\n  ".join(lines[:50]), hint="read each reason above; rerun one "
                          "pool with --pools, or lower --tier to narrow it down")
    if result.unsaved:
        raise InputError("; ".join(result.unsaved), hint="the results are printed above; "
                         "choose a writable path for --junit / --out next time")


def _cap(quarantine: bool, max_quarantine: str | None) -> Cap | None:
    from fleet.errors import InputError
    from smoke.cluster.quarantine import DEFAULT_CAP, Cap

    if max_quarantine is not None and not quarantine:
        raise InputError("--max-quarantine only applies with --quarantine",
                         hint="add --quarantine, or leave --max-quarantine out")
    return Cap.parse(max_quarantine or DEFAULT_CAP) if quarantine else None


# The commands that act on a run's verdict and read the history live beside this module.
from cli import smoke_history, smoke_nccl, smoke_nodes, smoke_report  # noqa: E402

app.command()(smoke_nodes.release)
app.command()(smoke_nodes.status)
app.command()(smoke_history.history)
app.command("nccl-log")(smoke_nccl.nccl_log)
app.command()(smoke_report.report)
