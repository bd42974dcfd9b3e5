"""Quarantine: take the nodes a smoke run failed out of the scheduler's reach
(`smoke.cluster.release` undoes it and lists what it holds).

    report = quarantine(run, clients, pools=inventory_pools, cap=Cap.parse("10%"))

A quarantine is one strategic merge patch per node, guarded by its resourceVersion (a
concurrent change is re-read and re-applied, never overwritten):
- cordon (`spec.unschedulable`), unless the node is cordoned already;
- taint `accelfleet.io/smoke=failed:NoSchedule`, unless it carries that taint already;
- label `accelfleet.io/smoke=failed` (what `smoke status` and `--pool` releases select);
- annotations `accelfleet.io/smoke-{run,pool,cluster,host,probe,device,figure,threshold,
  reason,since}`, and `accelfleet.io/smoke-undo`: a JSON record of what THIS quarantine
  changed (whether it cordoned, whether it tainted, the label's and annotations' previous
  values, the nodes quarantined together);
then a Warning Event `SmokeQuarantined` on the node (namespace `default`, involvedObject kind
Node: `kubectl describe node` shows it). Release reads the undo record and reverses exactly
that: a node somebody else had cordoned stays cordoned, their taints and labels stay.

Only a node's own failures quarantine it (its devices' probes, its pod's crash, its outlier
verdict against its peers); never a warning or a skip, never the pool-wide collective (it
names no node). A multi-host TPU slice is atomic: one bad host quarantines every host of its
slice (the GKE node pool, else the run's slice index) and each records which host failed.
A cap per pool bounds the damage a wrong threshold can do: in nodes, or in slices for TPU
pools; the pool's nodes already quarantined count against it.

The vocabulary and records (keys, Cap, NodeAction, ActionReport, Quarantined) are in
_quarantine_records.py, the node calls shared with release in _node_calls.py; this module
re-exports both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fleet.quarantine_cap import DEFAULT_CAP as DEFAULT_CAP
from fleet.words import precise
from smoke.cluster._api import API_PROBLEM
from smoke.cluster._node_calls import _api_problem as _api_problem
from smoke.cluster._node_calls import _event as _event
from smoke.cluster._node_calls import _is_node as _is_node
from smoke.cluster._node_calls import _json as _json
from smoke.cluster._node_calls import _labelled as _labelled
from smoke.cluster._node_calls import _named as _named
from smoke.cluster._node_calls import _now as _now
from smoke.cluster._node_calls import _patch as _patch
from smoke.cluster._quarantine_records import COMPONENT as COMPONENT
from smoke.cluster._quarantine_records import EFFECT as EFFECT
from smoke.cluster._quarantine_records import FABRIC as FABRIC
from smoke.cluster._quarantine_records import FIELDS as FIELDS
from smoke.cluster._quarantine_records import KEY as KEY
from smoke.cluster._quarantine_records import NODEPOOL_LABEL as NODEPOOL_LABEL
from smoke.cluster._quarantine_records import PREFIX as PREFIX
from smoke.cluster._quarantine_records import REASON_MAX as REASON_MAX
from smoke.cluster._quarantine_records import UNDO as UNDO
from smoke.cluster._quarantine_records import VALUE as VALUE
from smoke.cluster._quarantine_records import ActionReport as ActionReport
from smoke.cluster._quarantine_records import Cap as Cap
from smoke.cluster._quarantine_records import NodeAction as NodeAction
from smoke.cluster._quarantine_records import Quarantined as Quarantined
from smoke.cluster._rejudge import COVERAGE
from smoke.cluster.access import with_retries
from smoke.cluster.nodeapi import REQUEST_TIMEOUT_S, taints_of
from smoke.cluster.run import PoolReport, RunReport
from smoke.probes import names as P
from smoke.probes.results import ProbeResult, Verdict
from smoke.probes.verdict import POOL_OUTLIER_FAIL

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, CoreV1Api

    from fleet.inventory import InventoryPool


@dataclass
class _Unit:
    """What one quarantine takes out at once: a node, or every host of a TPU slice."""

    pool: str
    nodes: list[str]
    hosts: list[str]  # the failing host(s)
    causes: dict[str, list[ProbeResult]] = field(default_factory=dict)  # host -> failures

    @property
    def rank(self) -> tuple[int, str]:  # wrong answers and missing devices first
        tiers = [r.tier for rs in self.causes.values() for r in rs]
        return (min(tiers, default=9), self.hosts[0])


_num = precise  # what the annotations keep: fleet.words.precise


def figure(r: ProbeResult) -> str:
    return "-" if r.measured is None else f"{_num(r.measured)} {r.unit}".strip()


def threshold_of(r: ProbeResult) -> str:
    """The threshold a failing result missed, in words."""
    d = r.details
    if d.get("floor") is not None and r.measured is not None and r.measured < d["floor"]:
        return f"floor {_num(d['floor'])} {r.unit}"
    if d.get("min") is not None and r.measured is not None and r.measured < d["min"]:
        return f"--min {_num(d['min'])} {r.unit}"
    if P.is_pool_probe(r.probe) and r.expected is not None:
        return f"{POOL_OUTLIER_FAIL:g} x peers' median {_num(r.expected)} {r.unit}"
    if r.expected is not None:
        return f"expected {_num(r.expected)} {r.unit}".strip()
    return "-"


def _cause(results: Sequence[ProbeResult]) -> ProbeResult:
    return min(results, key=lambda r: (r.tier, r.probe, r.device))


def failing_nodes(pool: PoolReport) -> dict[str, list[ProbeResult]]:
    """Each node's own failures: its devices', its pod's, its outlier verdict (never warn or
    skipped, never the pool-wide collective, never a pod that no node ran, never the run's
    coverage of the pool: two pods on one node, or a node no pod reported from, is the
    run's failure, not the node's; nor what the API server did wrong: a log it never finished
    sending, or sent without end)."""
    known = {o.node for o in pool.nodes if o.node}
    out: dict[str, list[ProbeResult]] = {}
    for node, r in pool.verdicts():
        if node in known and r.verdict is Verdict.FAIL and r.probe != FABRIC and \
                COVERAGE not in r.details and API_PROBLEM not in r.details:
            out.setdefault(node, []).append(r)
    return out


def _is_slice_pool(info: InventoryPool | None) -> bool:
    return info is not None and info.kind == "tpu" and info.hosts_per_slice > 1


# -- quarantine ---------------------------------------------------------------------------
def quarantine(run: RunReport, clients: Mapping[str, ApiClient], *,
               pools: Mapping[str, InventoryPool], cap: Cap) -> ActionReport:
    """Quarantine every node `run` failed, pool by pool, within `cap`."""
    from kubernetes import client as k

    actions: list[NodeAction] = []
    capped: list[str] = []
    for pool in run.pools:
        bad = failing_nodes(pool)
        if not bad or pool.cluster is None or pool.cluster not in clients:
            continue
        api = k.CoreV1Api(clients[pool.cluster])
        done: list[NodeAction] = []
        try:
            capped += _quarantine_pool(api, run, pool, bad, pools.get(pool.name), cap, done)
        except Exception as exc:  # the API's answer was refused or malformed: say so, and
            # list every failing node left untouched (an error, never a lost run)
            why = _stopped(exc)
            acted = {a.node for a in done}
            done += [NodeAction(pool.cluster, pool.name, node, "error", node,
                                _describe(rs), f"left untouched: quarantine of the pool "
                                f"stopped: {why}") for node, rs in sorted(bad.items())
                     if node not in acted]
        actions += done
    return ActionReport(tuple(actions), tuple(capped))


def _stopped(exc: Exception) -> str:
    """Why a pool's quarantine stopped, in words: an API error, or an answer that was not a
    Node as the API defines it."""
    from kubernetes.client.exceptions import ApiException

    from fleet.errors import SetupError

    if isinstance(exc, ApiException):
        return _api_problem(exc, "read or patch nodes")
    if isinstance(exc, SetupError):  # an answer past its bounds (smoke.cluster._api)
        return exc.message
    return (f"the API server's answer was malformed ({type(exc).__name__}: "
            f"{str(exc)[:120]}); check the API server or a proxy in front of it")


def _quarantine_pool(api: CoreV1Api, run: RunReport, pool: PoolReport,
                     bad: dict[str, list[ProbeResult]], info: InventoryPool | None, cap: Cap,
                     actions: list[NodeAction]) -> list[str]:
    """Quarantine one pool's failing units within `cap`, appending to `actions`; the pools
    past their cap, in words."""
    capped: list[str] = []
    before = _quarantined_units(api, pool.name)
    if _is_slice_pool(info):
        assert info is not None
        units = _slices(api, pool, bad)
        total = info.slices
        what = "slice"
    else:
        units = [_Unit(pool.name, [n], [n], {n: rs}) for n, rs in sorted(bad.items())]
        total = max(pool.expected_pods, len(pool.nodes))
        what = "node"
    room = cap.limit(total) - len(before)
    skipped = 0
    for unit in sorted(units, key=lambda u: u.rank):
        if set(unit.nodes) <= before.get_nodes():
            actions += [_action(pool, n, unit, "already", "quarantined before: "
                                "`accelfleet smoke status` shows by which run")
                        for n in unit.nodes]
            continue
        if room <= 0:
            skipped += 1
            actions += [_action(pool, n, unit, "over-cap", "not quarantined: the "
                                "pool's cap is reached") for n in unit.nodes]
            continue
        room -= 1
        actions += _apply(api, run, pool, unit)
    if skipped:
        limit = cap.limit(total)
        capped.append(f"{pool.cluster}/{pool.name}: {skipped} more failing {what}"
                      f"{'s' if skipped != 1 else ''} not quarantined: the cap is "
                      f"{limit} {what}{'s' if limit != 1 else ''} of {total} "
                      f"(--max-quarantine {cap}), {len(before)} already quarantined; "
                      "check the threshold before raising it")
    return capped


class _Before:
    """The pool's nodes quarantined already, by the unit (failing host) they went with."""

    def __init__(self, units: dict[str, set[str]]) -> None:
        self.units = units

    def __len__(self) -> int:
        return len(self.units)

    def get_nodes(self) -> set[str]:
        return {n for nodes in self.units.values() for n in nodes}


def _quarantined_units(api: CoreV1Api, pool: str) -> _Before:
    units: dict[str, set[str]] = {}
    for node in _labelled(api):
        ann = node["metadata"].get("annotations") or {}
        if ann.get(PREFIX + "pool") == pool:
            host = ann.get(PREFIX + "host") or node["metadata"]["name"]
            units.setdefault(host.split(",")[0], set()).add(node["metadata"]["name"])
    return _Before(units)


def _slices(api: CoreV1Api, pool: PoolReport, bad: dict[str, list[ProbeResult]]
            ) -> list[_Unit]:
    """Group failing TPU hosts into their slices: the hosts of the failing host's GKE node
    pool, else those the run saw in the same slice, else every host the run saw."""
    by_slice: dict[int | None, list[str]] = {}
    slice_of: dict[str, int | None] = {}
    for o in pool.nodes:
        if o.node:
            by_slice.setdefault(o.slice, []).append(o.node)
            slice_of[o.node] = o.slice
    units: list[_Unit] = []
    for host, results in sorted(bad.items()):
        members = _nodepool_members(api, host)
        if not members:
            s = slice_of.get(host)
            members = sorted(by_slice.get(s, [])) if s is not None else sorted(slice_of)
        members = sorted(set(members) | {host})
        same = next((u for u in units if set(u.nodes) & set(members)), None)
        if same is not None:  # a second bad host of a slice already taken out
            same.nodes = sorted(set(same.nodes) | set(members))
            same.hosts.append(host)
            same.causes[host] = results
        else:
            units.append(_Unit(pool.name, members, [host], {host: results}))
    return units


def _nodepool_members(api: CoreV1Api, host: str) -> list[str]:
    from kubernetes.client.exceptions import ApiException

    try:
        node = _json(with_retries(api.read_node, host, _preload_content=False,
                                  _request_timeout=REQUEST_TIMEOUT_S))
    except ApiException:
        return []
    if not _is_node(node):
        return []
    nodepool = (node["metadata"].get("labels") or {}).get(NODEPOOL_LABEL)
    if not nodepool:
        return []
    resp = with_retries(api.list_node, label_selector=f"{NODEPOOL_LABEL}={nodepool}",
                        _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
    items = _json(resp).get("items")
    return [n["metadata"]["name"] for n in items if _is_node(n)] if isinstance(items, list) \
        else []


def _describe(results: Sequence[ProbeResult], *, why: bool = False) -> str:
    """The first failure, lowest tier first: `cuda3 matmul_tflops: 529 TFLOP/s vs floor
    593.4 TFLOP/s` (`why`: and its reason)."""
    r = _cause(results)
    more = f" (+{len(results) - 1} more)" if len(results) > 1 else ""
    text = f"{r.device} {r.probe}: {figure(r)} vs {threshold_of(r)}"
    return text + (f" ({r.reason})" if why else "") + more


def _action(pool: PoolReport, node: str, unit: _Unit, state: str, detail: str = ""
            ) -> NodeAction:
    host = unit.hosts[0]
    return NodeAction(pool.cluster or "-", pool.name, node, state, ", ".join(unit.hosts),
                      _describe(unit.causes[host]), detail)


def _annotations(run: RunReport, pool: PoolReport, unit: _Unit, since: str) -> dict[str, str]:
    host = unit.hosts[0]
    r = _cause(unit.causes[host])
    reasons = "; ".join(f"{h}: {d.device} {d.probe}: {d.reason}" for h in unit.hosts
                        for d in unit.causes[h])
    values = {"run": run.run_id, "pool": pool.name, "cluster": pool.cluster or "",
              "host": ",".join(unit.hosts), "probe": r.probe, "device": r.device,
              "figure": figure(r), "threshold": threshold_of(r),
              "reason": reasons[:REASON_MAX], "since": since}
    return {PREFIX + k: v for k, v in values.items()}


def _apply(api: CoreV1Api, run: RunReport, pool: PoolReport, unit: _Unit) -> list[NodeAction]:
    from kubernetes.client.exceptions import ApiException

    since = _now().isoformat(timespec="seconds")
    ann = _annotations(run, pool, unit, since)
    out = []
    for node in unit.nodes:
        try:
            obj = _patch(api, node, lambda n: _quarantine_patch(n, ann, unit.nodes))
        except ApiException as exc:
            out.append(_action(pool, node, unit, "error", "left untouched: "
                               + _api_problem(exc, "patch nodes")))
            continue
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # not a Node
            out.append(_action(pool, node, unit, "error", "left untouched: " + _stopped(exc)))
            continue
        if not isinstance(obj.get("metadata"), dict):  # patched, but the answer is no Node:
            obj = {"metadata": {"name": node}}  # the Event names the node we patched
        note = _event(api, obj, "SmokeQuarantined", _message(run, unit, node))
        out.append(_action(pool, node, unit, "quarantined", note))
    return out


def _message(run: RunReport, unit: _Unit, node: str) -> str:
    host = unit.hosts[0]
    what = "failed" if node in unit.hosts else f"is in the TPU slice of {host}, which failed"
    return (f"accelfleet smoke run {run.run_id}: node {node} {what} "
            f"{_describe(unit.causes[host], why=True)}; cordoned and tainted "
            f"{KEY}={VALUE}:{EFFECT}. "
            f"Release with `accelfleet smoke release {node}`")[:1024]


def _quarantine_patch(node: dict[str, Any], ann: dict[str, str], unit: list[str]
                      ) -> dict[str, Any] | None:
    meta, spec = node["metadata"], node.get("spec") or {}
    labels, current = meta.get("labels") or {}, meta.get("annotations") or {}
    if UNDO in current:
        return None  # quarantined already: its record of what to undo stands
    taints, _ = taints_of(node)  # a malformed taints field is replaced by the good ones and ours
    has_taint = any(t.get("key") == KEY and t.get("effect") == EFFECT for t in taints)
    undo = {"version": 1, "cordoned": not spec.get("unschedulable", False),
            "tainted": not has_taint, "label": labels.get(KEY),
            "annotations": {k: current.get(k) for k in ann}, "unit": unit}
    patch: dict[str, Any] = {"metadata": {
        "resourceVersion": meta["resourceVersion"], "labels": {KEY: VALUE},
        "annotations": {**ann, UNDO: json.dumps(undo, sort_keys=True)}}}
    if undo["cordoned"]:
        patch["spec"] = {"unschedulable": True}
    if undo["tainted"]:
        patch.setdefault("spec", {})["taints"] = [*taints, {"key": KEY, "value": VALUE,
                                                            "effect": EFFECT}]
    return patch
