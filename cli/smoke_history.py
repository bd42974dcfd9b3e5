"""`accelfleet smoke history`: per node and pool, each figure's trend and last verdict, with
drift (a figure 10% below the node's own recent median) called out before it fails."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._errors import command

if TYPE_CHECKING:
    from rich.table import Table

    from smoke.history import Trend

SPARKS = "▁▂▃▄▅▆▇█"
SPARK_FLOOR = 0.7  # the sparkline's bottom, as a fraction of the series' top


def sparkline(values: Sequence[float | None]) -> str:
    """One character per run, scaled from 0.7 x the series' top to its top (a 10% fall
    shows as about two steps); a run without the figure is a space."""
    top = max((v for v in values if v is not None), default=0.0)
    if top <= 0:
        return " " * len(values)
    low = SPARK_FLOOR * top
    out = []
    for v in values:
        if v is None:
            out.append(" ")
            continue
        i = round((max(v, low) - low) / (top - low) * (len(SPARKS) - 1))
        out.append(SPARKS[i])
    return "".join(out)


def _accelerator_names(words: str) -> list[str]:
    """What `--accelerator` may be recorded as: the words given, and the catalog's key."""
    names = [words]
    try:
        from fleet.catalog import load_catalog

        shape = load_catalog().resolve(words)
        if shape.accelerator is not None:
            names.append(shape.accelerator.key)
        if shape.machine_type:
            names.append(shape.machine_type)
    except Exception:  # words the catalog does not know still match as recorded
        pass
    return names


@command
def history(
    pool: Annotated[str | None, typer.Option("--pool", metavar="POOL", help="Only this pool "
                                             "(`local` for `smoke local` runs).",
                                             show_default=False)] = None,
    node: Annotated[str | None, typer.Option("--node", metavar="NODE", help="Only this node.",
                                             show_default=False)] = None,
    accelerator: Annotated[str | None, typer.Option(
        "--accelerator", metavar="ACCELERATOR", help="Only this accelerator (catalog words: h100, "
        "a3-highgpu-8g, v5p).", show_default=False)] = None,
    last: Annotated[int, typer.Option("--last", min=2, max=1000, metavar="N",
                                      help="Show each node's last N runs.")] = 10,
    path: Annotated[Path | None, typer.Option(
        "--history", metavar="FILE", help="The smoke history (default: "
        ".accelfleet/history.sqlite, or $ACCELFLEET_HISTORY).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every trend with its points "
                                          "as JSON.")] = False,
) -> None:
    """Per node and pool, each figure's trend over its last runs and its last verdict. A
    node whose figure fell 10% below its own recent median (three to five runs) warns as
    drift, even while still above the catalog floor.

    Exit 0; 2 for a missing or unreadable history.
    """
    from cli._output import console, print_json, print_table
    from smoke.history import History, default_path

    where = path or default_path()
    with History.open(where, create=False) as h:
        trends = h.trends(pool=pool, node=node, window=last,
                          accelerator=_accelerator_names(accelerator) if accelerator else ())
    if as_json:
        print_json([t.to_dict() for t in trends])
        return
    out = console()
    if not trends:
        out.print(f"no recorded run in {where} matches" if pool or node or accelerator
                  else f"no run recorded in {where} yet", markup=False)
        return
    print_table(out, _trend_table(trends, where, last))
    drifting = sum(1 for tr in trends if tr.drift)
    if drifting:
        out.print(f"{drifting} figure(s) drifting: below 0.9 of the node's own recent median")


def _trend_table(trends: Sequence[Trend], where: Path, last: int) -> Table:
    """One row per node and figure: its sparkline, last value, recent median, verdict."""
    from rich.markup import escape
    from rich.table import Table

    from fleet.words import precise

    colour = {"pass": "green", "warn": "yellow", "fail": "bold red", "skipped": "dim"}
    t = Table(title=escape(f"accelfleet smoke history ({where}): last {last} runs per node"))
    for col, just in (("pool", "left"), ("node", "left"), ("figure", "left"),
                      ("trend", "left"), ("last", "right"), ("recent median", "right"),
                      ("change", "right"), ("runs", "right"), ("verdict", "left"),
                      ("note", "left")):
        t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for tr in trends:
        values = [p.value for p in tr.points]
        c = colour.get(tr.verdict, "white")
        change = f"{tr.change - 1:+.0%}" if tr.change is not None else "-"
        note = "drift: " + "; ".join(tr.drift) if tr.drift else ""
        last_v = f"{precise(tr.last.value)} {tr.unit}" if tr.last.value is not None else "-"
        median = precise(tr.recent_median)
        verdict = tr.verdict + (f" (was {tr.last.verdict})" if tr.verdict != tr.last.verdict
                                else "")
        t.add_row(escape(f"{tr.cluster + '/' if tr.cluster else ''}{tr.pool}"),
                  escape(tr.node),
                  escape(f"{tr.probe} ({tr.backend})" if tr.backend else tr.probe),
                  sparkline(values), escape(last_v),
                  median, change,
                  str(len(values)), f"[{c}]{verdict}[/{c}]", escape(note))
    return t
