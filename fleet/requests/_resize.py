"""A pool resized or removed, as decisions (fleet.requests.request re-exports resize_pool and
remove_pool): a GPU or CPU pool changes node count, a TPU slice changes topology (and is
recreated); a resize that raises a pool's cost needs a reason; a removal is refused where the
rest of the stack still names the pool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleet.catalog import Catalog
from fleet.errors import AccelfleetError, Problem, RequestRefused, SpecError, Where
from fleet.model import ResolvedPool
from fleet.requests._change import Change, _base, _find, check
from fleet.requests.edits import REMOVE, pools_of, with_updates, without_pool
from fleet.requests.options import alternatives, topology_options


def resize_pool(raw: Mapping[str, Any], name: str, *, catalog: Catalog,
                nodes: int | None = None, topology: str | None = None,
                reason: str | None = None) -> Change:
    """Pool `name` with `nodes` nodes (GPU, CPU) or of `topology` (a TPU slice). A resize
    that raises the pool's monthly cost needs a `reason`, kept in the stack as the pool's
    `reason` (issue 38: a resize could double a pool's cost with nothing recorded); one that
    lowers it may carry one."""
    what = f"the resize of pool {name}"
    before = _base(raw, catalog, what)
    pool = _find(before, name, what)
    if (nodes is None) == (topology is None):
        raise RequestRefused(what, [Problem("--nodes/--topology", "give one of them",
                                            "--nodes N for a GPU or CPU pool, --topology AxB "
                                            "for a TPU slice")])
    updates = _tpu_updates(pool, topology, nodes, catalog, what, raw) if pool.shape.tpu \
        else _node_updates(pool, topology, nodes, what)
    if not updates:
        return Change("resize", name, dict(raw), before, before)
    spec = with_updates(raw, name, updates)
    result = check(spec, catalog)
    if isinstance(result, SpecError):
        raise RequestRefused(what, result.problems, alternatives=alternatives(
            raw, before, catalog, result.problems, resize=(name, updates)))
    raised = _cost_raised(pool, next(p for p in result.pools if p.name == name))
    if raised and not (reason or "").strip():
        raise RequestRefused(what, [Problem(
            "--reason", f"the resize raises {name}'s cost {raised}, and no reason was given",
            f"say why with --reason TEXT (kept in the stack as the pool's `reason`), e.g. "
            f"accelfleet pool resize {name} "
            + (f"--nodes {nodes}" if nodes is not None else f"--topology {topology}")
            + ' --reason "INC-123: the eval backlog"')])
    if reason is not None and reason.strip():
        updates = {**updates, "reason": reason.strip()}
        spec = with_updates(raw, name, updates)
        result = check(spec, catalog)
        if isinstance(result, SpecError):  # the reason itself (too long, control characters)
            raise RequestRefused(what, result.problems)
    notes = (_recreated(pool), *_named_for(pool, updates)) if pool.shape.tpu else ()
    return Change("resize", name, spec, before, result, updates=updates, notes=notes)


def _cost_raised(before: ResolvedPool, after: ResolvedPool) -> str:
    """`from about $X to about $Y a month` when `after` may cost more a month than `before`
    (its largest size; a pool priced before and unpriced after counts as raised), else ''."""
    from fleet.words import usd

    old = before.cost.max_monthly_usd if before.cost else None
    new = after.cost.max_monthly_usd if after.cost else None
    if new is None:
        return "" if old is None else f"from about {usd(old)} a month to an unpriced size"
    if old is None or new <= old + 0.005:
        return ""
    return f"from about {usd(old)} to about {usd(new)} a month"


def _named_for(pool: ResolvedPool, updates: Mapping[str, Any]) -> tuple[str, ...]:
    """A slice whose name carries its old topology (`vision-v6e-2x2`, as `pool request` names
    it) says so once resized: the name stays (what refers to it keeps working), the note says
    how to rename it while the slice is recreated anyway."""
    old = pool.shape.topology_str
    new = str(updates.get("topology") or "")
    if not old or not new or old == new or old not in pool.name.split("-"):
        return ()
    renamed = "-".join(new if part == old else part for part in pool.name.split("-"))
    return (f"its name {pool.name} still says {old}: the name is kept (what refers to it "
            f"keeps working); to rename it {renamed}, change its `name:` and every reference "
            "to it in the stack in the same change",)


def _recreated(pool: ResolvedPool) -> str:
    """What a TPU slice's resize does to it: a slice's topology is fixed when it is created
    (components/engine/data/replacements.yaml: placementPolicy.tpuTopology for a GKE slice,
    acceleratorConfig for a TPU VM), so the new topology is a new slice."""
    from fleet.words import counted

    shape = pool.shape
    return (f"the slice is recreated, not resized in place: `pulumi up` deletes {pool.name} "
            f"({shape.topology_str}: {counted(shape.hosts, 'host')} and the work on "
            f"{'it' if shape.hosts == 1 else 'them'}) and creates it anew at the new topology; "
            "drain it first (`accelfleet plan --diff` flags the replacement)")


def _node_updates(pool: ResolvedPool, topology: str | None, nodes: int | None,
                  what: str) -> dict[str, Any]:
    if topology is not None:
        raise RequestRefused(what, [Problem("--topology", f"{pool.name} is a "
                                            f"{pool.shape.kind.upper()} pool of "
                                            f"{pool.shape.machine_type}; only TPU slices take a "
                                            "topology", "give its node count with --nodes N")])
    assert nodes is not None
    if nodes < 0:
        raise RequestRefused(what, [Problem("--nodes", f"{nodes} nodes", "give 0 nodes or more "
                                            "(`pool remove` gives the pool back)")])
    return {} if pool.spec.nodes == nodes else {"nodes": nodes}


def _tpu_updates(pool: ResolvedPool, topology: str | None, nodes: int | None,
                 catalog: Catalog, what: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    shape = pool.shape
    assert shape.tpu is not None
    if nodes is not None:
        kind = "a multi-host TPU slice" if shape.multi_host else "a TPU slice"
        raise RequestRefused(what, [Problem(
            "--nodes", f"{pool.name} is {kind} ({shape.topology_str}: {shape.chips} chips on "
            f"{shape.hosts} host{'s' if shape.hosts != 1 else ''}); {kind} changes topology, "
            "never node count", "resize it with --topology (its nodes follow from the "
            "topology); for more identical slices set `multislice`")],
            alternatives=[f"--topology {t}" for t in topology_options(catalog, shape, nodes)])
    assert topology is not None
    try:
        new = catalog.tpu_slice(shape.tpu.key, topology,
                                single_host=pool.runtime == "tpu-vm")
    except AccelfleetError as exc:
        near = getattr(exc, "suggestions", ())
        raise RequestRefused(what, [Problem("--topology", exc.message, exc.hint)],
                             alternatives=[f"--topology {t}" for t in near]) from None
    if new.topology == shape.topology:
        return {}
    entry = next(p for p in pools_of(raw) if p.get("name") == pool.name)
    updates: dict[str, Any] = {"accelerator": shape.tpu.key, "topology": new.topology_str}
    if "nodes" in entry:
        updates["nodes"] = REMOVE  # a slice's nodes follow from its topology
    auto = pool.spec.autoscaling
    if auto is not None and shape.multi_host and (auto.min_nodes, auto.max_nodes) == (
            0, shape.hosts):
        updates["autoscaling"] = {"min_nodes": 0, "max_nodes": new.hosts}  # still atomic
    return updates


def remove_pool(raw: Mapping[str, Any], name: str, *, catalog: Catalog) -> Change:
    """The fleet without pool `name` (refused where the rest would break a rule)."""
    what = f"the removal of pool {name}"
    before = _base(raw, catalog, what)
    _find(before, name, what)
    spec = without_pool(raw, name)
    result = check(spec, catalog)
    if isinstance(result, SpecError):
        raise RequestRefused(what, [_named_by(p, name, raw) for p in result.problems],
                             hint="the rest of the stack refers to this pool: change what "
                             "each problem names first")
    return Change("remove", name, spec, before, result)


def _named_by(problem: Problem, name: str, raw: Mapping[str, Any]) -> Problem:
    """A routing entry that names the removed pool, said as what it is (the did-you-mean of
    an unknown name would offer another GPU, maybe on another cloud): which team's `prefer`
    names it, and that the entry goes first."""
    at = problem.where
    if not isinstance(at, Where) or at.section != "routing" or f"{name!r}" not in problem.message:
        return problem
    match at.steps:
        case ("teams", int(i), "prefer", int(j)):
            pass
        case _:
            return problem
    teams = (raw.get("routing") or {}).get("teams") if isinstance(raw.get("routing"),
                                                                  Mapping) else None
    rule = teams[i] if isinstance(teams, list) and i < len(teams) else {}
    team = rule.get("team", "?") if isinstance(rule, Mapping) else "?"
    return Problem(problem.where, f"team {team}'s routing `prefer` list names pool {name} "
                   f"(entry {j + 1}): Kueue would route its jobs to a pool that is "
                   "gone", f"remove {name!r} from routing.teams[{i}].prefer first (team "
                   f"{team}), then remove the pool")
