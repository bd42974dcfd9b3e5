"""Options the `accelfleet smoke` commands share, the check of their output paths before any
work, and the words for what the history says drifted (what a run keeps afterwards is
`smoke.reports.files`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._args import STACK_RULE
from cli._terminal import echo
from fleet import smoke_defaults as SD

if TYPE_CHECKING:
    from collections.abc import Sequence

    from smoke.history import Trend

StackArg = Annotated[Path | None, typer.Argument(
    metavar="STACK_FILE",
    help="A `stacks/Pulumi.<stack>.yaml` file; none with --outputs alone (the outputs' "
    f"inventory) {STACK_RULE}", show_default=False)]
OutputsOpt = Annotated[Path | None, typer.Option(
    "--outputs", metavar="FILE", help="A saved `pulumi stack output --json --show-secrets`: "
    "the deployed inventory and the clusters' kubeconfigs.", show_default=False)]
KubeconfigOpt = Annotated[Path | None, typer.Option(
    "--kubeconfig", metavar="FILE", help="Kubeconfig to read contexts from (default: "
    "$KUBECONFIG or ~/.kube/config).", show_default=False)]
ContextOpt = Annotated[list[str] | None, typer.Option(
    "--context", metavar="CLUSTER=CTX", help="Reach cluster CLUSTER through kubeconfig "
    "context CTX. Repeatable.", show_default=False)]
HtmlOpt = Annotated[Path | None, typer.Option(
    "--html", metavar="FILE", help="Write the report as one self-contained HTML file (charts "
    "of every device against its peak and floor; opens with no network).",
    show_default=False)]
MetricsOpt = Annotated[Path | None, typer.Option(
    "--metrics", metavar="FILE", help="Write this run as OpenMetrics text, for "
    "node-exporter's textfile collector or a Pushgateway (written atomically).",
    show_default=False)]
HistoryOpt = Annotated[Path | None, typer.Option(
    "--history", metavar="FILE", help="The SQLite smoke history to append this run to "
    "(default: .accelfleet/history.sqlite, or $ACCELFLEET_HISTORY).", show_default=False)]
SustainOpt = Annotated[float | None, typer.Option(
    "--sustain-s", min=0, max=SD.MAX_SUSTAIN_S, metavar="SECONDS", help="Tier 2 and up: load "
    "every device of a host at once this long, sample GPU clocks, power, heat and throttling, "
    "and judge each device's sustained TFLOP/s by its burst figure. Default "
    f"{SD.SUSTAIN_S:g} on an accelerator, {SD.SUSTAIN_S_CPU:g} on a CPU; 0 skips it.",
    show_default=False)]
NoHistoryOpt = Annotated[bool, typer.Option(
    "--no-history", help="Do not record this run in the smoke history.")]


def check_outputs(html: Path | None, metrics: Path | None, history: Path | None,
                  no_history: bool, reads: Sequence[tuple[str, Path | None]] = ()) -> None:
    """Refuse unusable output paths before any work (`reads`: the command's input files, which
    no output may overwrite)."""
    from cli._output import writable
    from fleet.errors import InputError

    writable(html, reads=reads)
    writable(metrics, reads=reads)
    if history is not None and no_history:
        raise InputError("--history and --no-history contradict each other",
                         hint="keep one of them")
    if not no_history:
        from smoke.history import default_path

        writable(history or default_path())


def show_drift(drifted: Sequence[Trend]) -> None:
    """What the history says drifted, one line each on stderr."""
    for t in drifted:
        echo(f"DRIFT {t.pool} {t.node} {t.probe}: " + "; ".join(t.drift)
             + " (still judged by the catalog floor; `accelfleet smoke history "
             f"--node {t.node}` shows the trend)", err=True)
