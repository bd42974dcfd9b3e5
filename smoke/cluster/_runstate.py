"""A launcher run's state (smoke.cluster.launcher): each pool's as the run follows it, a
fabric pool's pair rounds, and one cluster's side of the run (_ClusterBase: its clients,
namespace, pools and deadline, and the one way its calls are made), which the submit step
(smoke.cluster._submit), the reads (smoke.cluster._reads) and the launcher's own follow and
cleanup share."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fleet.labels import RUN_LABEL
from smoke.cluster import _pairs as PR
from smoke.cluster._pods import _PodState
from smoke.cluster._rejudge import PoolPlan
from smoke.cluster.access import with_retries
from smoke.cluster.run import Check, NodeOutcome, PoolStatus

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from smoke.cluster.workload import PoolWorkload, RenderedRun

JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
REQUEST_TIMEOUT_S = (5.0, 30.0)  # (connect, read); the whole call within _api.CALL_CAP_S


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


class _ClusterBase:
    """One cluster's side of a run: its clients, namespace, pools and deadline, and the one
    way each of its steps calls the API."""

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
