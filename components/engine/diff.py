"""The difference between two offline plans (`accelfleet plan --diff`): resources added, removed
and changed (each changed input with its old and new value), the changes that replace a node
pool, node group or TPU slice (its nodes are destroyed), and the monthly cost delta per pool and
per team.

Pure: it reads two plan documents (the JSON of `accelfleet plan --json`, as dicts) and the
table of replacement-forcing inputs in `components/engine/data/replacements.yaml` (provider ForceNew
fields, each with its source), which `components.engine._diff_rules` reads (its names are
re-exported here). It imports no Pulumi.

    >>> from components.engine.diff import diff_plans
    >>> d = diff_plans(old_plan_dict, new_plan_dict)
    >>> d.replacements, d.cost_delta_usd, d.to_dict()
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from components.engine._diff_rules import TABLE as TABLE
from components.engine._diff_rules import Ignored as Ignored
from components.engine._diff_rules import Roll as Roll
from components.engine._diff_rules import Rule as Rule
from components.engine._diff_rules import _plain as _plain
from components.engine._diff_rules import _under as _under
from components.engine._diff_rules import ignored_by_components as ignored_by_components
from components.engine._diff_rules import replacement_table as replacement_table
from components.engine._diff_rules import roll_for as roll_for
from components.engine._diff_rules import roll_table as roll_table
from components.engine._diff_rules import rule_for as rule_for
from fleet.errors import InputError
from fleet.placeholders import COMPUTED

# Components that hold one pool (as components/engine/plan.py names them), and what to call them.
POOL_KINDS = {"GpuNodePool": "node pool", "CpuNodePool": "node pool", "TpuSlice": "TPU slice",
              "TpuVm": "TPU VM slice", "GpuNodeGroup": "node group",
              "CpuNodeGroup": "node group"}
# Resource types whose replacement destroys nodes: a pool, a slice, or a cluster with them all.
NODE_HOLDERS = frozenset({
    "gcp:container/nodePool:NodePool", "gcp:tpu/v2Vm:V2Vm", "aws:eks/nodeGroup:NodeGroup",
    "gcp:container/cluster:Cluster", "aws:eks/cluster:Cluster"})


@dataclass(frozen=True)
class FieldChange:
    path: str  # `nodeConfig.guestAccelerators[0].count`
    old: Any
    new: Any
    replaces: Rule | None = None
    ignored: Ignored | None = None  # set: no update and no replacement for this change
    rolls: Roll | None = None  # set: an update that replaces every node of the pool


@dataclass(frozen=True)
class NodeRoll:
    """A pool whose every node is replaced by a change that keeps the pool itself: how many
    nodes, whether the gate proves each new one before it takes work, and the changes."""

    pool: str
    pool_kind: str | None
    nodes: int | None
    gated: bool
    changes: tuple[str, ...]
    # the pool's upgrade policy in words, as the new plan records it (fleet.upgrade): how
    # many nodes go at once; None for a plan saved before plans recorded it
    policy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pool": self.pool, "pool_kind": self.pool_kind, "nodes": self.nodes,
                "gate_reproves": self.gated, "changes": list(self.changes),
                "upgrade_policy": self.policy}


@dataclass
class ResourceChange:
    key: str  # "<type>::<name>"
    type: str
    name: str
    action: str  # "add" | "remove" | "change"
    pool: str | None  # the pool whose component holds it, if any
    pool_kind: str | None  # node pool | node group | TPU slice | TPU VM slice
    fields: list[FieldChange] = field(default_factory=list)

    @property
    def replaced(self) -> bool:
        return self.action == "change" and any(f.replaces for f in self.fields)

    @property
    def destroys_nodes(self) -> bool:
        """Replaced, and a pool, slice or cluster: its nodes are destroyed and recreated."""
        return self.replaced and self.type in NODE_HOLDERS

    @property
    def rolls_nodes(self) -> bool:
        """Updated in place by a change that replaces every node of its pool (replacements.yaml
        `rolls`): an EKS node group's version or launch template version, its template."""
        return self.action == "change" and not self.replaced and any(f.rolls
                                                                      for f in self.fields)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "type": self.type, "name": self.name, "action": self.action,
                "pool": self.pool, "pool_kind": self.pool_kind, "replaced": self.replaced,
                "fields": [{"path": f.path, "old": f.old, "new": f.new,
                            "replaces": None if f.replaces is None else {
                                "terraform": f.replaces.terraform, "kind": f.replaces.kind,
                                "source": f.replaces.source},
                            "ignored": None if f.ignored is None else {
                                "ignore_changes": f.ignored.path,
                                "source": f.ignored.source},
                            "rolls_nodes": None if f.rolls is None else {
                                "why": f.rolls.why, "source": f.rolls.source}}
                           for f in self.fields]}


@dataclass(frozen=True)
class CostDelta:
    """One pool's or team's monthly cost before and after (None: no price known)."""

    name: str
    team: str | None
    old_usd: float | None
    new_usd: float | None
    old_max_usd: float | None = None
    new_max_usd: float | None = None
    status: str = "changed"  # added | removed | changed | same
    nodes: tuple[int | None, int | None] = (None, None)
    budget_usd: float | None = None

    @property
    def delta_usd(self) -> float | None:
        if self.status == "added":
            return self.new_usd
        if self.status == "removed":
            return None if self.old_usd is None else -self.old_usd
        if self.old_usd is None or self.new_usd is None:
            return None
        return round(self.new_usd - self.old_usd, 2)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "team": self.team, "status": self.status,
                "old_monthly_usd": self.old_usd, "new_monthly_usd": self.new_usd,
                "old_max_monthly_usd": self.old_max_usd,
                "new_max_monthly_usd": self.new_max_usd,
                "delta_monthly_usd": self.delta_usd, "old_nodes": self.nodes[0],
                "new_nodes": self.nodes[1], "monthly_budget_usd": self.budget_usd}


@dataclass
class PlanDiff:
    stack: str
    base: str  # where the old plan came from (a file, `git:<ref>`)
    resources: list[ResourceChange]
    pools: list[CostDelta]
    teams: list[CostDelta]
    # pool -> (its nodes before, after, whether the gate proves each new node after), from
    # the plans' pool rows
    pool_nodes: dict[str, tuple[int | None, int | None, bool]] = field(default_factory=dict)
    # pool -> its upgrade policy in words (the new plan's row, else the old's)
    pool_upgrades: dict[str, str] = field(default_factory=dict)

    def of(self, action: str) -> list[ResourceChange]:
        return [r for r in self.resources if r.action == action]

    @property
    def replacements(self) -> list[ResourceChange]:
        return [r for r in self.resources if r.replaced]

    @property
    def node_replacements(self) -> list[ResourceChange]:
        """The replacements that destroy nodes (of the others, nothing runs on them)."""
        return [r for r in self.resources if r.destroys_nodes]

    @property
    def destroyed_pools(self) -> list[ResourceChange]:
        """Pools, slices and clusters removed outright (their nodes go too). A removed
        placement group, launch template or workload policy holds no node: it is a removal,
        not a pool's destruction."""
        return [r for r in self.of("remove") if r.type in NODE_HOLDERS]

    @property
    def node_rolls(self) -> list[NodeRoll]:
        """Each pool kept in place whose every node is replaced (a rolling update), unless a
        replacement or removal destroys the pool's nodes anyway."""
        destroyed = {r.pool for r in (*self.node_replacements, *self.destroyed_pools)
                     if r.pool}
        by_pool: dict[str, list[ResourceChange]] = {}
        for r in self.resources:
            if r.rolls_nodes and r.pool and r.pool not in destroyed:
                by_pool.setdefault(r.pool, []).append(r)
        out = []
        for pool, changes in sorted(by_pool.items()):
            before, nodes, gated = self.nodes_of(pool)
            nodes = before if nodes is None else nodes
            what = tuple(f"{r.type.rsplit(':', 1)[-1]} {r.name}: {f.path} "
                         f"{_short(f.old)} -> {_short(f.new)} ({f.rolls.why})"
                         for r in changes for f in r.fields if f.rolls)
            out.append(NodeRoll(pool, changes[0].pool_kind, nodes, gated, what,
                                self.pool_upgrades.get(pool)))
        return out

    def nodes_of(self, pool: str | None) -> tuple[int | None, int | None, bool]:
        """(nodes before, nodes after, gated after) of a pool; None where a plan has no row."""
        return self.pool_nodes.get(pool or "", (None, None, False))

    @property
    def cost_delta_usd(self) -> float | None:
        """The fleet's monthly delta over every team (None when a changed pool is unpriced)."""
        deltas = [t.delta_usd for t in self.teams if t.status != "same"]
        if any(d is None for d in deltas):
            return None
        return round(sum(d for d in deltas if d is not None), 2)

    @property
    def empty(self) -> bool:
        return not self.resources and all(p.status == "same" for p in self.pools)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack, "base": self.base,
            "summary": {"added": len(self.of("add")), "removed": len(self.of("remove")),
                        "changed": len(self.of("change")),
                        "replaced": [r.key for r in self.replacements],
                        "destroying_nodes": [r.key for r in self.node_replacements],
                        "destroyed": [r.key for r in self.destroyed_pools],
                        "rolling_nodes": [r.to_dict() for r in self.node_rolls],
                        "delta_monthly_usd": self.cost_delta_usd},
            "resources": [r.to_dict() for r in self.resources],
            "pools": [p.to_dict() for p in self.pools],
            "teams": [t.to_dict() for t in self.teams],
        }


def _options(plan: dict[str, Any], r: dict[str, Any]) -> tuple[list[Ignored], list[str]]:
    """The ignore_changes and replace_on_changes that apply to `r` of `plan` (the plan being
    applied): as the plan recorded them, or, for a plan saved before plans recorded them, the
    table's `ignore_changes` rows."""
    if plan.get("resource_options") is True:
        return ([Ignored(p, "the component's ignore_changes, recorded in the plan")
                 for p in _strings(r.get("ignore_changes"))],
                _strings(r.get("replace_on_changes")))
    return list(ignored_by_components().get(str(r.get("type")), ())), []


def _strings(value: Any) -> list[str]:
    """A recorded option's paths, read defensively (a list of strings, else none)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _field(type_: str, path: str, old: Any, new: Any, ignored: list[Ignored],
           replace_on: list[str], provider: dict[str, Any]) -> FieldChange:
    for ign in ignored:
        if _under(path, ign.path):
            return FieldChange(path, old, new, None, ign)
    rule = rule_for(type_, path, old, new)
    if rule is not None and rule.unless_provider \
            and str(provider.get(rule.unless_provider)).lower() == "true":
        rule = None
    if rule is None:
        for option in replace_on:
            if _under(path, option) or _plain(option).startswith(_plain(path) + "."):
                rule = Rule(type_, option, option, "replace_on_changes",
                            "the component's replace_on_changes, recorded in the plan")
                break
    return FieldChange(path, old, new, rule, rolls=None if rule else roll_for(type_, path))


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def diff_values(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf (or whole list / missing key) where `old` and `new` differ, with its path."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if path else str(key)
            out += diff_values(old.get(key), new.get(key), sub)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new) \
            and all(isinstance(o, dict) and isinstance(n, dict)
                    for o, n in zip(old, new, strict=True)):
        out = []
        for i, (o, n) in enumerate(zip(old, new, strict=True)):
            out += diff_values(o, n, f"{path}[{i}]")
        return out
    return [(path, old, new)]


def _resources(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in plan.get("resources") or []:
        key = f"{r.get('type')}::{r.get('name')}"
        if key in out:  # the same type and name under two parents: keep both apart
            key = f"{key}@{r.get('parent')}"
        out[key] = r
    return out


def pool_owners(plan: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Resource key -> (pool, pool kind) for everything under a pool's component."""
    pools = plan.get("pools") or []
    names: dict[str, str] = {}
    for p in pools:
        names[p["name"]] = p["name"]
        if p.get("cluster"):
            names[f"{p['cluster']}-{p['name']}"] = p["name"]
    for s in plan.get("system_pools") or []:
        if s.get("cluster"):
            names[f"{s['cluster']}-{s.get('name', 'system')}"] = \
                f"{s['cluster']}/{s.get('name', 'system')}"
    res = plan.get("resources") or []
    parent = {f"{r['type']}::{r['name']}": r.get("parent") for r in res}
    out: dict[str, tuple[str, str]] = {}
    for key in parent:
        seen: set[str] = set()
        cur: str | None = key
        while cur and cur not in seen:
            seen.add(cur)
            type_, _, name = cur.partition("::")
            kind = type_.rsplit(":", 1)[-1]
            if type_.startswith("accelfleet:") and kind in POOL_KINDS and name in names:
                out[key] = (names[name], POOL_KINDS[kind])
                break
            cur = parent.get(cur)
    return out


def _num(value: Any) -> float | None:
    """A cost field read defensively: a number, or None (missing, null, not a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):  # a richer cost record: its monthly figure
        return _num(value.get("monthly_usd"))
    return None


def _cost_rows(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = {p["name"]: p for p in plan.get("pools") or []}
    for s in plan.get("system_pools") or []:
        rows[f"{s.get('cluster')}/{s.get('name', 'system')}"] = s
    return rows


def _delta(name: str, old: dict[str, Any] | None, new: dict[str, Any] | None,
           nodes: bool = True) -> CostDelta:
    status = "added" if old is None else "removed" if new is None else "changed"
    o, n = old or {}, new or {}
    row = CostDelta(
        name=name, team=(n or o).get("team"), old_usd=_num(o.get("monthly_usd")),
        new_usd=_num(n.get("monthly_usd")), old_max_usd=_num(o.get("max_monthly_usd")),
        new_max_usd=_num(n.get("max_monthly_usd")), status=status,
        nodes=(o.get("nodes"), n.get("nodes")) if nodes else (None, None),
        budget_usd=_num((n or o).get("monthly_budget_usd")))
    if status == "changed" and row.old_usd == row.new_usd and row.nodes[0] == row.nodes[1] \
            and row.old_max_usd == row.new_max_usd:
        row = dataclasses.replace(row, status="same")
    return row


PROVIDER_CASCADE = ("Pulumi replaces every resource of a replaced provider "
                    "(pulumi-terraform-bridge pkg/tfbridge/info/info.go, ForcesProviderReplace)")


def _cascade_provider_replacements(changes: list[ResourceChange],
                                   before: dict[str, dict[str, Any]],
                                   after: dict[str, dict[str, Any]],
                                   owners: dict[str, tuple[str, str]]) -> list[ResourceChange]:
    """Each resource kept under a replaced provider (`pulumi:providers:*`) is replaced too."""
    gone = {c.key for c in changes if c.replaced and c.type.startswith("pulumi:providers:")}
    if not gone:
        return changes
    by_key = {c.key: c for c in changes}
    for key, n in after.items():
        pk = n.get("provider")
        if not isinstance(pk, str) or pk not in gone or key not in before \
                or not n.get("custom", True):
            continue
        fc = FieldChange("(provider)", pk, pk, Rule(str(n.get("type")), "(provider)", str(pk),
                                                    "provider_replaced", PROVIDER_CASCADE))
        if key in by_key:
            by_key[key].fields.append(fc)
        else:
            pool, kind = owners.get(key) or (None, None)
            by_key[key] = ResourceChange(key, str(n.get("type")), str(n.get("name")), "change",
                                         pool, kind, [fc])
    return [by_key[k] for k in sorted(by_key)]


def diff_plans(old: dict[str, Any], new: dict[str, Any], *, base: str = "base") -> PlanDiff:
    """What applying `new` over `old` adds, removes and changes, and what it costs."""
    for which, plan in (("base", old), ("new", new)):
        if not isinstance(plan, dict) or not isinstance(plan.get("resources", []), list):
            raise InputError(f"the {which} plan is not an `accelfleet plan --json` document",
                             hint="save one with `accelfleet plan STACK --json --out plan.json`")
    before, after = _resources(old), _resources(new)
    owners_before, owners_after = pool_owners(old), pool_owners(new)
    changes: list[ResourceChange] = []
    for key in sorted(set(before) | set(after)):
        o, n = before.get(key), after.get(key)
        r = n or o
        assert r is not None
        if not r.get("custom", True):
            continue  # a component: no inputs of its own; its resources say what changed
        pool, kind = (owners_after.get(key) or owners_before.get(key) or (None, None))
        if o is None or n is None:
            changes.append(ResourceChange(key, r["type"], r["name"],
                                          "add" if o is None else "remove", pool, kind))
            continue
        ignored, replace_on = _options(new, n)
        provider = (after.get(str(n.get("provider"))) or {}).get("inputs")
        provider = provider if isinstance(provider, dict) else {}
        fields = [_field(r["type"], p, a, b, ignored, replace_on, provider)
                  for p, a, b in diff_values(o.get("inputs") or {}, n.get("inputs") or {})
                  if not (a == COMPUTED and b == COMPUTED)]
        for attr in ("parent", "provider"):
            if o.get(attr) != n.get(attr):
                fields.append(FieldChange(f"({attr})", o.get(attr), n.get(attr)))
        if fields:
            changes.append(ResourceChange(key, r["type"], r["name"], "change", pool, kind,
                                          fields))
    changes = _cascade_provider_replacements(changes, before, after,
                                             {**owners_before, **owners_after})
    rows_old, rows_new = _cost_rows(old), _cost_rows(new)
    pools = [_delta(name, rows_old.get(name), rows_new.get(name))
             for name in sorted(set(rows_old) | set(rows_new))]
    teams_old = {t["name"]: t for t in old.get("teams") or []}
    teams_new = {t["name"]: t for t in new.get("teams") or []}
    teams = [_delta(name, teams_old.get(name), teams_new.get(name), nodes=False)
             for name in sorted(set(teams_old) | set(teams_new))]
    return PlanDiff(stack=str(new.get("stack") or old.get("stack") or "?"), base=base,
                    resources=changes, pools=pools, teams=teams,
                    pool_nodes=_pool_nodes(old, new), pool_upgrades=_pool_upgrades(old, new))


def _pool_upgrades(old: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    """pool -> its upgrade policy in words (`upgrade.words` of the plans' pool rows: the new
    plan's, else the old's; read defensively, a row without one gives none)."""
    out: dict[str, str] = {}
    for plan in (old, new):  # the new plan's words win
        for name, row in _cost_rows(plan).items():
            up = row.get("upgrade")
            words = up.get("words") if isinstance(up, dict) else None
            if isinstance(words, str) and words:
                out[name] = words
    return out


def _pool_nodes(old: dict[str, Any], new: dict[str, Any]
                ) -> dict[str, tuple[int | None, int | None, bool]]:
    """pool -> (nodes before, after, whether its gate is on after), from the plans' pool rows
    (read defensively: a row without a count gives None)."""
    def facts(plan: dict[str, Any]) -> dict[str, tuple[int | None, bool]]:
        out: dict[str, tuple[int | None, bool]] = {}
        for name, row in _cost_rows(plan).items():
            nodes, gate = row.get("nodes"), row.get("gate")
            out[name] = (nodes if isinstance(nodes, int) and not isinstance(nodes, bool)
                         else None, isinstance(gate, dict) and gate.get("enabled") is True)
        return out

    before, after = facts(old), facts(new)
    return {name: ((before.get(name) or (None, False))[0], (after.get(name) or (None, False))[0],
                   (after.get(name) or before.get(name) or (None, False))[1])
            for name in {*before, *after}}
