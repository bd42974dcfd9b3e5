"""The quarantine cap and the circuit breaker of the gate's pools (issue 35).

The cap (`gate.max_quarantine`) is counted atomically: proofs of one pool that end together
quarantine one at a time, each counting the quarantines before it (a lock per pool around
"count what is quarantined, then quarantine"; across replicas only the leader acts). Three
proofs that ended together with a cap of 1 quarantined all three before.

It is counted in the pool's capacity: a pool is one machine type, so a share of its nodes is
the same share of its accelerators; a multi-host TPU slice is quarantined whole and counts
as one slice of the pool's slices (`smoke.cluster.quarantine`), never as its hosts' cordons.

The circuit breaker: when more than `ratio` (default half) of a pool's judged proofs within
`window_s` failed, with at least `min_verdicts` of them, the cause is likely not the nodes (a
proof image, a driver, a firmware roll-out, a wrong threshold): the gate stops quarantining
that pool's nodes (they still fail and stay gated: the gate fails closed) and says so with a
Warning Event on each node held back and the metric `accelfleet_gate_quarantine_breaker_open`.
It closes by itself once the window's share falls back to `ratio` or below (the nodes are
gated whatever it does, so no human reset is needed to stay safe). Practice this follows:
NVIDIA NVSentinel's fault-quarantine circuit breaker, which stops cordoning once more than
a percentage (50 in its example) of the cluster's nodes were cordoned within a window (5
minutes), NVIDIA/NVSentinel `docs/configuration/fault-quarantine.md` at 00b7ca12, read
2026-11-28. Here the share is of proofs, not of nodes, and per pool: a proof failing on most
of a pool's new nodes at once is the signature of a shared cause, and a pool is where a bad
image or driver lands whole. The window is longer than NVSentinel's (30 minutes) because a
proof takes minutes, and the floor of 4 verdicts keeps one or two early failures (a real bad
node in a small scale-up) from tripping it."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from smoke.gate._proof import FAIL, PASS

if TYPE_CHECKING:
    from fleet.inventory import InventoryPool
    from smoke.gate.controller import Gate

BREAKER_RATIO = 0.5
BREAKER_WINDOW_S = 1800.0
BREAKER_MIN_VERDICTS = 4


@dataclass
class _Pool:
    lock: threading.Lock = field(default_factory=threading.Lock)
    verdicts: deque[tuple[float, str]] = field(default_factory=deque)
    open: bool = False


class Caps:
    """Per pool: the lock its quarantines take, its recent verdicts, its breaker."""

    def __init__(self, *, ratio: float = BREAKER_RATIO, window_s: float = BREAKER_WINDOW_S,
                 min_verdicts: int = BREAKER_MIN_VERDICTS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ratio, self.window_s, self.min_verdicts = ratio, window_s, min_verdicts
        self.clock = clock
        self._lock = threading.Lock()
        self._pools: dict[str, _Pool] = {}
        self.held: dict[tuple[str, str], int] = {}  # (pool, why: cap | breaker) -> nodes

    def _pool(self, name: str) -> _Pool:
        with self._lock:
            return self._pools.setdefault(name, _Pool())

    def lock(self, pool: str) -> threading.Lock:
        """Held around one pool's count-then-quarantine."""
        return self._pool(pool).lock

    def judged(self, pool: str, verdicts: Iterable[str]) -> None:
        """A proof's verdicts on its nodes (pass and fail count; infra and unit do not)."""
        now = self.clock()
        p = self._pool(pool)
        with self._lock:
            p.verdicts.extend((now, v) for v in verdicts if v in (PASS, FAIL))

    def breaker(self, pool: str) -> tuple[bool, int, int]:
        """(open, failed, judged) over the window: open when more than `ratio` of at least
        `min_verdicts` verdicts failed."""
        p = self._pool(pool)
        with self._lock:
            horizon = self.clock() - self.window_s
            while p.verdicts and p.verdicts[0][0] < horizon:
                p.verdicts.popleft()
            judged = len(p.verdicts)
            failed = sum(1 for _, v in p.verdicts if v == FAIL)
            p.open = judged >= self.min_verdicts and failed > self.ratio * judged
            return p.open, failed, judged

    def open_pools(self) -> dict[str, bool]:
        with self._lock:
            return {name: p.open for name, p in sorted(self._pools.items())}

    def count_held(self, pool: str, why: str, nodes: int) -> None:
        if nodes:
            with self._lock:
                self.held[(pool, why)] = self.held.get((pool, why), 0) + nodes


def quarantine_failed(gate: Gate, report: Any, pool: InventoryPool, failed: list[str]) -> None:
    """Quarantine a proof's failed nodes within the pool's cap, one proof of the pool at a
    time (the cap counted atomically), unless the pool's breaker is open (then a Warning
    Event on each node held back)."""
    from smoke.cluster.quarantine import Cap, quarantine

    assert pool.gate is not None
    caps = gate.caps
    with caps.lock(pool.name):
        tripped, bad, judged = caps.breaker(pool.name)
        if tripped:
            caps.count_held(pool.name, "breaker", len(failed))
            for name in failed:
                gate.guard.event(name, "GateQuarantineHeld", "accelfleet gate: not "
                                 f"quarantined: {bad} of the {judged} proofs of pool "
                                 f"{pool.name} in the last {caps.window_s / 60:g} min "
                                 f"failed, more than the breaker's {caps.ratio:.0%}: the "
                                 "cause is likely not the nodes (the proof image, a driver, "
                                 "a threshold); the node stays gated. Find the shared cause, "
                                 "then `accelfleet gate status`")
            return
        size = sum(1 for n in gate._nodes() if n.pool == pool.name)
        pools = tuple(replace(p, expected_pods=max(p.expected_pods, size))
                      for p in report.pools)
        try:
            taken = quarantine(replace(report, pools=pools), {gate.cluster: gate.client},
                               pools={pool.name: pool},
                               cap=Cap.parse(pool.gate.quarantine_cap))
        except Exception as exc:
            gate.summary.errors.append(f"quarantine of {pool.name}: {type(exc).__name__}")
            return
    caps.count_held(pool.name, "cap", len(taken.of("over-cap")))
    gate.summary.errors += [a.line() for a in taken.of("error")]
