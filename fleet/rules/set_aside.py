"""One pass names every independent problem of a stack that failed its types: what failed is
set aside and the rules run on the rest (`rules_beside`, called by `fleet.rules.validate`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from fleet import words as W
from fleet.errors import Problem, Where
from fleet.model import ResolvedPool
from fleet.spec.errors import readme_words
from fleet.spec.fields import FleetSpec

_LISTS = ("clusters", "teams", "pools", "prices")  # FleetSpec's lists of named entries
# A pool's fields that no rule reads beside their own checks and that do not change its cost:
# one of the wrong type is dropped (its default taken) and the pool stays in every check,
# its team's budget included.
_NEUTRAL_POOL_FIELDS = frozenset({"labels", "taints", "driver", "ami", "disk_size_gb",
                                  "requested_by", "reason", "expires"})
# Sections whose default stands in for a broken one: no other rule reads them.
_OPTIONAL_SECTIONS = ("smoke", "routing")
# Fields no rule reads (the project and account name the place, not the shape): a
# well-formed stand-in lets the rest be checked. A broken region is not replaced: every zone,
# price and quota check depends on it.
_STAND_INS = {("clouds", "gcp", "project"): "accelfleet-stand-in",
              ("clouds", "aws", "account"): "000000000000"}


def rules_beside(exc: ValidationError, raw: object,
                 check: Callable[[FleetSpec], tuple[list[Problem], list[ResolvedPool]]]
                 ) -> list[Problem]:
    """The rules' problems in the rest of a stack that failed its types, so that one pass
    names every independent problem (a bad `nodes` in one pool, an unknown accelerator in
    another, a budget overrun, a bad `smoke.timeout_s` beside a zone the region lacks).

    What failed is set aside (`_SetAside`): a list entry (a rule problem that names it is
    left out: its cause is the type error), a pool's cost-neutral field (the pool stays, in its
    team's budget too), an optional section (`smoke`, `routing`), a cloud's project or
    account (a stand-in). A pool set aside whole leaves its team's budget checked without it:
    a problem says so. An error elsewhere (a cloud's region, a list itself) leaves nothing to
    check apart: no rule problem then."""
    if not isinstance(raw, dict):
        return []
    aside = _SetAside(raw)
    if not all(aside.take(tuple(err["loc"])) for err in exc.errors()):
        return []
    rest = aside.rest()
    try:
        spec = FleetSpec.model_validate(rest)
    except ValidationError:
        return []
    found, resolved = check(spec)
    problems = [p for p in readme_words(found, rest) if not aside.explains(p)]
    return aside.with_budget_notes(problems, spec, resolved)


class _SetAside:
    """The parts of a raw stack set aside for their type errors, and what is left."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.entries: dict[str, set[int]] = {}  # list -> indices of entries set aside
        self.fields: dict[int, set[str]] = {}  # pool index -> fields dropped
        self.sections: set[str] = set()
        self.stand_ins: dict[tuple[str, str, str], str] = {}
        self.prefixes: set[str] = set()  # `where` of rule problems the type errors explain

    def take(self, loc: tuple[int | str, ...]) -> bool:
        """Set aside what the error at `loc` broke; False when it cannot be set apart."""
        key = loc[0] if loc else None
        if key in _LISTS and len(loc) >= 2 and isinstance(loc[1], int) \
                and isinstance(self.raw.get(key), list):
            entry = self.raw[key][loc[1]]
            if key == "pools" and len(loc) >= 3 and loc[2] in _NEUTRAL_POOL_FIELDS \
                    and isinstance(entry, dict) and isinstance(entry.get("name"), str):
                self.fields.setdefault(loc[1], set()).add(str(loc[2]))
                self.prefixes.add(f"pools {entry['name']!r}.{loc[2]}")
            else:
                self.entries.setdefault(str(key), set()).add(loc[1])
            return True
        if key in _OPTIONAL_SECTIONS:
            self.sections.add(str(key))
            self.prefixes.add(str(key))
            return True
        at = tuple(str(part) for part in loc[:3])
        clouds = self.raw.get("clouds")
        if len(loc) == 3 and at in _STAND_INS and isinstance(clouds, dict) \
                and isinstance(clouds.get(at[1]), dict):
            self.stand_ins[at] = _STAND_INS[at]  # type: ignore[index]
            self.prefixes.add(".".join(at))
            return True
        return False

    def rest(self) -> dict[str, Any]:
        rest = {k: v for k, v in self.raw.items() if k not in self.sections}
        for key, indices in self.entries.items():
            rest[key] = [item for i, item in enumerate(self.raw[key]) if i not in indices]
        if self.fields:
            rest["pools"] = [
                {k: v for k, v in item.items() if k not in self.fields[i]}
                if i in self.fields and isinstance(item, dict) else item
                for i, item in enumerate(self.raw["pools"])
                if i not in self.entries.get("pools", set())]
        if self.stand_ins:
            clouds = {k: dict(v) if isinstance(v, dict) else v
                      for k, v in self.raw["clouds"].items()}
            for (_, cloud, name), value in self.stand_ins.items():
                clouds[cloud][name] = value
            rest["clouds"] = clouds
        return rest

    def names(self, key: str) -> list[str]:
        items = self.raw.get(key)
        return [str(items[i]["name"]) for i in sorted(self.entries.get(key, ()))
                if isinstance(items, list) and isinstance(items[i], dict)
                and isinstance(items[i].get("name"), str)]

    def explains(self, problem: Problem) -> bool:
        names = [n for key in self.entries for n in self.names(key)]
        quoted = [f"{n!r}" for n in names] + [f'"{n}"' for n in names]
        return any(q in problem.where or q in problem.message for q in quoted) \
            or any(problem.where == p or problem.where.startswith((f"{p}.", f"{p}["))
                   for p in self.prefixes)

    def with_budget_notes(self, problems: list[Problem], spec: FleetSpec,
                          resolved: list[ResolvedPool]) -> list[Problem]:
        """`problems`, saying of each budgeted team with a pool set aside that its budget was
        checked without that pool: on its over-budget problem, else as a problem of its own."""
        by_team: dict[str, list[str]] = {}
        for i in sorted(self.entries.get("pools", ())):
            item = self.raw["pools"][i]
            if isinstance(item, dict) and isinstance(item.get("team"), str) \
                    and isinstance(item.get("name"), str):
                by_team.setdefault(item["team"], []).append(item["name"])
        out = list(problems)
        for team in spec.teams:
            aside = by_team.get(team.name)
            if not aside or team.monthly_budget_usd is None:
                continue
            pools = ", ".join(repr(n) for n in aside)
            where = Where("teams", name=team.name, field="monthly_budget_usd")
            without = (f"checked without pool {pools} (set aside for its type error, so its "
                       "cost is unknown)")
            over = next((i for i, p in enumerate(out) if p.where == where), None)
            if over is not None:  # over budget even without it: the figure leaves it out
                out[over] = replace(out[over], message=f"{out[over].message}; {without}")
                continue
            most = sum(p.cost.max_monthly_usd or 0.0 for p in resolved
                       if p.team == team.name and p.cost is not None)
            out.append(Problem(
                where, f"{without}: the team's other pools cost up to about {W.usd(most)} a "
                f"month of its {W.usd(team.monthly_budget_usd)} budget",
                f"fix pool {pools} and validate again: its cost counts toward the budget"))
        return out
