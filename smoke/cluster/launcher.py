"""The cluster launcher: submit a rendered run, follow every pool, judge, and clean up.

    run = render_run(inventory, RenderOptions(run_id=new_run_id()))
    report = launch(run, clients, stack="prod", timeout_s=900)

One thread per cluster submits that cluster's objects, then follows ALL its pools with one pod
list per tick (so the API load does not grow with the pool count), reads each finished pod's
HostReport from its log, and names what went wrong: a pod the scheduler cannot place (with
the scheduler's reason), a pod that crashed (with its last log lines), a pool past its
timeout. A multi-host TPU slice's pods are told when its last host started (they join then);
a fabric pool whose collective missed its floor then runs its pair rounds
(smoke.cluster._pairs), which name the slow node. Transient API errors are retried with
backoff. Whatever happens, ctrl-C included, every object the run created is deleted
(foreground propagation) before `launch` returns.

Every API call is bounded in wall time and bytes (`smoke.cluster._api`): the run's deadline
(its timeout plus RUN_GRACE_S, moved by a timeout for each pair round a failing fabric pool
runs, two at most) bounds each call whatever the API server does (a drip, an
answer that never ends), pod lists take at most MAX_POD_PAGES pages and pod logs at most
LOG_MAX_BYTES (smoke.cluster._reads), each saying so when it hits the bound; the cleanup then
gets CLEANUP_S of its own and names what it could not delete. A stop (ctrl-C, SIGTERM) cuts
the call in flight.

The run's parts, beside this module: _runstate (each pool's state, a fabric pool's pair
rounds, one cluster's clients and deadline), _submit (creating the run's objects), _reads
(the pod list, pod logs, the scheduler's and Kueue's reasons). Here: following the pools,
the pair rounds, deadlines, each pool's close, the cleanup, and `launch`.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fleet.labels import SLICE_STARTED_ANNOTATION
from smoke.cluster import _pairs as PR
from smoke.cluster import _stalls as S
from smoke.cluster._api import ApiStopped, ApiTimeout, NoTimeLeft, TooLong, track, words
from smoke.cluster._pods import _PodState as _PodState
from smoke.cluster._podtime import slice_start
from smoke.cluster._queue import is_queued
from smoke.cluster._reads import _Reads
from smoke.cluster._rejudge import coverage, pair_figure, pool_outliers, rejudge
from smoke.cluster._rejudge import parse_host_report as parse_host_report
from smoke.cluster._runstate import JOBSET, REQUEST_TIMEOUT_S, _Pool
from smoke.cluster._runstate import Display as Display
from smoke.cluster._runstate import _NoDisplay as _NoDisplay
from smoke.cluster._runstate import _PairRounds as _PairRounds
from smoke.cluster._submit import _Submit
from smoke.cluster.access import with_retries
from smoke.cluster.run import POD, WORKLOAD, Check, NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.probes import verdict as V
from smoke.probes.names import SLICE_START
from smoke.probes.results import ProbeResult, Verdict
from smoke.probes.thresholds import fabric_threshold

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from smoke.cluster.workload import RenderedRun

JOB_NAME_LABEL = "job-name"
RUN_GRACE_S = 20.0  # the run's deadline past its timeout: a pool's finishing grace (15 s)
# and its submission; no API call of the run goes past it
CLEANUP_S = 15.0  # the cleanup's own budget, after the run (deadline or interrupt)
FIRST_POLL_S = 0.05


def new_run_id() -> str:
    """A short DNS-safe id, time-ordered: r<yymmddhhmm>-<4 hex>."""
    return f"r{datetime.now(UTC):%y%m%d%H%M}-{secrets.token_hex(2)}"


class _ClusterRun(_Submit, _Reads):
    """Everything one cluster does in a run. Public methods are called from its thread: its
    submit (_Submit) and reads (_Reads) are its bases'."""

    # -- follow ------------------------------------------------------------------------
    def follow(self) -> None:
        """One pod list per tick for all pools; the first ticks come sooner (0.05 s, doubling
        up to `poll_s`), so short runs are not held back by the poll interval."""
        wait_s = min(FIRST_POLL_S, self.poll_s)
        with ThreadPoolExecutor(max_workers=8) as logs:
            while not self.stop.is_set() and any(p.status is None for p in self.pools):
                try:
                    pods = self._pods()
                except ApiStopped:
                    break  # ctrl-C or SIGTERM: the pools left are cancelled
                except Exception as exc:  # retried already; keep following until deadlines
                    pods = None
                    self._list_failed(exc)
                if pods is not None:
                    self._tick(pods, logs)
                self._deadlines()
                self.stop.wait(wait_s)
                wait_s = min(self.poll_s, wait_s * 2)

    def _list_failed(self, exc: Exception) -> None:
        """A pod list that failed (after its retries), said once per distinct cause on every
        pool still followed: a WARN (the pools' own deadlines judge what did not finish)."""
        if isinstance(exc, NoTimeLeft):
            return  # the run is over: its pools expire now, each saying so
        problem = f"listing the run's pods failed: {words(exc)}"
        for p in self.pools:
            if p.status is None:
                p.reason = problem
                if problem not in self.list_problems:
                    p.checks.append(Check(None, ProbeResult(V.HOST, WORKLOAD, 0,
                                                            Verdict.WARN, problem)))
        self.list_problems.add(problem)

    def _tick(self, pods: list[_PodState], logs: ThreadPoolExecutor) -> None:
        by_pool: dict[str, list[_PodState]] = {}
        for pod in pods:
            by_pool.setdefault(pod.pool, []).append(pod)
        for p in self.pools:
            if p.status is not None:
                continue
            here = by_pool.get(p.name, [])
            if p.pairs is not None:
                self._tick_pairs(p, [pod for pod in here if pod.pair in p.pairs.jobs], logs)
                continue
            fetch = []
            running = 0
            for pod in here:
                if pod.name in p.outcomes or pod.pair:
                    continue
                p.seen[pod.name] = pod
                if pod.phase in ("Succeeded", "Failed"):
                    fetch.append(pod)
                elif pod.phase == "Running":
                    running += 1
                    p.pending.pop(pod.name, None)
                elif pod.init_problem:  # a sidecar that never gets ready: named now
                    self._done(p, pod, S.stalled_init(pod.name, pod.node, pod.init_problem))
                elif pod.unschedulable:
                    p.pending[pod.name] = pod.unschedulable
            self._say_slice_started(p, here)
            for outcome, check in logs.map(self._outcome, fetch):
                if outcome.report is not None:  # untrusted: judged again, every figure
                    outcome = replace(outcome, report=rejudge(outcome.report, p.plan,
                                                              node=outcome.node))
                p.outcomes[outcome.pod] = outcome
                if check is not None:
                    p.checks.append(Check(outcome.node, check))
                    if p.workload.kind == "jobset" and not p.crashed and \
                            outcome.exit_code not in (0, None):
                        p.crashed = outcome.node or outcome.pod
            if p.crashed and len(p.outcomes) < p.workload.pods:  # the JobSet controller
                # deletes the other hosts' pods: each is named with the host that failed
                names = {pod.name for pod in here}
                for name, pod in list(p.seen.items()):
                    if name not in names and name not in p.outcomes:
                        self._done(p, pod, S.vanished(name, pod.node, p.crashed))
                if not [pod for pod in here if pod.name not in p.outcomes]:
                    self._close(p, PoolStatus.PARTIAL, f"host {p.crashed} failed; the JobSet "
                                f"ended the slice: {p.workload.pods - len(p.outcomes)} host(s) "
                                "never reported")
                    continue
            done = len(p.outcomes)
            p.running = running
            state = "running" if running else ("pending" if done == 0 else "running")
            detail = next(iter(p.pending.values()), "")[:80] if p.pending else ""
            self.display.update(p.name, state, done, p.workload.pods, detail)
            if done >= p.workload.pods:
                self._collective_done(p)

    def _say_slice_started(self, p: _Pool, here: list[_PodState]) -> None:
        """A multi-host TPU slice: once every host's agent started, annotate each pod still
        running with when the last one did. Each agent waits for that word (a downward API
        file, bounded by half its deadline) before it joins, so the join budget follows the
        slowest host's image pull and start, measured here from the pods' own timestamps;
        the run says how long each host took (a `slice_start` check)."""
        if p.workload.kind != "jobset" or p.workload.pods < 2 or p.slice_said:
            return
        timings = {pod.node or pod.name: pod.timing for pod in here if pod.timing}
        said = slice_start(timings, p.workload.pods)
        if said is None:
            return
        p.slice_said = said.started_at
        body = {"metadata": {"annotations": {SLICE_STARTED_ANNOTATION: said.started_at}}}
        unsaid = []
        for pod in here:
            if pod.phase not in ("Pending", "Running"):
                continue
            try:
                self._call(self.core.patch_namespaced_pod, pod.name, self.ns, body,
                           _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
            except Exception as exc:  # the host falls back to its bounded wait
                unsaid.append(f"{pod.name} ({type(exc).__name__})")
        hosts = ", ".join(f"{h} {'?' if s is None else f'{s:.1f}'} s"
                          for h, s in said.startup_s.items())
        reason = (f"every host started by {said.started_at}, {said.spread_s:.1f} s apart; "
                  f"startup (image pull and start) per host: {hosts}; the last was "
                  f"{said.slowest}, the join waited for it")
        if unsaid:
            reason += f"; not told (they waited out their bound): {', '.join(unsaid)}"
        p.checks.append(Check(None, ProbeResult(
            V.HOST, SLICE_START, V.T3, Verdict.PASS, reason, said.spread_s, unit="s",
            details={"started_at": said.started_at, "startup_s": said.startup_s,
                     "slowest": said.slowest, "not_told": unsaid})))

    # -- pair rounds (smoke.cluster._pairs) ----------------------------------------------
    def _collective_done(self, p: _Pool) -> None:
        """The pool's pods all reported: close it, or first run its pair rounds."""
        nodes = self._pair_nodes(p)
        if not nodes or self.stop.is_set():
            self._close(p)
            return
        p.pairs = _PairRounds(PR.rounds(nodes))
        self._next_round(p)

    def _pair_nodes(self, p: _Pool) -> list[str]:
        """The nodes to pair: a GPU pool on a fabric (not queued through Kueue: its nodes come
        and go with its requests) whose pool-wide collective did not pass on every node, of
        3 nodes or more that reported; [] for any other pool."""
        w = p.workload
        if w.kind != "job" or not p.plan.cross_node or w.pool.gpu_networking is None or \
                is_queued(w.objects):
            return []
        reported = sorted((o for o in p.outcomes.values() if o.report is not None and o.node),
                          key=lambda o: (o.index, o.pod))
        fabric = [r for o in reported for r in o.report.results  # type: ignore[union-attr]
                  if r.probe == V.FABRIC]
        if not fabric or all(r.verdict is Verdict.PASS for r in fabric):
            return []
        nodes = list(dict.fromkeys(o.node for o in reported if o.node))
        return nodes if len(nodes) >= PR.MIN_NODES else []

    def _next_round(self, p: _Pool) -> None:
        """Submit the next round's pairs, each a 2-pod Job pinned to its nodes, all at once;
        after the last round, judge the pairs and close the pool."""
        from kubernetes.client.exceptions import ApiException

        pr = p.pairs
        assert pr is not None
        pr.index += 1
        pr.jobs, pr.figures = {}, {}
        if pr.index >= len(pr.rounds) or self.stop.is_set():
            exp = p.plan.expectation
            th = fabric_threshold(p.plan.machine, p.plan.fabric,
                              exp.accelerator.key if exp.accelerator else None)
            p.checks.extend(PR.pair_checks(pr.busbw, pr.errors, th))
            self._close(p)
            return
        # a round gets the pool's timeout of its own: the run's deadline moves with it (the
        # collective may have used the first timeout whole)
        self.deadline = max(self.deadline, time.monotonic() + self.timeout_s + RUN_GRACE_S)
        for i, pair in enumerate(pr.rounds[pr.index]):
            name = PR.pair_name(p.workload.name, pr.index, i)
            try:
                for obj in PR.pair_objects(p.workload, name, pair):
                    self._create(obj)
            except ApiException as exc:
                pr.errors[pair] = f"submitting the pair's Job failed: {exc.status} {exc.reason}"
                continue
            pr.jobs[name], pr.figures[name] = pair, []
        pr.deadline = time.monotonic() + self.timeout_s + 15
        self.display.update(p.name, "pairs", pr.index + 1, len(pr.rounds),
                            f"pair round {pr.index + 1} of {len(pr.rounds)}")
        if not pr.jobs:
            self._next_round(p)

    def _tick_pairs(self, p: _Pool, pods: list[_PodState], logs: ThreadPoolExecutor) -> None:
        pr = p.pairs
        assert pr is not None
        fetch = [pod for pod in pods if pod.phase in ("Succeeded", "Failed")
                 and pod.name not in pr.finished]
        for pod in pods:
            if pod.name not in pr.finished and pod.init_problem:
                pr.finished.add(pod.name)
                pr.figures[pod.pair].append((None, f"pod {pod.name}: {pod.init_problem}"))
        for pod, (outcome, crash) in zip(fetch, logs.map(self._outcome, fetch), strict=True):
            pr.finished.add(pod.name)
            if outcome.report is None or crash is not None:
                why = crash.reason if crash is not None else "no report"
                pr.figures[pod.pair].append((None, why.split("; last log lines")[0]))
            else:
                pr.figures[pod.pair].append(pair_figure(outcome.report, p.plan))
        if all(len(figs) >= 2 for figs in pr.figures.values()):
            self._round_done(p)

    def _round_done(self, p: _Pool, timed_out: bool = False) -> None:
        pr = p.pairs
        assert pr is not None
        for name, pair in pr.jobs.items():
            figs = pr.figures.get(name, [])
            why = [w for v, w in figs if v is None]
            if why or len(figs) < 2:
                pr.errors[pair] = "; ".join(why) or (
                    f"did not finish within {self.timeout_s} s" if timed_out else "no report")
            else:  # both ends timed the same collective: the slower figure is the pair's
                pr.busbw[pair] = min(v for v, _ in figs if v is not None)
        self._next_round(p)

    def _done(self, p: _Pool, pod: _PodState, why: ProbeResult) -> None:
        """`pod` ends without a report, for `why`."""
        p.outcomes[pod.name] = NodeOutcome(index=pod.index, pod=pod.name, node=pod.node,
                                           slice=pod.slice)
        p.checks.append(Check(pod.node or pod.name, why))

    def _deadlines(self) -> None:
        """A pool past its deadline expires; one whose pods are all still unschedulable at
        its timeout expires then (the finishing grace is for pods that run)."""
        now = time.monotonic()
        lead_s = min(S.LAST_LINE_LEAD_S, self.timeout_s / 2)
        for p in self.pools:
            if p.pairs is not None:
                if p.status is None and now >= p.pairs.deadline:
                    self._round_done(p, timed_out=True)
                continue
            if p.status is None and p.last_lines is None and \
                    now >= p.started + self.timeout_s - lead_s:
                # the Job's deadline kills its pods, and their logs with them: read now what
                # each running pod was doing, to name its stage if it never finishes
                p.last_lines = {name: self._last_line(name) for name, pod in p.seen.items()
                                if name not in p.outcomes and pod.phase == "Running"}
            stuck = (p.pending and not p.running and not p.outcomes
                     and now >= p.started + self.timeout_s)
            if p.status is None and (now >= p.deadline or stuck or now >= self.deadline):
                self._expire(p)

    def _expire(self, p: _Pool) -> None:
        missing = p.workload.pods - len(p.outcomes)
        if p.pending:
            pod, msg = next(iter(p.pending.items()))
            msg = msg or self._scheduler_event(pod) or "no reason given"
            reason = (f"{len(p.pending)} of {p.workload.pods} pods could not be scheduled "
                      f"within {self.timeout_s} s: {msg}")
            p.checks.append(Check(None, ProbeResult(V.HOST, WORKLOAD, 0, Verdict.FAIL, reason)))
            self._close(p, PoolStatus.UNSCHEDULABLE, reason)
            return
        for name, state in list(p.seen.items()):  # each unfinished pod, its node and stage
            if name not in p.outcomes and state.phase == "Running":
                last = (p.last_lines or {}).get(name) or self._last_line(name)
                self._done(p, state, S.unfinished(name, state.node, self.timeout_s, last))
        reason = (f"{missing} of {p.workload.pods} pods did not finish within "
                  f"{self.timeout_s} s")
        if self.list_problems:  # what kept the run from seeing them (an API past its bounds)
            reason += f" ({'; '.join(sorted(self.list_problems))})"
        if not p.seen and is_queued(p.workload.objects):
            reason = self._held_by_kueue(p) or reason
        p.checks.append(Check(None, ProbeResult(V.HOST, WORKLOAD, 0, Verdict.FAIL, reason)))
        self._close(p, PoolStatus.TIMEOUT, reason)

    def _close(self, p: _Pool, status: PoolStatus | None = None, reason: str = "") -> None:
        if status is None:
            crashed = [c for c in p.checks if c.result.probe == POD]
            status = PoolStatus.PARTIAL if crashed else PoolStatus.DONE
            reason = f"{len(crashed)} pod(s) crashed" if crashed else ""
        # every targeted node tested once, judged here: a GPU pool was sized to its targets
        # (one pod each); a TPU slice's pods land where the JobSet puts them, on the pool's
        # nodes, each on its own
        p.checks.extend(coverage(p.outcomes.values(), p.targets,
                                 every_target=p.workload.kind == "job"
                                 and status in (PoolStatus.DONE, PoolStatus.PARTIAL)))
        p.checks.extend(pool_outliers(p.outcomes.values()))
        p.finish(status, reason)
        failed = any(c.result.verdict is Verdict.FAIL for c in p.checks) or any(
            o.report is not None and not o.report.ok for o in p.outcomes.values())
        self.display.update(p.name, "failed" if failed or status is not PoolStatus.DONE
                            else "done", len(p.outcomes), p.workload.pods, reason[:80])

    # -- clean up ----------------------------------------------------------------------
    def cleanup(self) -> list[str]:
        """Delete every object of the run in this cluster, within CLEANUP_S from now (its own
        budget, whether the run ended, ran out of time or was stopped); returns what could not
        be deleted."""
        errors = []
        group, version, plural = JOBSET
        sel, fg = self.selector, "Foreground"
        kw: dict[str, Any] = {"_request_timeout": REQUEST_TIMEOUT_S, "_preload_content": False}
        end = time.monotonic() + CLEANUP_S
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("jobsets", lambda: self.custom.delete_collection_namespaced_custom_object(
                group, version, self.ns, plural, label_selector=sel, propagation_policy=fg,
                **kw)),
            ("jobs", lambda: self.batch.delete_collection_namespaced_job(
                self.ns, label_selector=sel, propagation_policy=fg, **kw)),
            ("pods", lambda: self.core.delete_collection_namespaced_pod(
                self.ns, label_selector=sel, grace_period_seconds=0, **kw)),
            ("services", lambda: self.core.delete_collection_namespaced_service(
                self.ns, label_selector=sel, **kw)),
            ("configmaps", lambda: self.core.delete_collection_namespaced_config_map(
                self.ns, label_selector=sel, **kw)),
        ]
        if not any(p.workload.kind == "jobset" for p in self.pools):
            steps = steps[1:]
        for i, (what, call) in enumerate(steps):
            try:  # each step its share of what is left: one held answer does not take all
                now = time.monotonic()
                with_retries(call, attempts=4, deadline=min(end, now + (end - now) /
                                                                 (len(steps) - i)))
            except Exception as exc:
                errors.append(f"cluster {self.name}: deleting the run's {what} failed "
                              f"({words(exc)}); delete them with `kubectl delete "
                              f"{what} -n {self.ns} -l {sel}`")
        return errors


def launch(run: RenderedRun, clients: Mapping[str, ApiClient], *, stack: str, timeout_s: int,
           poll_s: float = 0.5, stop: threading.Event | None = None,
           display: Display | None = None,
           notes: Mapping[str, list[Check]] | None = None,
           targets: Mapping[str, Sequence[str]] | None = None) -> RunReport:
    """Submit `run` to every cluster in parallel, follow it, clean up, and return the report.
    Setting `stop` (ctrl-C) ends following at once; the cleanup still runs. `notes`: checks
    known before the run, per pool (the live nodes that get no pod, and why). `targets`: the
    nodes each pool was sized to (its live, testable nodes): each needs exactly one judged
    report from a pod that ran on it (`_rejudge.coverage`); a pool absent from it is checked
    for two pods on one node only."""
    from smoke.cluster._bundle import digest

    stop = stop or threading.Event()
    shown = display or _NoDisplay()
    started, t0 = datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic()
    deadline = t0 + timeout_s + RUN_GRACE_S  # no API call of the run goes past it
    for client in clients.values():
        track(client)  # its calls can be cut at their budget (smoke.cluster._api)
    pools = [_Pool(w, checks=list((notes or {}).get(w.pool.name, ())),
                   targets=tuple((targets or {})[w.pool.name])
                   if w.pool.name in (targets or {}) else None) for w in run.pools]
    for p in pools:
        if p.workload.kind == "skipped":
            p.finish(PoolStatus.SKIPPED, p.workload.skipped or "skipped")
            shown.update(p.name, "skipped", 0, 0, p.reason[:80])
    clusters = sorted({w.cluster for w in run.pools if w.kind != "skipped"})
    runs = [_ClusterRun(c, clients[c], run, [p for p in pools if p.workload.cluster == c
                                            and p.status is None],
                        timeout_s=timeout_s, poll_s=poll_s, stop=stop, display=shown,
                        deadline=deadline)
            for c in clusters]
    cleanup_errors: list[str] = []

    def drive(cr: _ClusterRun) -> None:
        try:
            if cr.submit():
                cr.follow()
        except (ApiTimeout, ApiStopped, TooLong, OSError) as exc:  # a call past its bounds
            # (or cut by a stop) outside the places that name it: every pool left says so
            for p in cr.pools:
                if p.status is None:
                    p.finish(PoolStatus.ERROR, f"cluster {cr.name}: {words(exc)}")
        finally:
            cleanup_errors.extend(cr.cleanup())

    threads = [threading.Thread(target=drive, args=(cr,), name=f"smoke-{cr.name}", daemon=True)
               for cr in runs]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            try:
                t.join(0.2)  # short joins keep the main thread responsive to ctrl-C
            except KeyboardInterrupt:
                stop.set()  # the cluster threads stop following and clean up
    cancelled = stop.is_set()
    reports = []
    for p in pools:
        if p.status is None:
            p.finish(PoolStatus.CANCELLED, "the run was interrupted")
        reports.append(PoolReport(
            name=p.name, cluster=p.workload.cluster, accelerator=p.workload.pool.accelerator,
            workload=p.workload.name, expected_pods=p.workload.pods, status=p.status or
            PoolStatus.CANCELLED, nodes=tuple(sorted(p.outcomes.values(),
                                                     key=lambda o: (o.index, o.pod))),
            checks=tuple(p.checks), reason=p.reason,
            duration_s=max(0.0, (p.finished or time.monotonic()) - (p.started or t0))))
    return RunReport(run_id=run.run_id, stack=stack, started_at=started,
                     duration_s=time.monotonic() - t0, thresholds_version=V.THRESHOLDS_VERSION,
                     agent_digest=digest(), pools=tuple(reports), cancelled=cancelled,
                     cleanup_errors=tuple(cleanup_errors))
