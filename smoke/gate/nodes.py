"""What the gate reads of a node and writes on it (the contract is `fleet.labels`' GATE_*).

A node of a gated pool is in one of these states (`GateNode.state`):
- `unproven`: it carries the gate taint and no proof has started (or the last one was cut
  short by an infrastructure error: it will be tried again);
- `proving`: the controller claimed it (label `proving`, annotation `gate-run` = the proof's
  run id) before it launched the proof;
- `proven`: the taint is gone, the proof recorded (GATE_PROOF_ANNOTATION) for this very node:
  a verdict belongs to the Node object's uid and the machine's boot ID
  (`status.nodeInfo.bootID`, which the kubelet reports and which changes on every reboot,
  auto-repair included) recorded in the proof; another Node object of that name (deleted and
  registered again) or the same node after a reboot is `unproven`, taken back (the gate taint
  restored when it is claimed) and proven afresh;
- `failed`: the proof failed; the taint stays, the node condition says why;
- `open`: the pool's gate was opened by hand (`gate open`), recorded on the node;
- `ungated`: not a node of a gated pool (or a gated pool's node without the taint and no
  proof: created before the gate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fleet.labels import (
    GATE_CONDITION,
    GATE_LABEL,
    GATE_OPEN_ANNOTATION,
    GATE_PROOF_ANNOTATION,
    GATE_RUN_ANNOTATION,
    GATE_TAINT_EFFECT,
    GATE_TAINT_KEY,
    GATE_TAINT_VALUE,
    POOL_LABEL,
    SMOKE_FAILED,
    SMOKE_KEY,
    TEAM_LABEL,
)

HOSTNAME_LABEL = "kubernetes.io/hostname"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"  # a multi-host TPU slice is one node pool
PROVING, PROVEN, FAILED, OPEN = "proving", "proven", "failed", "open"
UNPROVEN, UNGATED = "unproven", "ungated"
STATES = (UNPROVEN, PROVING, PROVEN, FAILED, OPEN)


def gate_taint() -> dict[str, str]:
    return {"key": GATE_TAINT_KEY, "value": GATE_TAINT_VALUE, "effect": GATE_TAINT_EFFECT}


def gate_toleration() -> dict[str, str]:
    """What a proof pod carries: it tolerates the gate taint, and only proof pods do."""
    return {"key": GATE_TAINT_KEY, "operator": "Equal", "value": GATE_TAINT_VALUE,
            "effect": GATE_TAINT_EFFECT}


def _ts(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class GateNode:
    """One node as the gate sees it."""

    name: str
    pool: str
    team: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    ready: bool
    ready_since: datetime | None
    created: datetime | None
    resource_version: str
    condition: Mapping[str, Any] | None  # GATE_CONDITION, when set
    uid: str = ""  # metadata.uid: this Node object (a node registered again gets a new one)
    boot_id: str = ""  # status.nodeInfo.bootID: this boot of the machine

    @classmethod
    def of(cls, node: Mapping[str, Any]) -> GateNode:
        meta = node.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        gate = next((c for c in conditions if c.get("type") == GATE_CONDITION), None)
        info = (node.get("status") or {}).get("nodeInfo") or {}
        return cls(name=str(meta.get("name", "")), pool=labels.get(POOL_LABEL, ""),
                   team=labels.get(TEAM_LABEL, ""), labels=labels,
                   annotations=dict(meta.get("annotations") or {}),
                   taints=tuple((node.get("spec") or {}).get("taints") or ()),
                   ready=ready is not None and ready.get("status") == "True",
                   ready_since=_ts((ready or {}).get("lastTransitionTime")),
                   created=_ts(meta.get("creationTimestamp")),
                   resource_version=str(meta.get("resourceVersion", "")), condition=gate,
                   uid=str(meta.get("uid") or ""),
                   boot_id=str(info.get("bootID") or "") if isinstance(info, dict) else "")

    @property
    def identity(self) -> dict[str, str]:
        """What a verdict belongs to (recorded in the proof): this Node object, this boot."""
        return {"uid": self.uid, "boot": self.boot_id}

    @property
    def proof_holds(self) -> bool:
        """A recorded passed proof that belongs to this node as it is now: same Node object
        (uid), same boot (boot ID). A proof without them (or with others) holds for nothing."""
        proof = self.proof
        return proof is not None and proof.get("uid") == self.uid and \
            proof.get("boot") == self.boot_id

    @property
    def tainted(self) -> bool:
        return any(t.get("key") == GATE_TAINT_KEY for t in self.taints)

    @property
    def run(self) -> str:
        return self.annotations.get(GATE_RUN_ANNOTATION, "")

    @property
    def proof(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.annotations.get(GATE_PROOF_ANNOTATION, ""))
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def opened(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.annotations.get(GATE_OPEN_ANNOTATION, ""))
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def quarantined(self) -> bool:
        return self.labels.get(SMOKE_KEY) == SMOKE_FAILED

    @property
    def state(self) -> str:
        label = self.labels.get(GATE_LABEL, "")
        if self.opened is not None:
            return OPEN
        if label in (PROVING, FAILED):
            return label
        if not self.tainted:
            if label == PROVEN or self.proof is not None:
                # a pass recorded for another Node object of this name, or before a reboot
                return PROVEN if self.proof_holds else UNPROVEN
            return UNGATED
        return UNPROVEN

    @property
    def slice(self) -> str:
        """The GKE node pool (a multi-host TPU slice is one); '' elsewhere."""
        return self.labels.get(NODEPOOL_LABEL, "")


def proven_patch(node: GateNode, proof: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pass: the gate taint lifted, `proven`, the proof recorded; guarded by the node's
    resourceVersion (a strategic merge patch: a Node's taints are replaced whole). None (no
    patch) unless the node is still the one the proof ran on: claimed by the proof's run, the
    Node object (uid) and the boot (boot ID) the proof records, which the controller took
    from the node it claimed; a node deleted and registered again, or rebooted, meanwhile is
    not lifted on another machine's verdict."""
    if node.run != proof.get("run") or proof.get("uid") != node.uid or \
            proof.get("boot") != node.boot_id:
        return None
    return {"metadata": {"resourceVersion": node.resource_version,
                         "labels": {GATE_LABEL: PROVEN},
                         "annotations": {GATE_PROOF_ANNOTATION: json.dumps(
                             dict(proof), sort_keys=True), GATE_RUN_ANNOTATION: None}},
            "spec": {"taints": [dict(t) for t in node.taints
                                if t.get("key") != GATE_TAINT_KEY]}}


def claim_patch(node: GateNode, run_id: str) -> dict[str, Any]:
    """`proving` with the proof's run id, recorded before the proof is launched; guarded by
    the resourceVersion, so two controllers never both claim a node. A node without the gate
    taint (a proven node whose proof no longer holds: rebooted) gets it back (NoSchedule:
    nothing running is evicted, nothing new lands until it is proven again)."""
    body: dict[str, Any] = {"metadata": {"resourceVersion": node.resource_version,
                                         "labels": {GATE_LABEL: PROVING},
                                         "annotations": {GATE_RUN_ANNOTATION: run_id}}}
    if not node.tainted:
        body["spec"] = {"taints": [*(dict(t) for t in node.taints), gate_taint()]}
    return body


def reproof_claim_patch(node: GateNode, run_id: str) -> dict[str, Any]:
    """A proven node taken back for its scheduled re-proof: the gate taint back (NoSchedule:
    nothing running is evicted; nothing new lands), `proving` with the run id."""
    return claim_patch(node, run_id)


def restore_proven_patch(node: GateNode) -> dict[str, Any]:
    """A re-proof that could not run (busy after all, an infrastructure error): the node
    goes back to proven, as it was, its last proof kept."""
    return {"metadata": {"resourceVersion": node.resource_version,
                         "labels": {GATE_LABEL: PROVEN},
                         "annotations": {GATE_RUN_ANNOTATION: None}},
            "spec": {"taints": [dict(t) for t in node.taints
                                if t.get("key") != GATE_TAINT_KEY]}}


def proof_age_s(node: GateNode, now: datetime | None = None) -> float | None:
    """Seconds since the node's last passed proof (None: no readable proof)."""
    when = _ts(str((node.proof or {}).get("at", "")))
    if when is None:
        return None
    return ((now or datetime.now(UTC)) - when).total_seconds()


def unclaim_patch(node: GateNode) -> dict[str, Any]:
    """Back to unproven (an infrastructure error, or a proof that a restart abandoned)."""
    return {"metadata": {"resourceVersion": node.resource_version,
                         "labels": {GATE_LABEL: None},
                         "annotations": {GATE_RUN_ANNOTATION: None}}}


def failed_patch(node: GateNode) -> dict[str, Any]:
    """The fail: the taint stays (restored, were it lifted), `failed`."""
    taints = [dict(t) for t in node.taints]
    if not node.tainted:
        taints.append(gate_taint())
    return {"metadata": {"resourceVersion": node.resource_version,
                         "labels": {GATE_LABEL: FAILED},
                         "annotations": {GATE_RUN_ANNOTATION: None}},
            "spec": {"taints": taints}}


def condition(ok: bool, reason: str, message: str) -> dict[str, Any]:
    """The GATE_CONDITION node condition (nodes/status)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"type": GATE_CONDITION, "status": "True" if ok else "False", "reason": reason,
            "message": message[:1000], "lastTransitionTime": now, "lastHeartbeatTime": now}
