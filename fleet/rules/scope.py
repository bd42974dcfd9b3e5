"""Names wider than a stack (issue 36, class 3): a name whose scope is a cloud's project,
region, zone or account (`DerivedName.reach`, fleet.rules.unique_names) is shared with every
other stack deployed there. Within one stack `check_unique_names` keeps each unique; across
stacks the collision is known where the other stack's file is known: the stack files beside
this one (Pulumi keeps a project's stacks in one directory, `stackConfigDir: stacks/`). Two
stacks that derive one name in one scope (two Cloud TPU VM fleets' `tpu-vms-vpc` in one
project, one cluster name in one project but two regions: `<cluster>-vpc`) each validate
alone, and the second `pulumi up` gets 409 from the cloud; this check refuses the stack
instead, naming the other stack file and the name.

Names scoped to a cluster or to the stack's own Pulumi state are left out: a cluster's names
collide only where the cluster itself does, which its own name (a GKE cluster per project and
location, an EKS cluster per account and region) is checked for here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fleet.errors import AccelfleetError, Problem, SpecError
from fleet.model import Fleet
from fleet.names import TPU_VMS_NAME
from fleet.rules.unique_names import DerivedName, derived_names

# Pulumi's stack files: Pulumi.<stack>.yaml (stacks/ holds the project's stacks)
STACK_FILES = "Pulumi.*.yaml"


def wide_names(fleet: Fleet) -> list[DerivedName]:
    """The names of `fleet` whose scope is wider than a stack."""
    return [d for d in derived_names(fleet.spec, fleet.pools, fleet.system_pools,
                                     fleet.routing) if d.wider_than_a_stack]


def _sibling_fleet(path: Path) -> Fleet | None:
    """The fleet of another stack file, as far as it resolves (None: not readable)."""
    from fleet.rules.validate import validate_fleet
    from fleet.stack.read import read_stack_file

    try:
        return validate_fleet(read_stack_file(path), source=str(path))
    except SpecError as exc:  # invalid: its names as far as it resolved
        partial = exc.partial
        return partial if isinstance(partial, Fleet) else None
    except AccelfleetError:
        return None


def sibling_stacks(path: str | Path) -> list[Path]:
    """The other stack files beside `path`, sorted; the example stack (Pulumi.example.yaml,
    the project's demo, read only: never deployed, fleet.stack.rule) is not one: a team's
    stack copied from it and not yet given its own project is not refused for the copy."""
    from fleet.stack.read import EXAMPLE_STACK

    here = Path(path).resolve()
    if not here.name.startswith("Pulumi.") or not here.parent.is_dir():
        return []
    return sorted(p for p in here.parent.glob(STACK_FILES)
                  if p.resolve() != here and p.name != EXAMPLE_STACK.name)


def cross_stack_problems(path: str | Path, fleet: Fleet,
                         siblings: Sequence[Path] | None = None) -> list[Problem]:
    """A problem for each name of `fleet` wider than a stack that a sibling stack file
    derives in the same scope, once per place of this stack."""
    mine = wide_names(fleet)
    if not mine:
        return []
    out: list[Problem] = []
    told: set[object] = set()
    for other in sibling_stacks(path) if siblings is None else siblings:
        theirs_fleet = _sibling_fleet(other)
        if theirs_fleet is None:
            continue
        theirs = {(d.scope, d.name): d for d in wide_names(theirs_fleet)}
        shared: dict[object, list[tuple[DerivedName, DerivedName]]] = {}
        for d in mine:
            hit = theirs.get((d.scope, d.name))
            if hit is not None and d.where not in told:
                shared.setdefault(d.where, []).append((d, hit))
        for where, pairs in shared.items():
            told.add(where)
            d, hit = pairs[0]
            names = "; ".join(f"{m.name!r} among the {m.scope}" for m, _ in pairs)
            out.append(Problem(
                d.where,
                f"{d.source} makes {names}, and stack file {other.name} ({hit.source}) makes "
                f"{'it' if len(pairs) == 1 else 'them'} too: names there are shared by every "
                "stack deployed to it, and the second `pulumi up` fails (409 already exists)",
                _fix(d)))
    return out


def _fix(d: DerivedName) -> str:
    if d.source.startswith("the Cloud TPU VM pools"):
        # one fixed stem per project (fleet.names TPU_VMS_NAME): no rename of a pool helps
        return ("a project's Cloud TPU VM pools share one network and identity "
                f"({TPU_VMS_NAME}-*): keep every Cloud TPU VM pool of the project in one "
                "stack, or deploy this stack to another project")
    return ("rename one of them (the cluster or pool the name comes from), or deploy the "
            "stacks to different projects, regions or accounts")


def check_sibling_stacks(path: str | Path, fleet: Fleet, raw: object = None) -> None:
    """Raise `SpecError` when a name of `fleet` wider than a stack is another stack's too
    (`raw`: the stack's fleet as read, for the problems' records)."""
    from fleet.spec.errors import records

    problems = cross_stack_problems(path, fleet)
    if problems:
        raise SpecError(problems, source=str(path), partial=fleet,
                        records=records(problems, raw))


__all__ = ["check_sibling_stacks", "cross_stack_problems", "sibling_stacks", "wide_names"]
