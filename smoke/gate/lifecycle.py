"""A gated node's lifecycle as patches (docs/gate.md, "A node's life under the gate").

    unproven ──► proving ──┬─► proven
        ▲                  └─► failed ──(smoke release, gate open + close, gate run --once)──┐
        └────────────────────────────────────────────────────────────────────────────────────┘

Each state is visible to `kubectl`: the label `accelfleet.io/gate` (`unproven`, `proving`,
`proven`, `failed`, `open`) and the node condition `AccelfleetProof` (Unknown while unproven or
proving, True proven, False failed). A node leaves `failed` only for `unproven`, that is for a
fresh proof: nothing here puts a failed node back in service.

A failed node leaves the cluster-autoscaler's startup-taint prefix: its startup taint is
replaced by the gate's own `accelfleet.io/gate=failed:NoSchedule` (no autoscaler prefix: the
node counts as Ready, so it never holds the autoscaler's unready limits or Karpenter's pending
pods) and it is cordoned. The pool's `gate.on_fail` says what else: `keep` annotates it so that
neither the cluster-autoscaler nor Karpenter removes it (kept for diagnosis); `replace` leaves it
unprotected, so the autoscaler removes the empty node and brings a new one. What the gate did
(the cordon, the annotations) is recorded on the node (`accelfleet.io/gate-undo`), so a fresh
proof undoes exactly that and nothing somebody else set.

Plain dict patches, stdlib and `fleet` only: `smoke.cluster.release` (`smoke release`) uses
them too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fleet.labels import (
    GATE_CONDITION,
    GATE_LABEL,
    GATE_MODE_LABEL,
    GATE_OPEN_ANNOTATION,
    GATE_PROOF_ANNOTATION,
    GATE_RUN_ANNOTATION,
    GATE_TAINT_EFFECT,
    GATE_TAINT_KEY,
    GATE_TAINT_VALUE,
    GATE_UNDO_ANNOTATION,
    SMOKE_FAILED,
    SMOKE_KEY,
    STARTUP_TAINT_PREFIX,
)
from fleet.quarantine_cap import parse_cap

UNPROVEN, PROVING, PROVEN, FAILED, OPEN = "unproven", "proving", "proven", "failed", "open"
SHADOW = "shadow"

# The failed node's taint: the gate's own key, outside every autoscaler startup or status
# taint prefix (kubernetes/autoscaler cluster-autoscaler/utils/taints/taints.go: `ignore-taint.`,
# `startup-taint.` and `status-taint.cluster-autoscaler.kubernetes.io/`, read 2026-11-28 at
# 0af55ac5aff4ee6935ceefd6d84b4a23f3c0fa90), so the node is Ready to the autoscaler and simply
# unschedulable to the pods that do not tolerate it.
FAILED_TAINT_KEY = GATE_LABEL
FAILED_TAINT_VALUE = FAILED
# `on_fail: keep`: the annotations each autoscaler documents for "do not remove this node":
# cluster-autoscaler (its FAQ, "How can I prevent Cluster Autoscaler from scaling down a
# particular node?", kubernetes/autoscaler 55c37cd5eb550756c5ccc5a89e9068d77797e575; GKE's
# autoscaler and cluster-autoscaler on EKS are builds of it) and Karpenter (`karpenter.sh/
# do-not-disrupt` on the Node blocks voluntary disruption: kubernetes-sigs/karpenter
# pkg/controllers/state/statenode.go `ValidateNodeDisruptable`, at
# 2266468104f36373ed002241afaee2d3bbc26078, main after v1.14.0, read 2026-11-28).
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
KEEP_ANNOTATIONS = {SCALE_DOWN_DISABLED: "true", DO_NOT_DISRUPT: "true"}
ON_FAIL = ("keep", "replace")


def failed_taint() -> dict[str, str]:
    return {"key": FAILED_TAINT_KEY, "value": FAILED_TAINT_VALUE, "effect": GATE_TAINT_EFFECT}


def startup_taint() -> dict[str, str]:
    return {"key": GATE_TAINT_KEY, "value": GATE_TAINT_VALUE, "effect": GATE_TAINT_EFFECT}


def _meta(node: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = node.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(node: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = node.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    taints = _spec(node).get("taints")
    return [dict(t) for t in taints if isinstance(t, Mapping)] if isinstance(taints, list) \
        else []


def _annotations(node: Mapping[str, Any]) -> Mapping[str, Any]:
    ann = _meta(node).get("annotations")
    return ann if isinstance(ann, Mapping) else {}


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = _meta(node).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def undo_record(node: Mapping[str, Any]) -> dict[str, Any]:
    """What the gate's failure did to the node: {"cordoned": bool, "annotations": [keys]};
    anything unreadable (anyone who may patch nodes can write it) reads as nothing done."""
    try:
        data = json.loads(str(_annotations(node).get(GATE_UNDO_ANNOTATION) or "{}"))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    keys = data.get("annotations")
    return {"cordoned": data.get("cordoned") is True,
            "annotations": [k for k in keys if k in KEEP_ANNOTATIONS]
            if isinstance(keys, list) else []}


def is_startup_taint(key: str) -> bool:
    return key.startswith(STARTUP_TAINT_PREFIX)


def failed_patch(node: Mapping[str, Any], on_fail: str) -> dict[str, Any]:
    """The fail: `failed`; the startup taint replaced by the gate's own and the node cordoned;
    `on_fail: keep` adds the autoscalers' keep-this-node annotations. The last passed proof
    goes (a failed node has none that counts). Guarded by the resourceVersion."""
    taints = [t for t in _taints(node) if t.get("key") != GATE_TAINT_KEY]
    if not any(t.get("key") == FAILED_TAINT_KEY for t in taints):
        taints.append(failed_taint())
    undo = undo_record(node)
    cordoned = bool(undo.get("cordoned")) or not _spec(node).get("unschedulable")
    ann = _annotations(node)
    added = set(undo.get("annotations") or [])  # only ever KEEP_ANNOTATIONS' keys
    annotations: dict[str, Any] = {GATE_RUN_ANNOTATION: None, GATE_PROOF_ANNOTATION: None}
    if on_fail == "keep":
        for key, value in KEEP_ANNOTATIONS.items():
            if key not in ann:
                annotations[key] = value
                added.add(key)
    else:  # replace: what the gate set to keep it goes; somebody else's stays
        for key in added & set(KEEP_ANNOTATIONS):
            annotations[key] = None
        added -= set(KEEP_ANNOTATIONS)
    annotations[GATE_UNDO_ANNOTATION] = json.dumps(
        {"cordoned": cordoned, "annotations": sorted(added), "on_fail": on_fail},
        sort_keys=True)
    return {"metadata": {"resourceVersion": _meta(node).get("resourceVersion"),
                         "labels": {GATE_LABEL: FAILED}, "annotations": annotations},
            "spec": {"taints": taints, "unschedulable": True}}


def fresh_proof_changes(node: Mapping[str, Any]) -> dict[str, Any]:
    """The changes that send a node back to `unproven` for a fresh proof (`smoke release`,
    `gate close`, `gate run --once` on a failed node): what the gate's failure did is undone
    (its taint, its cordon, its annotations, each only if the gate set it), the startup taint
    is back, the label says `unproven`, no proof stands. A patch body without the guard."""
    undo = undo_record(node)
    taints = [t for t in _taints(node) if t.get("key") != FAILED_TAINT_KEY]
    if not any(t.get("key") == GATE_TAINT_KEY for t in taints):
        taints.append(startup_taint())
    annotations: dict[str, Any] = {GATE_UNDO_ANNOTATION: None, GATE_RUN_ANNOTATION: None,
                                   GATE_PROOF_ANNOTATION: None}
    for key in undo["annotations"] if undo else []:
        annotations[key] = None
    spec: dict[str, Any] = {"taints": taints}
    if undo.get("cordoned") and _spec(node).get("unschedulable"):
        spec["unschedulable"] = None
    return {"metadata": {"labels": {GATE_LABEL: UNPROVEN}, "annotations": annotations},
            "spec": spec}


def fresh_proof_patch(node: Mapping[str, Any]) -> dict[str, Any]:
    """`fresh_proof_changes`, guarded by the node's resourceVersion."""
    body = fresh_proof_changes(node)
    body["metadata"]["resourceVersion"] = _meta(node).get("resourceVersion")
    return body


def is_enforced_gate_node(node: Mapping[str, Any]) -> bool:
    """A node the gate holds (enforcing): it carries the gate's label, and is not shadowed."""
    labels = _labels(node)
    return bool(labels.get(GATE_LABEL)) and labels.get(GATE_MODE_LABEL) != SHADOW


def mark_patch(node: Mapping[str, Any], *, shadow: bool) -> dict[str, Any] | None:
    """A gated node as the controller first sees it: labelled `unproven` when it waits for
    its first proof (held by the startup taint, or any unproven node of a shadow pool), and
    `accelfleet.io/gate-mode=shadow` on a shadow pool's node (removed once the pool
    enforces). None: nothing to change."""
    labels = _labels(node)
    tainted = any(t.get("key") == GATE_TAINT_KEY for t in _taints(node))
    want: dict[str, Any] = {}
    if not labels.get(GATE_LABEL) and (shadow or tainted) \
            and not _annotations(node).get(GATE_PROOF_ANNOTATION):
        want[GATE_LABEL] = UNPROVEN
    if shadow and labels.get(GATE_MODE_LABEL) != SHADOW:
        want[GATE_MODE_LABEL] = SHADOW
    if not shadow and GATE_MODE_LABEL in labels:
        want[GATE_MODE_LABEL] = None
    if not want:
        return None
    return {"metadata": {"resourceVersion": _meta(node).get("resourceVersion"),
                         "labels": want}}


def condition(status: str, reason: str, message: str) -> dict[str, Any]:
    """The AccelfleetProof node condition (nodes/status): True, False or Unknown."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"type": GATE_CONDITION, "status": status, "reason": reason,
            "message": message[:1000], "lastTransitionTime": now, "lastHeartbeatTime": now}


def shadow_failed_patch(node: Mapping[str, Any]) -> dict[str, Any]:
    """A failed proof in shadow mode: `failed` on the label only; no taint, no cordon."""
    return {"metadata": {"resourceVersion": _meta(node).get("resourceVersion"),
                         "labels": {GATE_LABEL: FAILED},
                         "annotations": {GATE_RUN_ANNOTATION: None,
                                         GATE_PROOF_ANNOTATION: None}}}


def open_patch(node: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """`gate open`: the node takes work without a proof. The startup taint goes, and what a
    failure did (its taint, its cordon, its annotations); the open record notes the state the
    node was in, so `gate close` knows whether a proof still stands."""
    labels = _labels(node)
    was = str(labels.get(GATE_LABEL) or UNPROVEN)
    if was == OPEN:
        was = str(_open_record(node).get("was") or UNPROVEN)
    body = fresh_proof_changes(node)
    body["spec"]["taints"] = [t for t in body["spec"]["taints"]
                              if t.get("key") != GATE_TAINT_KEY]
    ann = body["metadata"]["annotations"]
    if was == PROVEN:  # a standing proof survives the opening
        ann.pop(GATE_PROOF_ANNOTATION, None)
    ann[GATE_OPEN_ANNOTATION] = json.dumps({**dict(record), "was": was}, sort_keys=True)
    body["metadata"]["labels"] = {GATE_LABEL: OPEN}
    body["metadata"]["resourceVersion"] = _meta(node).get("resourceVersion")
    return body


def _open_record(node: Mapping[str, Any]) -> dict[str, Any]:
    try:
        data = json.loads(str(_annotations(node).get(GATE_OPEN_ANNOTATION) or "{}"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def close_patch(node: Mapping[str, Any], on_fail: str = "keep") -> dict[str, Any] | None:
    """`gate close`: a node opened while proven goes back to proven; a node under `smoke run`'s
    quarantine back to failed (`smoke release` sends it to its fresh proof: no proof lands on
    a quarantined node); any other (opened unproven, opened after a failure, or never proven)
    to `unproven`, for a fresh proof. None: not opened, and already held or proven."""
    record = _open_record(node)
    labels = _labels(node)
    tainted = any(t.get("key") == GATE_TAINT_KEY for t in _taints(node))
    if not record and (tainted or labels.get(GATE_LABEL) in (PROVEN, PROVING, FAILED)):
        return None
    from smoke.gate.nodes import GateNode

    # proven again only on a proof that holds for this Node object and this boot (a node
    # registered again under the name, or rebooted, while the pool was open: a fresh proof)
    if record.get("was") == PROVEN and GateNode.of(node).proof_holds:
        body: dict[str, Any] = {"metadata": {"labels": {GATE_LABEL: PROVEN},
                                             "annotations": {}}}
    elif labels.get(SMOKE_KEY) == SMOKE_FAILED:
        body = failed_patch(node, on_fail)
    else:
        body = fresh_proof_changes(node)
    body["metadata"]["annotations"][GATE_OPEN_ANNOTATION] = None
    body["metadata"]["resourceVersion"] = _meta(node).get("resourceVersion")
    return body


def reproof_budget(max_unavailable: str, pool_nodes: int) -> int:
    """How many of a pool's nodes a rolling re-proof may hold at once: a count, or a share of
    the pool rounded down (as Kubernetes rounds maxUnavailable), never less than one node."""
    cap = parse_cap(max_unavailable) or (None, 10.0)
    count, pct = cap
    if count is not None:
        return max(1, count)
    return max(1, int(pool_nodes * (pct or 0.0) / 100.0))
