"""The node stand-in's pure helpers (tests/controlplane/_kubelet.py): times, a pod's IP, a
run's exit code, and the node conditions the kubelet posts and merges."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.controlplane._kubelet import _Run


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# a pod that runs its own command on a node whose pods print canned output (a DaemonSet's pod
# beside the proof pods: the DCGM exporter stand-in, issue 37)
OWN_COMMAND = "standin.accelfleet.io/own-command"


def pod_ip(pod: dict[str, Any]) -> str:
    """The pod's IP: loopback, except for a pod that declares a container port, which gets
    this machine's own non-loopback address (where the process, listening on every address,
    answers too): the API server's pods/proxy refuses a loopback pod IP ("400 BadRequest:
    address not allowed", seen on this plane), so a pod read through its proxy (the DCGM
    exporter, issue 37) needs a routable one. Loopback where the machine has none."""
    if not any(c.get("ports") for c in pod["spec"].get("containers") or []):
        return "127.0.0.1"
    return _own_address()


def _own_address() -> str:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 9))  # UDP: no packet is sent; the route picks it
            address = str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"
    return address if not address.startswith("127.") else "127.0.0.1"


def run_code(run: _Run) -> int | None:
    try:
        return int((run.workdir / "exit").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def merged_conditions(old: list[dict[str, Any]], new: list[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
    """The conditions a kubelet writes: its own (`new`), each keeping the old
    lastTransitionTime where its status did not change, then every condition another writer
    owns as it was (the scheduler's PodScheduled, a DisruptionTarget). A merge patch replaces
    the whole list, so without this the scheduler's PodScheduled (and its time, from which
    the launcher measures a pod's start-up) was lost. Kubernetes v1.36.2:
    pkg/kubelet/kubelet_pods.go generateAPIPodStatus appends PodScheduled=True;
    pkg/kubelet/status/status_manager.go mergePodStatus keeps the conditions not owned by the
    kubelet; updateLastTransitionTime keeps an unchanged condition's time (read
    2026-11-28)."""
    before = {c.get("type"): c for c in old}
    out = []
    mine = {c["type"] for c in new}
    if "PodScheduled" not in mine:
        sched = before.get("PodScheduled") or {"type": "PodScheduled", "status": "True",
                                                "lastTransitionTime": now()}
        out.append({**sched, "status": "True"})
        mine.add("PodScheduled")
    for c in new:
        prev = before.get(c["type"])
        if prev is not None and prev.get("status") == c.get("status") and \
                prev.get("lastTransitionTime"):
            c = {**c, "lastTransitionTime": prev["lastTransitionTime"]}
        out.append(c)
    out.extend(c for c in old if c.get("type") not in mine)
    return out


def _conditions(t: str, *, ready: bool) -> list[dict[str, Any]]:
    flag = "True" if ready else "False"
    out = [{"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": t},
           {"type": "Initialized", "status": "True", "lastTransitionTime": t},
           {"type": "Ready", "status": flag, "lastTransitionTime": t},
           {"type": "ContainersReady", "status": flag, "lastTransitionTime": t}]
    if not ready:
        for c in out[2:]:
            c["reason"] = "PodCompleted"
    return out
