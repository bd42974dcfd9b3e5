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
LOG_MAX_BYTES, each saying so when it hits the bound; the cleanup then gets CLEANUP_S of its
own and names what it could not delete. A stop (ctrl-C, SIGTERM) cuts the call in flight.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from fleet.labels import RUN_LABEL, SLICE_STARTED_ANNOTATION
from smoke.cluster import _pairs as PR
from smoke.cluster import _stalls as S
from smoke.cluster._api import (
    API_PROBLEM,
    ApiStopped,
    ApiTimeout,
    Body,
    NoTimeLeft,
    TooLong,
    track,
    words,
)
from smoke.cluster._pods import _PodState
from smoke.cluster._podtime import slice_start
from smoke.cluster._queue import PROVISIONING_REQUEST, held_by_kueue, is_queued
from smoke.cluster._rejudge import (
    PoolPlan,
    coverage,
    host_documents,
    pair_figure,
    parse_host_report,
    pool_outliers,
    rejudge,
)
from smoke.cluster.access import with_retries
from smoke.cluster.run import POD, WORKLOAD, Check, NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.probes import verdict as V
from smoke.probes.names import SLICE_START
from smoke.probes.results import ProbeResult, Verdict
from smoke.probes.thresholds import fabric_threshold

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from smoke.cluster.workload import PoolWorkload, RenderedRun

JOB_NAME_LABEL = "job-name"
JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
LOG_TAIL_LINES = 5000  # the report line, any second one, and the crash tail all in reach
CRASH_LINES = 6
REQUEST_TIMEOUT_S = (5.0, 30.0)  # (connect, read); the whole call within _api.CALL_CAP_S
RUN_GRACE_S = 20.0  # the run's deadline past its timeout: a pool's finishing grace (15 s)
# and its submission; no API call of the run goes past it
CLEANUP_S = 15.0  # the cleanup's own budget, after the run (deadline or interrupt)
MAX_POD_PAGES = 100  # pages of a pod list (PAGE_PODS each): a `continue` token past it is not
# followed
LOG_MAX_BYTES = 8 * 2**20  # of a pod's log (the API server's limitBytes, and read no further)
LAST_LINE_BYTES = 64 * 2**10
PAGE_PODS = 200  # pods per list request
PAGE_MAX_BYTES = 16 * 2**20  # of one page of pods (a real page of 200 is 1-2 MiB)
SUBMIT_WORKERS = 8  # pools submitted at once, per cluster
FIRST_POLL_S = 0.05


def new_run_id() -> str:
    """A short DNS-safe id, time-ordered: r<yymmddhhmm>-<4 hex>."""
    return f"r{datetime.now(UTC):%y%m%d%H%M}-{secrets.token_hex(2)}"


class Display(Protocol):
    """Told of each pool's state as it changes: pending, running, done, failed, ..."""

    def update(self, pool: str, state: str, done: int, total: int, detail: str) -> None: ...


class _NoDisplay:
    def update(self, pool: str, state: str, done: int, total: int, detail: str) -> None:
        pass


@dataclass
class _PairRounds:
    """A fabric pool's pair rounds under way (smoke.cluster._pairs): the rounds, the current
    one's Jobs, and each pair's figure or why it has none."""

    rounds: list[list[PR.Pair]]
    index: int = -1
    jobs: dict[str, PR.Pair] = field(default_factory=dict)  # this round's Job name -> pair
    figures: dict[str, list[tuple[float | None, str]]] = field(default_factory=dict)  # by Job
    finished: set[str] = field(default_factory=set)  # pair pods read already
    busbw: dict[PR.Pair, float] = field(default_factory=dict)
    errors: dict[PR.Pair, str] = field(default_factory=dict)
    deadline: float = 0.0


@dataclass
class _Pool:
    workload: PoolWorkload
    started: float = 0.0
    deadline: float = 0.0
    outcomes: dict[str, NodeOutcome] = field(default_factory=dict)  # pod key -> outcome
    checks: list[Check] = field(default_factory=list)
    pending: dict[str, str] = field(default_factory=dict)  # pod -> scheduler's message
    running: int = 0  # pods running at the last tick
    seen: dict[str, _PodState] = field(default_factory=dict)  # pod -> as last seen
    crashed: str = ""  # a TPU slice's host that failed first
    last_lines: dict[str, str] | None = None  # pod -> its last log line, near the deadline
    status: PoolStatus | None = None
    reason: str = ""
    finished: float = 0.0
    targets: tuple[str, ...] | None = None  # the nodes the run sized the pool to
    pairs: _PairRounds | None = None  # the pair rounds, once the pool's collective is done
    slice_said: str = ""  # a multi-host slice: when its last host started, as told its pods

    @property
    def name(self) -> str:
        return self.workload.pool.name

    @property
    def plan(self) -> PoolPlan:
        return PoolPlan.of(self.workload)

    def finish(self, status: PoolStatus, reason: str = "") -> None:
        self.status, self.reason, self.finished = status, reason, time.monotonic()


def _pod_state(pod: Any) -> _PodState | None:
    """What the launcher reads of one item of a pod list; None for an item that is not a Pod
    as the API defines one (no name, fields of the wrong type): it tells of no pod."""
    try:
        return _PodState.of(pod)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _obj(resp: Any) -> Any:
    """An answer read as bytes, as JSON ({} when it is none)."""
    try:
        return json.loads(_raw(resp) or b"{}")
    except (ValueError, RecursionError):
        return {}


def _raw(resp: Any) -> bytes:
    data = getattr(resp, "data", None)
    if data is None and hasattr(resp, "read"):
        data = resp.read()
    return data if isinstance(data, bytes) else str(data or "").encode()


class _ClusterRun:
    """Everything one cluster does in a run. Public methods are called from its thread."""

    def __init__(self, name: str, client: ApiClient, run: RenderedRun, pools: list[_Pool],
                 *, timeout_s: int, poll_s: float, stop: threading.Event,
                 display: Display, deadline: float = math.inf) -> None:
        from kubernetes import client as k

        self.name, self.run, self.pools = name, run, pools
        self.core, self.batch = k.CoreV1Api(client), k.BatchV1Api(client)
        self.custom = k.CustomObjectsApi(client)
        self.timeout_s, self.poll_s, self.stop, self.display = timeout_s, poll_s, stop, display
        self.ns = run.namespace
        self.selector = f"{RUN_LABEL}={run.run_id}"
        self.deadline = deadline  # monotonic: no call of the run goes past it
        self.list_problems: set[str] = set()

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One API call of the run, retried, bounded by the run's deadline and cut by stop."""
        return with_retries(fn, *args, deadline=self.deadline, stop=self.stop, **kwargs)

    # -- submit ------------------------------------------------------------------------
    def _create(self, obj: dict[str, Any]) -> None:
        """Create `obj`; what may already exist is fine: the namespace (runs share it; another
        run may make it between our read and our create) and an object of THIS run (a create
        retried after its answer was lost). Anything else already there is a conflict."""
        from kubernetes.client.exceptions import ApiException

        kind, name = obj["kind"], obj["metadata"]["name"]
        body: Any = obj  # the client takes its models or plain dicts alike
        group, version, plural = JOBSET
        # the answers are read as bytes (bounded), the objects are not needed but to check
        # whose they are
        kw: dict[str, Any] = {"_request_timeout": REQUEST_TIMEOUT_S, "_preload_content": False}
        calls: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "Namespace": (lambda: self.core.create_namespace(body, **kw),
                          lambda: self.core.read_namespace(name, **kw)),
            "ConfigMap": (lambda: self.core.create_namespaced_config_map(
                self.ns, body, **kw), lambda: self.core.read_namespaced_config_map(
                name, self.ns, **kw)),
            "Service": (lambda: self.core.create_namespaced_service(
                self.ns, body, **kw), lambda: self.core.read_namespaced_service(
                name, self.ns, **kw)),
            "Job": (lambda: self.batch.create_namespaced_job(self.ns, body, **kw),
                    lambda: self.batch.read_namespaced_job(name, self.ns, **kw)),
            "JobSet": (lambda: self.custom.create_namespaced_custom_object(
                group, version, self.ns, plural, body, **kw),
                lambda: self.custom.get_namespaced_custom_object(
                group, version, self.ns, plural, name, **kw)),
        }
        if kind not in calls:
            raise ValueError(f"the launcher cannot create a {kind}")
        create, read = calls[kind]
        if kind == "Namespace":
            try:
                self._call(read)
                return
            except ApiException as exc:
                if exc.status != 404:
                    raise
        try:
            self._call(create)
        except ApiException as exc:
            if exc.status != 409 or not self._ours(kind, _obj(self._call(read))):
                raise

    def _ours(self, kind: str, existing: Any) -> bool:
        """Whether an object found where ours was to be created may stand for it: the shared
        namespace always; otherwise one labelled with this run's id."""
        if kind == "Namespace":
            return True
        meta = existing.get("metadata") if isinstance(existing, dict) else getattr(
            existing, "metadata", None)
        labels = (meta.get("labels") if isinstance(meta, dict) else
                  getattr(meta, "labels", None)) or {}
        return isinstance(labels, dict) and labels.get(RUN_LABEL) == self.run.run_id

    def submit(self) -> bool:
        """Shared objects, then each pool's; a pool that cannot be submitted is named."""
        from kubernetes.client.exceptions import ApiException

        try:
            for obj in self.run.shared[self.name]:
                self._create(obj)
        except (ApiException, ApiTimeout, ApiStopped) as exc:
            for p in self.pools:
                p.finish(PoolStatus.ERROR, f"cluster {self.name}: creating the run's "
                         f"namespace objects failed: {words(exc)}")
            return False
        with ThreadPoolExecutor(max_workers=SUBMIT_WORKERS) as pool_submits:
            list(pool_submits.map(self._submit_pool, self.pools))
        return not self.stop.is_set()

    def _submit_pool(self, p: _Pool) -> None:
        """One pool's objects, in order (its Service before its Job)."""
        from kubernetes.client.exceptions import ApiException

        if self.stop.is_set():
            return
        p.started = time.monotonic()
        p.deadline = p.started + self.timeout_s + 15
        try:
            for obj in p.workload.objects:
                self._create(obj)
        except (ApiException, ApiTimeout, ApiStopped) as exc:
            hint = ""
            if isinstance(exc, ApiException) and exc.status == 404 and \
                    p.workload.kind == "jobset":
                hint = " (the JobSet CRD is not installed: `pulumi up` installs the JobSet " \
                       "controller on clusters with TPU pools)"
            p.finish(PoolStatus.ERROR, f"submitting {p.workload.name} failed: "
                     f"{words(exc)}{hint}")
            self.display.update(p.name, "failed", 0, p.workload.pods, p.reason[:80])
            return
        self.display.update(p.name, "pending", 0, p.workload.pods, "submitted")

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

    def _pods(self) -> list[_PodState]:
        """The run's pods, a page at a time, each kept only as what the launcher reads of it:
        memory stays flat however many pools and nodes the run has. At most MAX_POD_PAGES
        pages, and a `continue` token never followed twice (TooLong: a list that never
        ends)."""
        states: list[_PodState] = []
        token: str | None = None
        tokens: set[str] = set()
        # no list goes past the first deadline of a pool it follows: a slow answer does not
        # keep a pool from expiring on time
        deadline = min([self.deadline, *(p.deadline for p in self.pools
                                          if p.status is None and p.deadline)])
        for _ in range(MAX_POD_PAGES):
            body = with_retries(self.core.list_namespaced_pod, self.ns, deadline=deadline,
                                stop=self.stop, label_selector=self.selector, limit=PAGE_PODS,
                                _continue=token, _preload_content=False,
                                max_bytes=PAGE_MAX_BYTES, _request_timeout=REQUEST_TIMEOUT_S)
            if isinstance(body, Body) and body.truncated:
                raise TooLong(f"a page of the pod list ran past {len(body.data)} bytes "
                              "(read no further)")
            page = json.loads(_raw(body))
            if not isinstance(page, dict):
                raise ValueError("the pod list is not a PodList")
            items = page.get("items")
            states += [s for s in map(_pod_state, items if isinstance(items, list) else [])
                       if s is not None]
            meta = page.get("metadata")
            token = (meta.get("continue") if isinstance(meta, dict) else None) or None
            if not isinstance(token, str):
                return states
            if token in tokens:
                raise TooLong("the pod list gave the same continue token twice (a list that "
                              "never ends)")
            tokens.add(token)
        raise TooLong(f"the pod list did not end within {MAX_POD_PAGES} pages of "
                      f"{PAGE_PODS} pods: its continue token was followed no further")

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

    def _last_line(self, pod: str) -> str:
        try:
            resp = self._call(self.core.read_namespaced_pod_log, pod, self.ns, tail_lines=3,
                              limit_bytes=LAST_LINE_BYTES, max_bytes=LAST_LINE_BYTES,
                              _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
            lines = _raw(resp).decode("utf-8", "replace").strip().splitlines()
        except Exception as exc:
            return f"(log unreadable: {words(exc)})"
        return lines[-1].strip()[:200] if lines else ""

    def _outcome(self, pod: _PodState) -> tuple[NodeOutcome, ProbeResult | None]:
        name, node, index, code = pod.name, pod.node, pod.index, pod.exit_code
        api = ""  # what the API server did wrong reading the log (not the node's doing)
        try:
            resp = self._call(self.core.read_namespaced_pod_log, name, self.ns,
                              tail_lines=LOG_TAIL_LINES, limit_bytes=LOG_MAX_BYTES,
                              max_bytes=LOG_MAX_BYTES, _preload_content=False,
                              _request_timeout=REQUEST_TIMEOUT_S)
            log = _raw(resp).decode("utf-8", "replace")
            if isinstance(resp, Body) and resp.truncated:
                lines = log[-300:].strip().splitlines()
                api = (f"its log ran past {LOG_MAX_BYTES} bytes, the most a log read takes: "
                       f"read no further (last line read: {(lines[-1] if lines else '')[:200]})")
        except (ApiTimeout, ApiStopped) as exc:
            log, api = "", f"its log could not be read: {words(exc)}"
        except Exception as exc:
            log = f"(log unreadable: {words(exc)})"
        if api and code in (0, None):  # no report taken from it, and no fault of the node's
            return (NodeOutcome(index=index, pod=name, node=node, exit_code=code,
                                slice=pod.slice, timing=pod.timing),
                    ProbeResult(V.HOST, POD, 0, Verdict.FAIL, f"pod {name}: {api}",
                                details={"exit_code": code, "log_tail": log[-4000:],
                                         API_PROBLEM: api}))
        report = parse_host_report(log)
        outcome = NodeOutcome(index=index, pod=name, node=node, report=report, exit_code=code,
                              slice=pod.slice, timing=pod.timing)
        if report is not None and code in (0, None):
            return outcome, None
        tail = " | ".join(line.strip() for line in log.strip().splitlines()[-CRASH_LINES:])
        why = (f"pod {name} exited {code}" if report is None or code not in (0, None)
               else f"pod {name} printed no report")
        docs = len(host_documents(log))
        if report is None and code == 0:
            why = f"pod {name} printed no report" if docs == 0 else (
                f"pod {name} printed {docs} report lines where the agent prints one: its "
                "output cannot be trusted" if docs > 1 else
                f"pod {name} printed a report that does not read as one")
        return outcome, ProbeResult(V.HOST, POD, 0, Verdict.FAIL,
                                    f"{why}; last log lines: {tail or '(empty)'}",
                                    details={"exit_code": code, "log_tail": log[-4000:]})

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

    def _held_by_kueue(self, p: _Pool) -> str | None:
        """Why Kueue still holds a queued pool's Job/JobSet (None if it does not, or unread)."""
        [obj] = [o for o in p.workload.objects if o.get("kind") in ("Job", "JobSet")]
        t = REQUEST_TIMEOUT_S
        try:
            if obj["kind"] == "Job":
                job = json.loads(_raw(self._call(
                    self.batch.read_namespaced_job, p.workload.name, self.ns,
                    _preload_content=False, _request_timeout=t)))
            else:
                group, version, plural = JOBSET
                job = json.loads(_raw(self._call(
                    self.custom.get_namespaced_custom_object, group, version, self.ns, plural,
                    p.workload.name, _preload_content=False, _request_timeout=t)))
            if not isinstance(job, dict):
                return None
        except Exception:
            return None
        try:
            group, version, plural = PROVISIONING_REQUEST
            listed = _obj(self._call(self.custom.list_namespaced_custom_object, group,
                                     version, self.ns, plural, _preload_content=False,
                                     _request_timeout=t))
            reqs = [r for r in (listed.get("items") or []) if isinstance(r, dict)] if \
                isinstance(listed, dict) else []
        except Exception:
            reqs = []  # no ProvisioningRequest API, or not allowed to read it
        return held_by_kueue(job, reqs, self.timeout_s, self.ns)

    def _scheduler_event(self, pod: str) -> str:
        try:
            resp = self._call(self.core.list_namespaced_event, self.ns,
                              field_selector=f"involvedObject.name={pod}",
                              _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
            events = json.loads(_raw(resp)).get("items") or []
        except Exception:
            return ""
        msgs = [e.get("message", "") for e in events if e.get("reason") == "FailedScheduling"]
        return msgs[-1] if msgs else ""

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
