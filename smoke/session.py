"""One cluster smoke run, start to finish, as a library call: what `accelfleet smoke run` and
`accelfleet up` do, with no argument parsing and no printing.

    from smoke.cluster.quarantine import Cap
    from smoke.session import SmokeRequest, run_smoke

    result = run_smoke(SmokeRequest(stack_file=Path("stacks/Pulumi.prod.yaml"),
                                    quarantine=Cap.parse("10%"), junit=Path("smoke.xml")))
    result.report          # the RunReport: every pool, node, device and probe judged
    result.quarantine      # what was done to the nodes that failed (None without a cap)
    result.written         # the files the run left (JUnit, run.json, manifests, HTML, ...)
    result.ok              # nothing failed, something was tested, no cap was reached

The steps: render the run's manifests from the stack (or its saved outputs), reach every
cluster it uses, size each GPU pool to its live nodes, submit and follow every pool (SIGINT
and SIGTERM stop the run, and every object it created is deleted before this returns),
write the files asked for, then quarantine what failed within the cap. A cluster that cannot
be reached or a bad input raises (AccelfleetError); a file that cannot be written is named in
`unsaved`, after the results are known, so that nothing measured is lost. Every file and the
history row are written before quarantine acts (run.json and the HTML report again after it,
with what it did): a quarantine that fails loses nothing measured.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from smoke.cluster.quarantine import ActionReport, Cap
    from smoke.cluster.run import RunReport
    from smoke.cluster.sources import RunSource
    from smoke.cluster.workload import RenderedRun
    from smoke.history import Trend


class Progress(Protocol):
    """What the caller shows while the pods run (the CLI's live table). Entered just before
    the first object is submitted and left once every pool is done and cleaned up; told of
    each pool's state as it changes (pending, running, done, failed, ...)."""

    def __enter__(self) -> object: ...

    def __exit__(self, *exc: object) -> bool | None: ...

    def update(self, pool: str, state: str, done: int, total: int, detail: str) -> None: ...


@dataclass(frozen=True)
class SmokeRequest:
    """What to smoke and what to keep. `outputs`: a saved `pulumi stack output --json
    --show-secrets` file, or those outputs themselves (as `accelfleet up` has them)."""

    stack_file: Path | None = None
    outputs: Path | Mapping[str, Any] | None = None
    kubeconfig: Path | None = None
    contexts: Mapping[str, str] = field(default_factory=dict)  # cluster -> kubeconfig context
    pools: Sequence[str] | None = None  # None: every pool
    tier: int | None = None  # None: the stack's smoke.max_tier
    timeout_s: int | None = None  # None: the stack's smoke.timeout_s
    images: Mapping[str, str] = field(default_factory=dict)  # backend -> image, over the pins
    sustain_s: float | None = None
    quarantine: Cap | None = None  # None: no node is touched
    junit: Path | None = None
    out: Path | None = None  # a directory: run.json, junit.xml, manifests/
    html: Path | None = None
    metrics: Path | None = None
    history: Path | None = None  # None: the default history
    record_history: bool = True


@dataclass(frozen=True)
class SmokeResult:
    """A finished (or interrupted) run: its report, what quarantine did, what was kept."""

    report: RunReport
    quarantine: ActionReport | None = None
    written: tuple[Path, ...] = ()
    unsaved: tuple[str, ...] = ()  # files that could not be written, in words
    drifted: tuple[Trend, ...] = ()  # the history's trends of this run's nodes that drifted
    read: str = ""  # what the run was read from, in words (the stack file, the outputs file)

    @property
    def ok(self) -> bool:
        """Nothing failed, something was tested, and no pool reached its quarantine cap."""
        return self.report.ok and (self.quarantine is None or self.quarantine.ok)

    def problems(self) -> list[str]:
        """Every reason the run is not ok, and every file not written, one line each."""
        report, taken = self.report, self.quarantine
        lines = [f.line() for f in report.failures] + list(report.cleanup_errors)
        lines += list(self.unsaved)
        lines += [report.nothing_tested] if report.nothing_tested else []
        if taken is not None:
            lines += [a.line() for a in taken.of("error")] + [f"CAP {c}" for c in taken.capped]
        return lines

    def to_dict(self) -> dict[str, Any]:
        taken = self.quarantine
        return {**self.report.to_dict(), **({"quarantine": taken.to_dict()} if taken else {})}

    def to_json(self) -> str:
        """The run document (per pool, node, device), with what quarantine did."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def plan_run(request: SmokeRequest, run_id: str | None = None,
             live: Mapping[str, int] | None = None) -> tuple[RenderedRun, RunSource, int]:
    """The run's manifests, its source (inventory, settings, clusters) and its per-pool
    timeout; `live` sizes GPU pools to the nodes they have now."""
    import smoke.expectations as expect
    from smoke.cluster.launcher import new_run_id
    from smoke.cluster.sources import load_source
    from smoke.cluster.workload import RenderOptions, render_run

    source = load_source(request.stack_file, request.outputs)
    s = source.settings
    timeout = request.timeout_s or s.timeout_s
    options = RenderOptions(run_id=run_id or new_run_id(), namespace=s.namespace,
                            tier=s.max_tier if request.tier is None else request.tier,
                            timeout_s=timeout, images={**s.images, **request.images},
                            sustain_s=request.sustain_s)
    inventory = source.inventory
    if live:
        from dataclasses import replace

        inventory = replace(inventory, pools=tuple(
            replace(p, nodes=live[p.name]) if p.name in live else p for p in inventory.pools))
    pools = list(request.pools) if request.pools else None
    run = render_run(inventory, options, pools=pools, expectation=expect.for_pool)
    return run, source, timeout


@contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` while inside (the previous handlers come back after);
    off the main thread, where Python allows no handler, the caller's `stop` alone ends it."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda *_: stop.set())
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class _Quiet:
    def __enter__(self) -> object:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, pool: str, state: str, done: int, total: int, detail: str) -> None:
        return None


def run_smoke(request: SmokeRequest, *, progress: Progress | None = None,
              stop: threading.Event | None = None) -> SmokeResult:
    """Smoke every node `request` names, keep the files asked for, then quarantine what
    failed (with a cap). Setting `stop` (or SIGINT/SIGTERM, on the main thread) ends the run at
    once; every object it created is deleted before this returns, and the report says
    `cancelled` (no quarantine, no HTML, metrics or history then)."""
    from smoke.cluster.access import connect
    from smoke.cluster.launcher import launch
    from smoke.cluster.live import live_pools, run_targets
    from smoke.cluster.workload import write_manifests

    rendered, source, timeout = plan_run(request)
    used = sorted({w.cluster for w in rendered.pools if w.kind != "skipped"})
    clients = connect([source.clusters[c] for c in used], kubeconfig=request.kubeconfig,
                      contexts=dict(request.contexts), outputs_kubeconfigs=source.kubeconfigs)
    live = live_pools(rendered.pools, clients)
    if any(lp.size != lp.declared for lp in live.values()):
        rendered, _, _ = plan_run(request, run_id=rendered.run_id,
                                  live={name: lp.size for name, lp in live.items()})
    targets = run_targets(rendered.pools, clients, live)
    written: list[Path] = []
    if request.out is not None:
        written += write_manifests(rendered, request.out / "manifests")
    stop = stop or threading.Event()
    shown = progress or _Quiet()
    with _stopped_by_signals(stop), shown:
        report = launch(rendered, clients, stack=source.inventory.stack, timeout_s=timeout,
                        stop=stop, display=shown,
                        notes={name: lp.checks() for name, lp in live.items()},
                        targets=targets)
    # what was measured is kept before anything else can fail: quarantine comes after
    result = _kept(SmokeResult(report, read=source.read(request.outputs)), request, written)
    if request.quarantine is None or report.cancelled:
        return result
    from smoke.cluster.quarantine import quarantine

    taken = quarantine(report, clients, cap=request.quarantine,
                       pools={p.name: p for p in source.inventory.pools})
    return _with_quarantine(result, taken, request)


def _with_quarantine(result: SmokeResult, taken: ActionReport, request: SmokeRequest
                     ) -> SmokeResult:
    """`result` with what quarantine did, and the files that show it (run.json, the HTML
    report) written again to say so; were they not, the first ones stand."""
    from dataclasses import replace

    from smoke.reports.files import save_all

    result = replace(result, quarantine=taken)
    files: dict[Path, str] = {}
    if request.out is not None:
        files[request.out / "run.json"] = result.to_json()
    if request.html is not None:
        from smoke.reports.html import render_html

        files[request.html] = render_html(result.report, quarantine=taken)
    saved = save_all(files)
    return replace(result, unsaved=result.unsaved + tuple(
        f"{problem} (the copy written before quarantine stands)" for problem in saved.problems))


def _kept(result: SmokeResult, request: SmokeRequest, written: list[Path]) -> SmokeResult:
    """`result` with the files written: JUnit and `out` always, the rest unless cancelled."""
    from dataclasses import replace

    from smoke.reports.files import keep, save_all
    from smoke.reports.junit import junit

    report = result.report
    files = {request.junit: junit(report)} if request.junit is not None else {}
    if request.out is not None:
        files |= {request.out / "run.json": result.to_json(),
                  request.out / "junit.xml": junit(report)}
    saved = save_all(files)
    written += saved.written
    unsaved = list(saved.problems)
    drifted: tuple[Trend, ...] = ()
    if not report.cancelled:
        kept = keep(report, kind="cluster", html=request.html, metrics=request.metrics,
                    history=request.history, record_history=request.record_history,
                    quarantine=result.quarantine)
        written += kept.written
        unsaved += kept.problems
        drifted = kept.drifted
    return replace(result, written=tuple(written), unsaved=tuple(unsaved), drifted=drifted)
