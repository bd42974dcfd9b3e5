"""The gate controller's options (`GateOptions`) and what it says of each node and of a run
(`GateSummary`, `NodeResult`); controller.py exports them."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fleet import gate as G
from fleet import smoke_defaults as SD
from smoke.gate._proof import PASS

LEASE_NAME = "accelfleet-gate"


def _identity() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class GateOptions:
    namespace: str = SD.NAMESPACE  # where proofs run and the Lease lives
    once: bool = False  # prove the gated nodes present now, then return
    identity: str = field(default_factory=_identity)
    elect: bool = True  # leader election on the Lease (False: act alone, tests of one)
    lease_name: str = LEASE_NAME
    lease_s: float = 15.0
    timeout_s: int = SD.TIMEOUT_S  # one proof's deadline
    tier: int | None = None  # None: each pool's gate.max_tier
    images: Mapping[str, str] = field(default_factory=dict)
    image_pull_secrets: tuple[str, ...] = ()  # every proof pod's (the stack's gate.image_...)
    parallel: int = 16  # proofs at once
    batch: int = 16  # a pool's ready new nodes proven together, at most this many a proof
    retry_first_s: float = 5.0  # infrastructure errors: backoff from here, doubling ...
    retry_max_s: float = 300.0  # ... up to here
    once_wait_s: float | None = None  # --once: how long a node may take to turn Ready
    poll_s: float = 0.5  # the launcher's pod polling
    watch_timeout_s: int = 300
    history: Path | None = None  # proofs recorded here (None with record_history: default)
    record_history: bool = False
    sync_wait_s: float = 30.0  # --once: the node list must answer within this (else exit 2)
    breaker_ratio: float = 0.5  # quarantine stops past this share of failed proofs (_cap)
    breaker_window_s: float = 1800.0
    breaker_min_verdicts: int = 4
    # A round (follow the pools, plan proofs) runs on a change (a node's, a proof's end) and,
    # when nothing changed, at least every `round_every_s` (time alone: a re-proof falls due,
    # a backoff or a busy node's wait ends). Issue 35: at 5,000 nodes a round of every node
    # every 0.5 s was most of the idle controller's CPU. Changes coalesce: at most one round
    # every `round_min_s` (on the real control plane, 1,000 nodes turning NotReady woke 406
    # rounds a minute, 22% of a core, without it); a new node's proof starts at most this
    # much later.
    round_every_s: float = 5.0
    round_min_s: float = 1.0
    # the DCGM exporter of each proven GPU node, read between proofs (smoke.gate._exporter);
    # None: not read
    exporter_namespace: str | None = G.DCGM_EXPORTER_NAMESPACE
    exporter_selector: str = G.DCGM_EXPORTER_SELECTOR
    exporter_interval_s: float | None = G.EXPORTER_INTERVAL_S  # one read per node, at most
    exporter_timeout_s: float = 10.0  # each call, its whole answer read
    exporter_max_bytes: int = 4 * 2**20  # 8 GPUs x ~100 series is ~100 KiB


@dataclass
class NodeResult:
    """The last word on one node in this controller's life."""

    node: str
    pool: str
    verdict: str  # pass, fail, infra, gone, waiting
    reason: str
    run_id: str = ""
    ready_to_proven_s: float | None = None
    proof_s: float = 0.0  # the whole proof: submit, schedule, run, judge, clean up
    probe_s: float | None = None  # the agent's own run on the node (its pod's run time)
    proven_at: float | None = None  # wall clock (time.time()) of the pass being recorded


@dataclass
class GateSummary:
    """What a run of the controller did, node by node (for `--once`: every node it had to
    prove); `ok`: every such node passed."""

    cluster: str
    results: dict[str, NodeResult] = field(default_factory=dict)
    proofs: int = 0  # proofs launched
    lists: int = 0  # full node lists (1 + one per 410)
    leader: bool = False
    errors: list[str] = field(default_factory=list)
    api_problems: list[str] = field(default_factory=list)  # the API failed it (exit 2)
    targets: tuple[str, ...] = ()  # --once: the nodes it had to prove
    unsynced: bool = False  # --once: the nodes were never listed (no targets known)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.unsynced and all(
            r.verdict == PASS for r in self.results.values()) and all(
            t in self.results for t in self.targets)
