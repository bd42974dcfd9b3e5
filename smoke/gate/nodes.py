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
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
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
from smoke.cluster.nodeapi import aware_time
from smoke.cluster.objects import name_of, node_problem

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


# A proof's time may run ahead of this controller's clock by this much (two machines' clocks
# under NTP agree to well within it); further ahead is clock skew or a forged stamp: the proof
# does not count and the node is proven again (issue 35: a proof stamped a year ahead was
# never re-proven).
PROOF_SKEW_S = 300.0
RUN_ID = re.compile(r"^r\d{10}-[0-9a-f]{4}$")  # smoke.cluster.launcher.new_run_id


class Malformed(ValueError):
    """An object that does not read as a Node (smoke.cluster.objects.node_problem): skipped
    with a Warning Event and a metric, never half-read."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"node {name or '(no name)'}: {problem}")
        self.name, self.problem = name, problem


def _ts(text: object) -> datetime | None:
    """An API time with its zone (RFC 3339); None for anything else (a time without an offset
    cannot be compared with the controller's clock: Python raises TypeError)."""
    return aware_time(text)


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
    conditions: tuple[Mapping[str, Any], ...] = ()  # every condition (other agents' too)
    uid: str = ""  # metadata.uid: this Node object (a node registered again gets a new one)
    boot_id: str = ""  # status.nodeInfo.bootID: this boot of the machine

    @classmethod
    def of(cls, node: Mapping[str, Any], *, checked: bool = False) -> GateNode:
        """The node as the gate reads it; Malformed when it is not a Node as the API
        defines one (a string for its taints, a list for its annotations, ...). `checked`:
        the caller kept only nodes that read (`node_problem` is not asked again)."""
        problem = "" if checked else node_problem(node)
        if problem:
            raise Malformed(name_of(node), problem)
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
                   conditions=tuple(conditions), uid=str(meta.get("uid") or ""),
                   boot_id=str(info.get("bootID") or "") if isinstance(info, dict) else "")

    @property
    def signal(self) -> str | None:
        """What the conditions other agents set since the last proof ask for (smoke.gate.
        signals: `quarantine` or `reprove`; a condition only noted asks nothing), None when
        none: a proven node whose GPU agent raised an Xid condition is re-proven then, not at
        its interval. A condition older than the proof was there when the node passed (one
        of the proof's own second, the timestamps' grain, counts as after it)."""
        from smoke.gate.signals import NOTE, judge_conditions, strongest

        at = _ts(str((self.proof or {}).get("at", "")))
        since = [(c, _ts(str(c.get("lastTransitionTime", "")))) for c in self.conditions]
        fresh = [c for c, t in since if at is None or (t is not None and t >= at)]
        return strongest(s for s in judge_conditions(fresh) if s.action != NOTE)

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
    def proof_belongs_elsewhere(self) -> bool:
        """A readable proof that names another Node object (uid) or another boot (boot ID)."""
        proof = self.proof
        if proof is None or ("uid" not in proof and "boot" not in proof):
            return False
        return not self.proof_holds

    @property
    def tainted(self) -> bool:
        return any(t.get("key") == GATE_TAINT_KEY for t in self.taints)

    @property
    def run(self) -> str:
        return self.annotations.get(GATE_RUN_ANNOTATION, "")

    @property
    def proof(self) -> dict[str, Any] | None:
        """The recorded pass, when it reads as one (`proof_problem` is '')."""
        return None if self.proof_problem else _proof_record(self)

    @property
    def proof_problem(self) -> str:
        """'' when the node carries a proof annotation that reads as a pass this controller
        wrote; else why it does not count ('no proof' when there is none). Anyone who may
        patch nodes can write the annotation: it counts only as JSON of a passed verdict
        with a run id of the launcher's shape and a time with its UTC offset that is not
        ahead of this clock (past PROOF_SKEW_S: clock skew)."""
        problem, when = self._proof_read
        if problem or when is None or self.__dict__.get("_proof_current"):
            return problem
        ahead_s = (when - datetime.now(UTC)).total_seconds()  # the clock, while it matters
        if ahead_s > PROOF_SKEW_S:
            at = (self.proof_record or {}).get("at")
            return f"clock skew: the proof's time {at} is {ahead_s:.0f} s in the future"
        # not ahead of the clock now, so never again (time only moves on): not asked again
        self.__dict__["_proof_current"] = True
        return ""

    @property
    def _clock_bound(self) -> bool:
        """Whether what this node reads as may still change with the clock alone (a proof
        ahead of this clock counts once the clock reaches it)."""
        return bool(self.proof_problem.startswith("clock skew"))

    @cached_property
    def _proof_read(self) -> tuple[str, datetime | None]:
        """What of `proof_problem` needs no clock, read once per GateNode (issue 35: the
        controller asks it of every node several times a round): the problem, else the
        proof's time."""
        data = _proof_record(self)
        if data is None:
            return ("no proof" if GATE_PROOF_ANNOTATION not in self.annotations else
                    "the proof annotation is not a JSON object"), None
        if data.get("verdict") != "pass":
            return "the proof records no pass", None
        if not isinstance(data.get("run"), str) or not RUN_ID.match(data["run"]):
            return "the proof names no run id of the gate's", None
        at = data.get("at")
        when = _ts(at)
        if when is None:
            return f"the proof's time {str(at)[:40]!r} is not a time with its UTC offset", None
        return "", when

    @cached_property
    def opened(self) -> dict[str, Any] | None:
        # parsed once per GateNode (issue 35: `gate status` parsed each node's annotations
        # a dozen times); a GateNode is a snapshot of one resourceVersion, never changed
        try:
            data = json.loads(self.annotations.get(GATE_OPEN_ANNOTATION, ""))
        except (ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    @cached_property
    def proof_record(self) -> dict[str, Any] | None:
        """The proof annotation's JSON object, parsed once (None: none, or not an object);
        whether it counts is `proof_problem`'s, asked against the clock each time."""
        try:
            data = json.loads(self.annotations.get(GATE_PROOF_ANNOTATION, ""))
        except (ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None

    @property
    def quarantined(self) -> bool:
        return self.labels.get(SMOKE_KEY) == SMOKE_FAILED

    @property
    def state(self) -> str:
        """The gate state (the module's docstring); read once per GateNode unless the clock
        may still change it (`_clock_bound`)."""
        known = self.__dict__.get("_state")
        if known is not None:
            return str(known)
        state = self._state_now()
        if not self._clock_bound:
            self.__dict__["_state"] = state
        return state

    def _state_now(self) -> str:
        label = self.labels.get(GATE_LABEL, "")
        if self.opened is not None:
            return OPEN
        if label in (PROVING, FAILED):
            return label
        if not self.tainted:
            if label == PROVEN or self.proof is not None:
                # a pass recorded for another Node object of this name, or before a reboot:
                # unproven. A proof that does not read, or one written before verdicts
                # recorded their node (no uid, no boot ID), leaves the label standing: the
                # node is due for its re-proof at once (`proof_age_s`), idle, never evicted
                return UNPROVEN if self.proof_belongs_elsewhere else PROVEN
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


def claim_patch(node: GateNode, run_id: str, *, taint: bool = True) -> dict[str, Any]:
    """`proving` with the proof's run id, recorded before the proof is launched; guarded by
    the resourceVersion, so two controllers never both claim a node. A node without the gate
    taint (a proven node whose proof no longer holds: rebooted) gets it back (NoSchedule:
    nothing running is evicted, nothing new lands until it is proven again), unless `taint`
    is False (a shadow pool's node: the gate holds nothing)."""
    body: dict[str, Any] = {"metadata": {"resourceVersion": node.resource_version,
                                         "labels": {GATE_LABEL: PROVING},
                                         "annotations": {GATE_RUN_ANNOTATION: run_id}}}
    if taint and not node.tainted:
        body["spec"] = {"taints": [*(dict(t) for t in node.taints), gate_taint()]}
    return body


def restore_proven_patch(node: GateNode) -> dict[str, Any]:
    """A re-proof that could not run (busy after all, an infrastructure error): the node
    goes back to proven, as it was, its last proof kept."""
    return {"metadata": {"resourceVersion": node.resource_version,
                         "labels": {GATE_LABEL: PROVEN},
                         "annotations": {GATE_RUN_ANNOTATION: None}},
            "spec": {"taints": [dict(t) for t in node.taints
                                if t.get("key") != GATE_TAINT_KEY]}}


def proof_age_s(node: GateNode, now: datetime | None = None) -> float:
    """Seconds since the node's last passed proof; infinite when it has none that counts
    (`GateNode.proof_problem`: none, unreadable, a time without its offset, a time ahead of
    this clock): such a node is due for its re-proof at once."""
    when = _ts((node.proof or {}).get("at"))
    if when is None or not node.proof_holds:  # none that counts, or not this node's own
        return math.inf
    return max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())


def _proof_record(node: GateNode) -> dict[str, Any] | None:
    return node.proof_record


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
