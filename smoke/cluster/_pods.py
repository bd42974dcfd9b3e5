"""What the launcher reads of a pod: one small record per pod per tick (memory stays flat
however many pools and nodes the run has)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleet.labels import PAIR_LABEL, POOL_LABEL
from smoke.cluster import _stalls as S
from smoke.cluster._podtime import pod_timing

INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
SLICE_LABEL = "jobset.sigs.k8s.io/job-index"  # a JobSet pod's replicated-job index: its slice


@dataclass(frozen=True, slots=True)
class _PodState:
    """What the launcher reads of a pod."""

    name: str
    pool: str
    node: str | None
    index: int
    phase: str
    exit_code: int | None
    unschedulable: str  # the scheduler's message while it cannot place the pod
    slice: int | None = None  # a TPU pod's slice
    init_problem: str = ""  # an init/sidecar container that keeps restarting, never ready
    timing: dict[str, Any] | None = None  # smoke.cluster._podtime.PodTiming: startup apart from run
    pair: str = ""  # a pair round's pod: its pair's Job (smoke.cluster._pairs)

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> _PodState:
        meta, status = pod["metadata"], pod.get("status") or {}
        labels = meta.get("labels") or {}
        return cls(name=meta["name"], pool=labels.get(POOL_LABEL, ""),
                   node=(pod.get("spec") or {}).get("nodeName"),
                   index=int(labels.get(INDEX_LABEL, "0") or 0),
                   phase=status.get("phase", "Pending"), exit_code=_exit_code(status),
                   unschedulable=_unschedulable(status), init_problem=S.init_problem(status),
                   slice=int(labels[SLICE_LABEL]) if str(labels.get(SLICE_LABEL, "")).isdigit()
                   else None, timing=pod_timing(status).to_dict(),
                   pair=str(labels.get(PAIR_LABEL) or ""))


def _unschedulable(status: Mapping[str, Any]) -> str:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get(
                "reason") == "Unschedulable":
            return str(cond.get("message") or "Unschedulable")
    return ""


def _exit_code(status: Mapping[str, Any]) -> int | None:
    for cs in status.get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated")
        if term is not None:
            code = term.get("exitCode", 0) if isinstance(term, dict) else None
            return code if isinstance(code, int) and not isinstance(code, bool) else None
    return None
