"""Name the node and the cause of a stall within each stage's budget (issue 19 items 12, 13).

- A pod whose init or sidecar container (the TCPX/TCPXO receive daemon) never becomes ready
  restart-loops while the pod stays Pending: after `INIT_RESTARTS` restarts it is failed,
  named with the container, its state and last exit, instead of waiting out the deadline.
- A TPU slice whose host crashed is failed by the JobSet controller, which deletes the other
  hosts' pods: each host that vanished is named with the host that failed, at once.
- A pod still running at the pool's deadline is named with its node and its last progress
  line (the stage it stalled in), not only counted; the line is read shortly before the Job's
  deadline, which kills the pod and takes its log with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smoke.cluster.run import POD
from smoke.probes.results import ProbeResult, Verdict

INIT_RESTARTS = 3  # a daemon restarted this often, never ready, will not become ready
LAST_LINE_LEAD_S = 10.0  # read running pods' last lines this long before the Job deadline


def init_problem(status: Mapping[str, Any]) -> str:
    """Why the pod's init/sidecar containers keep it from starting, or ""."""
    for cs in status.get("initContainerStatuses") or []:
        restarts = int(cs.get("restartCount") or 0)
        if cs.get("ready") or restarts < INIT_RESTARTS:
            continue
        state = cs.get("state") or {}
        waiting = state.get("waiting") or {}
        last = (cs.get("lastState") or {}).get("terminated") or {}
        why = waiting.get("reason") or next(iter(state), "not ready")
        exit_ = f"; last exit {last.get('exitCode')} ({last.get('reason') or 'Error'})" \
            if last else ""
        return (f"container {cs.get('name')} never became ready: restarted {restarts} times, "
                f"{why}{exit_}")
    return ""


def stalled_init(pod: str, node: str | None, problem: str) -> ProbeResult:
    return ProbeResult("host", POD, 0, Verdict.FAIL, f"pod {pod} on {node or 'no node'} "
                       f"cannot start: {problem} (on a TCPX/TCPXO pool: the receive daemon; "
                       "check the node's GPU NICs and the daemon's log)",
                       details={"init_problem": problem})


def vanished(pod: str, node: str | None, crashed: str) -> ProbeResult:
    return ProbeResult("host", POD, 0, Verdict.FAIL, f"host {node or pod} did not report: "
                       f"{crashed} failed first, and the JobSet controller ended the slice, "
                       "deleting this host's pod", details={"slice_failed_by": crashed})


def unfinished(pod: str, node: str | None, timeout_s: int, last: str) -> ProbeResult:
    return ProbeResult("host", POD, 0, Verdict.FAIL, f"pod {pod} on {node or 'no node'} did "
                       f"not finish within {timeout_s} s; it was at: {last or '(no output)'}",
                       details={"last_line": last})
