"""The pools' gate state that `gate open` records and the controller follows (docs/gate.md,
"`gate open` and `gate close`").

    set_open(core, "accelfleet-smoke", "h100-train", {"at": ..., "by": ..., "reason": ...})
    opened = read_open(core, "accelfleet-smoke")      # {"h100-train": {...}} or None
    follower = Follower(core, namespace, pools)        # the controller, each round:
    follower.step(nodes)                               # label new nodes, open an open pool's

An open pool is a key of the ConfigMap `accelfleet-gate-pools` in the controller's namespace
(`fleet.gate.POOLS_CONFIGMAP`), its value the opening (who, when, why, JSON). The node pool's
own taint is the cloud's configuration, which neither `gate open` nor the controller changes: a
node that joins an open pool registers with the startup taint like any other, and the
controller, when it runs, opens it. While no controller runs, new nodes of an open pool stay
tainted (the gate fails closed); `gate open` again opens those present.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from fleet.gate import POOLS_CONFIGMAP
from fleet.labels import GATE_LABEL
from smoke.cluster.access import with_retries
from smoke.gate import _kube as K
from smoke.gate import lifecycle as L
from smoke.gate import nodes as N

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

    from fleet.inventory import InventoryPool

REFRESH_S = 5.0  # how often the controller reads the pools' state


def read_open(core: CoreV1Api, namespace: str, refused: list[str] | None = None
              ) -> dict[str, dict[str, Any]] | None:
    """The open pools and their openings; {} when none is open (no ConfigMap); None when the
    state could not be read (the caller keeps what it knew: never opens on a guess)."""
    try:
        cm = K.raw(with_retries(core.read_namespaced_config_map, POOLS_CONFIGMAP, namespace,
                                _preload_content=False, _request_timeout=K.REQUEST_TIMEOUT_S))
    except Exception as exc:
        if K.status_of(exc) == 404:
            return {}
        if refused is not None:
            refused.append(K.refused(exc, f"reading the open pools (ConfigMap "
                                          f"{namespace}/{POOLS_CONFIGMAP})"))
        return None
    data = cm.get("data")
    out: dict[str, dict[str, Any]] = {}
    for pool, text in (data.items() if isinstance(data, Mapping) else ()):
        try:
            record = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            record = None
        out[str(pool)] = record if isinstance(record, dict) else {"reason": "unreadable"}
    return out


def set_open(core: CoreV1Api, namespace: str, pool: str, record: Mapping[str, Any] | None
             ) -> None:
    """Record `pool` open (`record`: who, when, why) or, with None, closed."""
    value = None if record is None else json.dumps(dict(record), sort_keys=True)
    try:
        with_retries(core.patch_namespaced_config_map, POOLS_CONFIGMAP, namespace,
                     {"data": {pool: value}}, _preload_content=False,
                     _request_timeout=K.REQUEST_TIMEOUT_S)
        return
    except Exception as exc:
        if K.status_of(exc) != 404:
            raise
    if record is None:
        return  # nothing recorded: nothing to close
    body = {"metadata": {"name": POOLS_CONFIGMAP, "namespace": namespace,
                         "labels": {"app.kubernetes.io/name": "accelfleet-gate"}},
            "data": {pool: value}}
    with_retries(core.create_namespaced_config_map, namespace, body, _preload_content=False,
                 _request_timeout=K.REQUEST_TIMEOUT_S)


class Follower:
    """What the controller does each round before it plans proofs: every gated node it sees
    for the first time is labelled `unproven` (its condition Unknown), and every waiting
    node of an open pool is opened, as `gate open` opens the nodes present."""

    def __init__(self, core: CoreV1Api, namespace: str,
                 pools: Mapping[str, InventoryPool]) -> None:
        self.core, self.namespace, self.pools = core, namespace, pools
        self.opened: dict[str, dict[str, Any]] = {}
        self.read_at: float | None = None
        self.errors: list[str] = []

    def is_open(self, pool: str) -> bool:
        return pool in self.opened

    def refresh(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self.read_at is not None and now - self.read_at < REFRESH_S:
            return
        refusals: list[str] = []
        got = read_open(self.core, self.namespace, refusals)
        if got is not None:
            self.opened = {p: r for p, r in got.items() if p in self.pools}
            self.read_at = now
        elif any(refusals):  # a refusal is said (in the summary), never passed over
            raise PermissionError(next(r for r in refusals if r))

    def step(self, nodes: list[dict[str, Any]]) -> None:
        self.refresh()
        fresh = False
        for raw in nodes:
            node = N.GateNode.of(raw)
            pool = self.pools.get(node.pool)
            if pool is None or pool.gate is None:
                continue
            if self.is_open(node.pool) and node.state == N.UNPROVEN and not fresh:
                # about to open a node: on the state as it is now, not as last read (a
                # `gate close` meanwhile must not be undone)
                self.read_at, fresh = None, True
                self.refresh()
            if self.is_open(node.pool) and node.state == N.UNPROVEN:
                record = self.opened[node.pool]
                K.patch_node(self.core, node.name, partial(L.open_patch, record=record))
                K.node_event(self.core, raw, "GateOpened", "accelfleet gate: pool "
                             f"{node.pool} is open ({record.get('by', '?')}: "
                             f"{str(record.get('reason', ''))[:300]}); the node takes work "
                             "without a proof", warning=True)
                continue
            shadow = pool.gate.shadow
            change = L.mark_patch(raw, shadow=shadow)
            if change is None:
                continue
            if K.patch_node(self.core, node.name, partial(L.mark_patch, shadow=shadow)) \
                    is not None and change["metadata"]["labels"].get(GATE_LABEL) == L.UNPROVEN \
                    and node.condition is None:  # a reason already there (UnitFailed) stays
                K.set_condition(self.core, node.name, L.condition(
                    "Unknown", "AwaitingProof", "accelfleet gate: waiting for its proof"
                    + (" (shadow mode: nothing is held)" if shadow else
                       "; it takes no work until proven")))
