"""What a smoke run leaves behind: the HTML report, the OpenMetrics file and the history record
(`keep`), each written after the results are known, so that a path that cannot be written is a
problem in words, never a lost measurement.

    kept = keep(run, kind="cluster", html=Path("r.html"), metrics=None, history=None)
    kept.problems      # what could not be kept, in words (empty when all was written)
    kept.drifted       # the history's trends of this run's nodes that drifted
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.output_files import save

if TYPE_CHECKING:
    from smoke.cluster.quarantine import ActionReport
    from smoke.cluster.run import RunReport
    from smoke.history import Trend
    from smoke.probes.results import HostReport


@dataclass(frozen=True)
class Kept:
    """The files written, what could not be kept (in words), and what drifted."""

    written: tuple[Path, ...] = ()
    problems: tuple[str, ...] = ()
    drifted: tuple[Trend, ...] = ()


def save_all(files: dict[Path, str]) -> Kept:
    """Write each file; those written and the problems of those that were not."""
    problems = {path: save(path, text) for path, text in files.items()}
    return Kept(written=tuple(p for p, problem in problems.items() if problem is None),
                problems=tuple(problem for problem in problems.values() if problem))


def keep(run: RunReport, *, kind: str, html: Path | None, metrics: Path | None,
         history: Path | None, record_history: bool = True,
         quarantine: ActionReport | None = None) -> Kept:
    """Write the HTML report and metrics and append to the history (`history`, or the default
    one; none when `record_history` is false)."""
    from fleet.errors import AccelfleetError

    written: list[Path] = []
    problems: list[str] = []
    drifted: list[Trend] = []
    if html is not None:
        from smoke.reports.html import render_html

        kept = save_all({html: render_html(run, quarantine=quarantine)})
        written += kept.written
        problems += kept.problems
    if metrics is not None:
        from smoke.reports.metrics import write_metrics

        problem = write_metrics(run, metrics)
        if problem:
            problems.append(problem)
        else:
            written.append(metrics)
    if record_history:
        from smoke.history import default_path, record

        where = history or default_path()
        try:
            drifted = record(run, where, kind=kind)
        except AccelfleetError as exc:
            problems.append(f"not recorded in the history: {exc.message}")
        else:
            written.append(where)
    return Kept(tuple(written), tuple(problems), tuple(drifted))


def keep_host(report: HostReport, *, junit: Path | None, html: Path | None,
              metrics: Path | None, history: Path | None, record_history: bool = True) -> Kept:
    """What `smoke local` keeps of one host's report: its JUnit XML, then (as a run of one
    pool, `local`, of one node) the HTML report, the metrics and the history record."""
    from smoke.cluster.launcher import new_run_id
    from smoke.cluster.run import RunReport
    from smoke.reports.junit import host_junit as junit_xml

    saved = save_all({junit: junit_xml(report)} if junit is not None else {})
    kept = keep(RunReport.of_host(report, "l" + new_run_id()[1:]), kind="local", html=html,
                metrics=metrics, history=history, record_history=record_history)
    return Kept(saved.written + kept.written, saved.problems + kept.problems, kept.drifted)
