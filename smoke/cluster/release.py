"""Release and status: undo exactly what `smoke.cluster.quarantine` did, and list what it holds.

    report = release(clients, nodes=["gke-ml-h100-7f3a"])      # or pool="h100-train"
    rows = quarantined(clients)                                  # `smoke status`

Release reads each node's `accelfleet.io/smoke-undo` record and reverses only that: a node
somebody else had cordoned stays cordoned, their taints and labels stay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fleet.errors import InputError
from smoke.cluster._node_calls import (
    _api_problem,
    _event,
    _is_node,
    _json,
    _labelled,
    _now,
    _patch,
)
from smoke.cluster._podtime import aware_time
from smoke.cluster._quarantine_records import (
    EFFECT,
    KEY,
    PREFIX,
    UNDO,
    ActionReport,
    NodeAction,
    Quarantined,
)
from smoke.cluster.access import with_retries
from smoke.cluster.nodeapi import REQUEST_TIMEOUT_S, taints_of

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, CoreV1Api


def release(clients: Mapping[str, ApiClient], *, nodes: Sequence[str] = (),
            pool: str | None = None) -> ActionReport:
    """Undo the quarantine of `nodes` (each looked up in every cluster; a TPU host brings its
    slice) or of every node of `pool`. An unknown node is bad input, found before any change."""
    from kubernetes import client as k
    from kubernetes.client.exceptions import ApiException

    apis = {c: k.CoreV1Api(cl) for c, cl in sorted(clients.items())}
    targets: dict[str, dict[str, dict[str, Any]]] = {c: {} for c in apis}  # cluster -> name
    labelled = {c: {n["metadata"]["name"]: n for n in _labelled(api)} for c, api in
                apis.items()}
    missing = []
    for name in nodes:
        found = False
        for c, api in apis.items():
            try:
                node = _json(with_retries(api.read_node, name, _preload_content=False,
                                          _request_timeout=REQUEST_TIMEOUT_S))
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise
            if not _is_node(node):
                from fleet.errors import SetupError
                from smoke.cluster.objects import node_problem

                raise SetupError(f"node {name} of cluster {c}: the API server's answer does "
                                 f"not read as a Node ({node_problem(node)}); nothing was "
                                 "released", hint="check the API server, or a proxy in front "
                                 "of it (`kubectl get node NAME -o json`), then run again")
            found = True
            targets[c][name] = node
            for member in _undo(node).get("unit") or []:  # a TPU slice is released whole
                if member in labelled[c]:
                    targets[c].setdefault(member, labelled[c][member])
        if not found:
            missing.append(name)
    if missing:
        raise InputError(f"no node {', '.join(missing)} in cluster(s) {', '.join(apis)}",
                         hint="`accelfleet smoke status` lists the quarantined nodes")
    if pool is not None:
        for c, by_name in labelled.items():
            for name, node in by_name.items():
                if (node["metadata"].get("annotations") or {}).get(PREFIX + "pool") == pool:
                    targets[c][name] = node
    actions = []
    for c, by_name in targets.items():
        for name, node in sorted(by_name.items()):
            actions.append(_release_one(apis[c], c, name, node))
    return ActionReport(tuple(actions))


def _undo(node: dict[str, Any]) -> dict[str, Any]:
    raw = (node.get("metadata", {}).get("annotations") or {}).get(UNDO)
    try:
        out = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _release_patch(node: dict[str, Any]) -> dict[str, Any] | None:
    undo = _undo(node)
    if not undo:
        return None
    meta, spec = node["metadata"], node.get("spec") or {}
    ann: dict[str, Any] = dict(undo.get("annotations") or {})
    ann[UNDO] = None
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta["resourceVersion"],
                                          "labels": {KEY: undo.get("label")},
                                          "annotations": ann}}
    if undo.get("cordoned") and spec.get("unschedulable"):
        patch["spec"] = {"unschedulable": None}
    taints, problem = taints_of(node)
    if undo.get("tainted") and not problem:  # a malformed taints field is left as it is
        kept = [t for t in taints if not (t.get("key") == KEY and t.get("effect") == EFFECT)]
        patch.setdefault("spec", {})["taints"] = kept
    return _fresh_proof(node, patch)


def _fresh_proof(node: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A node the gate holds returns to service only on a fresh proof (issue 35): released,
    it goes back to `unproven` with the gate's startup taint, and what the gate's failure did
    (its taint, its cordon, its keep annotations) is undone (smoke.gate.lifecycle)."""
    from smoke.gate import lifecycle as L

    if not L.is_enforced_gate_node(node):
        return patch
    taints = patch.get("spec", {}).get("taints", (node.get("spec") or {}).get("taints") or [])
    gate = L.fresh_proof_changes({**node, "spec": {**(node.get("spec") or {}),
                                                   "taints": taints}})
    patch["metadata"]["labels"].update(gate["metadata"]["labels"])
    patch["metadata"]["annotations"].update(gate["metadata"]["annotations"])
    patch.setdefault("spec", {}).update(gate["spec"])
    return patch


def _release_one(api: CoreV1Api, cluster: str, name: str, node: dict[str, Any]) -> NodeAction:
    from kubernetes.client.exceptions import ApiException

    ann = node["metadata"].get("annotations") or {}
    pool, host = ann.get(PREFIX + "pool", "-"), ann.get(PREFIX + "host", "")
    undo = _undo(node)
    if not undo and _gate_failed(node):  # failed its gate proof, over the cap: not quarantined
        try:
            obj = _patch(api, name, _gate_fresh_proof_patch)
        except ApiException as exc:
            return NodeAction(cluster, pool, name, "error", host, "",
                              _api_problem(exc, "patch nodes"))
        note = _event(api, obj, "GateFreshProof", f"accelfleet smoke release: {name} failed "
                      "its gate proof; sent to a fresh proof")
        return NodeAction(cluster, pool, name, "released", host, "failed its gate proof",
                          "; ".join(x for x in (_fresh_proof_note(obj), note) if x))
    if not undo:
        why = ("labelled but with no undo record: not quarantined by accelfleet, left as it is"
               if (node["metadata"].get("labels") or {}).get(KEY) else
               "not quarantined by accelfleet: left as it is")
        return NodeAction(cluster, pool, name, "not-quarantined", host, "", why)
    try:
        obj = _patch(api, name, _release_patch)
    except ApiException as exc:
        return NodeAction(cluster, pool, name, "error", host, "", _api_problem(exc, "patch nodes"))
    kept = []
    fresh = _fresh_proof_note(obj)
    if fresh:
        kept.append(fresh)
    elif not undo.get("cordoned"):
        kept.append("left cordoned: it was cordoned before the quarantine")
    if not undo.get("tainted"):
        kept.append(f"left its {KEY} taint: it was there before")
    note = _event(api, obj, "SmokeReleased", f"accelfleet smoke: quarantine of {name} (run "
                  f"{ann.get(PREFIX + 'run', '?')}) released")
    since = aware_time(ann.get(PREFIX + "since"))
    held = "" if since is None else f" {age((_now() - since).total_seconds())} ago"
    cause = (f"quarantined{held} by run {ann.get(PREFIX + 'run', '?')} for "
             f"{ann.get(PREFIX + 'device', '')} {ann.get(PREFIX + 'probe', '?')}: "
             f"{ann.get(PREFIX + 'figure', '-')} vs {ann.get(PREFIX + 'threshold', '-')}")
    return NodeAction(cluster, pool, name, "released", host, cause,
                      "; ".join([*kept, note] if note else kept))


def _gate_failed(node: dict[str, Any]) -> bool:
    from fleet.labels import GATE_LABEL
    from smoke.gate import lifecycle as L

    labels = (node.get("metadata") or {}).get("labels") or {}
    return L.is_enforced_gate_node(node) and labels.get(GATE_LABEL) == L.FAILED


def _gate_fresh_proof_patch(node: dict[str, Any]) -> dict[str, Any] | None:
    from smoke.gate import lifecycle as L

    return L.fresh_proof_patch(node) if _gate_failed(node) else None


def _fresh_proof_note(node: dict[str, Any] | None) -> str:
    from fleet.labels import GATE_LABEL

    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(GATE_LABEL) != "unproven":
        return ""
    return ("gated: back to unproven with the gate's startup taint; it takes work again once "
            "the gate controller proves it afresh")


# -- status -------------------------------------------------------------------------------
def quarantined(clients: Mapping[str, ApiClient]) -> list[Quarantined]:
    """Every node carrying the quarantine label, in every cluster, oldest first."""
    from kubernetes import client as k

    now = _now()
    rows = []
    for c, cl in sorted(clients.items()):
        for node in _labelled(k.CoreV1Api(cl), named=True):
            from smoke.cluster.objects import node_problem

            meta = node["metadata"]
            raw_spec = node.get("spec")
            spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
            raw_ann = meta.get("annotations")
            ann = {a: v for a, v in (raw_ann.items() if isinstance(raw_ann, dict) else ())
                   if isinstance(a, str) and a.startswith(PREFIX)}
            since = aware_time(ann.get(PREFIX + "since"))
            age = None if since is None else (now - since).total_seconds()
            taints, problem = taints_of(node)
            problem = problem or node_problem(node)
            rows.append(Quarantined(c, meta["name"], ann, spec.get("unschedulable") is True,
                                    any(t.get("key") == KEY and t.get("effect") == EFFECT
                                        for t in taints), age, problem))
    return sorted(rows, key=lambda q: (-(q.age_s or 0.0), q.cluster, q.node))


def age(seconds: float | None) -> str:
    """`2d 3h`, `5h 12m`, `12m`, `40s`."""
    if seconds is None:
        return "?"
    s = int(max(0.0, seconds))
    days, hours, minutes = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m" if minutes else f"{s}s"
