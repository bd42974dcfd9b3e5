"""How long a smoke pod waited to start and how long its agent ran, from the pod's status.

A pod's deadline counts from its start, and its first minutes on a fresh node go to pulling a
multi-GB framework image (and, on GPUDirect pools, to the RxDM sidecar getting ready). The
kubelet records no pull duration in the pod's status, but it records when the pod was placed
(`PodScheduled` condition) and when the agent container started and finished
(`containerStatuses[].state`): the time between placing and starting is the image pulls and the
init/sidecar containers; the time between starting and finishing is the agent's own run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

AGENT = "agent"  # the smoke pods' agent container


@dataclass(frozen=True, slots=True)
class PodTiming:
    scheduled_at: str | None
    started_at: str | None  # the agent container's start
    finished_at: str | None
    startup_s: float | None  # placed -> agent started: image pulls, init and sidecar containers
    run_s: float | None  # agent started -> finished

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _when(value: object) -> datetime | None:
    return aware_time(value)


def aware_time(value: object) -> datetime | None:
    """An API's or an annotation's time (RFC 3339, `Z` or an offset); None for anything else:
    not text, not a time, or a time without a zone (it cannot be compared with one that has
    a zone: Python raises TypeError)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None or end < start:
        return None
    return (end - start).total_seconds()


def pod_timing(status: Mapping[str, Any], container: str = AGENT) -> PodTiming:
    """The timing of `container` in a pod `status` (as the API returns it); a figure whose
    timestamps are missing or out of order is None, never a guess."""
    scheduled = None
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            scheduled = cond.get("lastTransitionTime")
    started = finished = None
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") != container:
            continue
        state = cs.get("state") or {}
        term, running = state.get("terminated") or {}, state.get("running") or {}
        started = term.get("startedAt") or running.get("startedAt")
        finished = term.get("finishedAt")
    t_sched, t_start, t_end = _when(scheduled), _when(started), _when(finished)
    return PodTiming(scheduled_at=scheduled if t_sched else None,
                     started_at=started if t_start else None,
                     finished_at=finished if t_end else None,
                     startup_s=_seconds(t_sched, t_start), run_s=_seconds(t_start, t_end))


@dataclass(frozen=True, slots=True)
class SliceStart:
    """When the last host of a multi-host slice started its agent, and how long each took."""

    started_at: str  # the last host's agent start (RFC 3339, as the API wrote it)
    spread_s: float  # first host's start -> last host's start
    startup_s: dict[str, float | None]  # host -> placed -> agent started (image pulls, init)
    slowest: str


def slice_start(timings: Mapping[str, Mapping[str, Any]], hosts: int) -> SliceStart | None:
    """From each host's PodTiming (as `to_dict` gives it, by node or pod name): None until
    `hosts` hosts have started their agent container; then the last start, the spread and
    each host's startup. The launcher measures it: a pod cannot read its own status."""
    started = {h: (t.get("started_at"), aware_time(t.get("started_at")))
               for h, t in timings.items()}
    started = {h: v for h, v in started.items() if v[1] is not None}
    if len(started) < hosts or not started:
        return None
    last = max(started, key=lambda h: started[h][1])  # type: ignore[arg-type, return-value]
    first = min(started, key=lambda h: started[h][1])  # type: ignore[arg-type, return-value]
    t_last, t_first = started[last][1], started[first][1]
    assert t_last is not None and t_first is not None
    startup = {h: t.get("startup_s") for h, t in timings.items()}
    return SliceStart(started_at=str(started[last][0]),
                      spread_s=(t_last - t_first).total_seconds(),
                      startup_s={h: (float(v) if isinstance(v, (int, float)) else None)
                                 for h, v in sorted(startup.items())}, slowest=last)
