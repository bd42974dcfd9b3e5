"""Quarantine's vocabulary and records (smoke.cluster.quarantine, smoke.cluster.release): the
taint's, label's and annotations' keys, the cap (`--max-quarantine`), what happened to each
node (NodeAction, ActionReport) and a quarantined node as `smoke status` lists it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fleet.errors import InputError
from fleet.labels import SMOKE_ANNOTATION_PREFIX, SMOKE_FAILED, SMOKE_KEY
from fleet.quarantine_cap import DEFAULT_CAP, parse_cap
from fleet.taints import NO_SCHEDULE
from smoke.probes import names as P

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
