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
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fleet.errors import InputError
from fleet.labels import SMOKE_ANNOTATION_PREFIX, SMOKE_FAILED, SMOKE_KEY
from fleet.quarantine_cap import DEFAULT_CAP as DEFAULT_CAP
from fleet.quarantine_cap import parse_cap
from fleet.taints import NO_SCHEDULE
from fleet.words import precise
from smoke.cluster._api import API_PROBLEM
from smoke.cluster._rejudge import COVERAGE
from smoke.cluster.access import with_retries
from smoke.cluster.nodeapi import REQUEST_TIMEOUT_S, node_event, patch_node, taints_of
from smoke.cluster.run import PoolReport, RunReport
from smoke.probes import names as P
from smoke.probes.results import ProbeResult, Verdict
from smoke.probes.verdict import POOL_OUTLIER_FAIL

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, CoreV1Api

    from fleet.inventory import InventoryPool

KEY = SMOKE_KEY  # the taint's and the label's key
VALUE = SMOKE_FAILED
EFFECT = NO_SCHEDULE
PREFIX = SMOKE_ANNOTATION_PREFIX
UNDO = PREFIX + "undo"
FIELDS = ("run", "pool", "cluster", "host", "probe", "device", "figure", "threshold", "reason",
          "since")
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"  # a multi-host TPU slice is one node pool
COMPONENT = "accelfleet-smoke"
FABRIC = P.FABRIC  # the pool-wide collective: names no node
REASON_MAX = 1000


@dataclass(frozen=True)
class Cap:
    """`--max-quarantine`: a count (`3`) or a share of the pool (`10%`), at least one."""

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, text: str) -> Cap:
        parsed = parse_cap(text)  # the one rule, shared with a pool's gate.max_quarantine
        if parsed is not None:
            return cls(count=parsed[0], percent=parsed[1])
        raise InputError(f"--max-quarantine {text!r} is not a count of 1 or more nor a "
                         "percentage in (0, 100]", hint="e.g. --max-quarantine 2 or "
                         f"--max-quarantine 25% (default {DEFAULT_CAP} of each pool)")

    def limit(self, units: int) -> int:
        if self.count is not None:
            return self.count
        return max(1, math.floor(units * (self.percent or 10.0) / 100 + 1e-9))

    def __str__(self) -> str:
        return str(self.count) if self.count is not None else f"{self.percent:g}%"


@dataclass(frozen=True)
class NodeAction:
    """What happened to one node: quarantined, already (quarantined before), over-cap,
    released, not-quarantined, or error."""

    cluster: str
    pool: str
    node: str
    state: str
    host: str = ""  # the failing host (the node itself, or its slice's failing host)
    cause: str = ""
    detail: str = ""

    def line(self) -> str:
        via = f" (slice of failing host {self.host})" if self.host and self.host != \
            self.node else ""
        text = f"{self.state.upper()} {self.cluster}/{self.pool} {self.node}{via}"
        if self.cause:
            text += f": {self.cause}"
        return text + (f" ({self.detail})" if self.detail else "")

    def to_dict(self) -> dict[str, str]:
        return {"cluster": self.cluster, "pool": self.pool, "node": self.node,
                "state": self.state, "host": self.host, "cause": self.cause,
                "detail": self.detail}


@dataclass(frozen=True)
class ActionReport:
    """A quarantine's or a release's outcome, node by node; `capped` names each pool past its
    cap."""

    actions: tuple[NodeAction, ...] = ()
    capped: tuple[str, ...] = ()

    def of(self, state: str) -> list[NodeAction]:
        return [a for a in self.actions if a.state == state]

    @property
    def ok(self) -> bool:
        return not self.capped and not self.of("error")

    def lines(self) -> list[str]:
        return [a.line() for a in self.actions] + [f"CAP {c}" for c in self.capped]

    def to_dict(self) -> dict[str, Any]:
        return {"actions": [a.to_dict() for a in self.actions], "capped": list(self.capped)}

    @classmethod
    def from_dict(cls, data: object) -> ActionReport:
        """What `to_dict` wrote, back (a saved run's `quarantine`); InputError if it is not."""
        from fleet.errors import InputError

        fields = ("cluster", "pool", "node", "state", "host", "cause", "detail")
        actions = data.get("actions") or [] if isinstance(data, dict) else None
        capped = data.get("capped") or [] if isinstance(data, dict) else None
        if not isinstance(actions, list) or not isinstance(capped, list) or \
                not all(isinstance(a, dict) for a in actions):
            raise InputError("malformed quarantine record in the run document: "
                             "{'actions': [...], 'capped': [...]} expected",
                             hint="produce it with `accelfleet smoke run --quarantine "
                             "--out DIR`")
        return cls(actions=tuple(NodeAction(**{f: str(a.get(f, "")) for f in fields})
                                 for a in actions), capped=tuple(str(c) for c in capped))


@dataclass(frozen=True)
class Quarantined:
    """A quarantined node as `smoke status` lists it."""

    cluster: str
    node: str
    annotations: dict[str, str]
    cordoned: bool
    tainted: bool
    age_s: float | None
    problem: str = ""  # what is malformed about the node, in words ('' when nothing is)

    def get(self, name: str) -> str:
        value = self.annotations.get(PREFIX + name, "")
        return value if isinstance(value, str) else str(value)

    @property
    def notes(self) -> str:
        out = [self.problem] if self.problem else []
        if not self.cordoned:
            out.append("uncordoned since (by hand?)")
        if not self.tainted and not self.problem:
            out.append(f"the {KEY} taint was removed")
        if UNDO not in self.annotations:
            out.append("no undo record: labelled by hand?")
        return "; ".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "node": self.node, "cordoned": self.cordoned,
                "tainted": self.tainted, "age_s": self.age_s, "notes": self.notes,
                **{f: self.get(f) for f in FIELDS}}


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


def _now() -> datetime:
    return datetime.now(UTC)


def _json(resp: Any) -> dict[str, Any]:
    """An API answer's JSON object; a SetupError (exit 2) for an answer that is no JSON (a
    proxy's HTML page, a cut connection): the API server is not one accelfleet can use."""
    from fleet.errors import SetupError

    data = getattr(resp, "data", None)
    if data is None and hasattr(resp, "read"):
        data = resp.read()
    try:
        out = json.loads(data if isinstance(data, bytes | str) else b"{}")
    except (ValueError, RecursionError):
        raise SetupError("the Kubernetes API answered with something that is not JSON",
                         hint="check that the kubeconfig's server is the cluster's API server "
                         "(not a proxy or a login page), then run again") from None
    return out if isinstance(out, dict) else {}


def _is_node(item: object) -> bool:
    """An item of a node list as the API defines one (`smoke.cluster.objects.node_problem`:
    its metadata, taints, conditions of the API's types). Anything else tells of no node."""
    from smoke.cluster.objects import node_problem

    return not node_problem(item)


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


def _labelled(api: CoreV1Api, *, named: bool = False) -> list[dict[str, Any]]:
    """The nodes labelled quarantined that read as Nodes; `named`: also those that do not
    but carry a name (`smoke status` lists them, saying what is malformed)."""
    resp = with_retries(api.list_node, label_selector=f"{KEY}={VALUE}", _preload_content=False,
                        _request_timeout=REQUEST_TIMEOUT_S)
    items = _json(resp).get("items")
    if not isinstance(items, list):
        return []
    return [n for n in items if _is_node(n) or (named and _named(n))]


def _named(item: object) -> bool:
    """An object with a name (metadata.name a string), however malformed the rest."""
    meta = item.get("metadata") if isinstance(item, dict) else None
    return isinstance(meta, dict) and isinstance(meta.get("name"), str) and bool(meta["name"])


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


def _patch(api: CoreV1Api, name: str, change: Any) -> dict[str, Any]:
    """Read the node, patch it with `change(node)` guarded by its resourceVersion; a conflict
    (somebody changed it in between) is read again and re-applied. Returns the node."""
    return patch_node(api, name, change, _json)


def _event(api: CoreV1Api, node: dict[str, Any], reason: str, message: str) -> str:
    """A Warning (quarantine) or Normal (release) Event on the node; '' or what went wrong."""
    from kubernetes.client.exceptions import ApiException

    try:
        node_event(api, node, reason, message, warning=reason == "SmokeQuarantined",
                   component=COMPONENT)
    except ApiException as exc:
        return f"its Event was not recorded: {_api_problem(exc, 'create events')}"
    return ""


def _api_problem(exc: Any, verb: str) -> str:
    """An API error in words; `verb` is what was refused, e.g. `patch nodes`."""
    if exc.status in (401, 403):
        return (f"{exc.status} {exc.reason}: the credential may not {verb} (check `kubectl "
                f"auth can-i {verb}`)")
    if exc.status == 404:
        return "the node no longer exists"
    return f"{exc.status} {exc.reason}"
