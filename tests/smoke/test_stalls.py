"""Stalls named within each stage's budget (issue 19 items 12, 13): a TPU host that crashed
is named and the hosts the JobSet controller then deleted are named with it, at once; a
receive-daemon sidecar that never becomes ready fails its pod, named, instead of restart-looping
until the deadline; a pod still running at the deadline is named with the stage it was in."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from smoke.cluster._stalls import INIT_RESTARTS, init_problem
from smoke.cluster.launcher import _PodState
from tests.smoke.test_cluster_run import (
    STACK,
    _recorded,
    add_pool_nodes,
    add_tpu_hosts,
    smoke_run,
)

pytest.importorskip("torch")

# A native sidecar crash-looping, as the kubelet reports it (Pod status, Kubernetes 1.29+
# sidecar containers: https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/).
CRASHLOOP = {"phase": "Pending", "initContainerStatuses": [{
    "name": "tcpxo-daemon", "ready": False, "restartCount": INIT_RESTARTS + 2, "started": False,
    "state": {"waiting": {"reason": "CrashLoopBackOff",
                          "message": "back-off 2m40s restarting failed container"}},
    "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}


def test_a_crash_looping_sidecar_is_read_from_the_pod_status() -> None:
    why = init_problem(CRASHLOOP)
    assert "tcpxo-daemon" in why and "CrashLoopBackOff" in why and "last exit 1" in why
    assert init_problem({"initContainerStatuses": [{**CRASHLOOP["initContainerStatuses"][0],
                                                    "restartCount": 1}]}) == ""
    pod = _PodState.of({"metadata": {"name": "p", "labels": {}}, "spec": {"nodeName": "n"},
                        "status": CRASHLOOP})
    assert pod.init_problem == why


def _when(cond: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_sidecar_never_ready_fails_its_node_named(cluster: Any, tmp_path: Path,
                                                    cpu_nodes: None) -> None:
    stack = tmp_path / "Pulumi.fake.yaml"
    stack.write_text(STACK, encoding="utf-8")
    a = add_pool_nodes(cluster, "gpu-a", 2)
    cluster.set_node_output(a[0], _recorded(a[0], 800.0))
    cluster.set_node_command(a[1], ["python", "-c", "import time; time.sleep(60)"])

    def kubelet_reports_crashloop() -> None:  # the daemon's pod never leaves Pending
        def stuck() -> list[dict[str, Any]]:
            return [p for p in cluster.objects("accelfleet.io/pool=gpu-a")
                    if p.get("kind") == "Pod" and p["spec"].get("nodeName") == a[1]
                    and p["status"].get("phase") == "Running"]
        _when(lambda: bool(stuck()))
        for p in stuck():
            cluster.patch("pods", p["metadata"]["namespace"], p["metadata"]["name"],
                               {"status": CRASHLOOP}, subresource="status")

    t = threading.Thread(target=kubelet_reports_crashloop, daemon=True)
    t.start()
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--tier", "2")
    t.join(5)
    assert code == 1, output
    assert doc is not None
    assert any(a[1] in f and "tcpxo-daemon never became ready" in f for f in doc["failures"])
    pool = next(p for p in doc["pools"] if p["name"] == "gpu-a")
    assert pool["status"] != "timeout"  # named within its budget, not at the deadline


def test_a_crashed_tpu_host_is_named_and_its_deleted_peers_too(fake_cluster: Any,
                                                               tmp_path: Path,
                                                               cpu_nodes: None) -> None:
    stack, hosts = add_tpu_hosts(fake_cluster, tmp_path)
    fake_cluster.set_node_output(hosts[0], "jax.distributed: DEADLINE_EXCEEDED", exit_code=3)
    for h in hosts[1:]:  # the others wait in the slice's init
        fake_cluster.set_node_command(h, ["python", "-c", "import time; time.sleep(60)"])

    def jobset_failure_policy() -> None:  # maxRestarts 0: the controller ends the slice
        def pods() -> list[dict[str, Any]]:
            return [p for p in fake_cluster.objects("accelfleet.io/pool=v5p-ms")
                    if p.get("kind") == "Pod"]
        _when(lambda: any(p["status"].get("phase") == "Failed" for p in pods()) and all(
            p["status"].get("phase") in ("Running", "Failed") for p in pods())
            and len(pods()) == len(hosts))
        time.sleep(1.0)  # the launcher sees the failed host and its running peers first
        for p in pods():
            if p["status"].get("phase") == "Running":
                fake_cluster.delete("pods", p["metadata"]["namespace"], p["metadata"]["name"],
                                    None)

    t = threading.Thread(target=jobset_failure_policy, daemon=True)
    t.start()
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "2")
    t.join(5)
    assert code == 1, output
    assert doc is not None
    pool = doc["pools"][0]
    assert pool["status"] == "partial" and "host tpu-host-0 failed" in pool["reason"]
    assert any("tpu-host-0" in f and "exited 3" in f for f in doc["failures"])
    for h in hosts[1:]:
        assert any(f"host {h} did not report: tpu-host-0 failed first" in f
                   for f in doc["failures"]), doc["failures"]


def test_a_pod_stalled_at_the_deadline_is_named_with_its_stage(cluster: Any,
                                                               tmp_path: Path,
                                                               cpu_nodes: None) -> None:
    stack = tmp_path / "Pulumi.fake.yaml"
    stack.write_text(STACK, encoding="utf-8")
    a = add_pool_nodes(cluster, "gpu-a", 2)
    cluster.set_node_output(a[0], _recorded(a[0], 800.0))
    cluster.set_node_command(a[1], ["python", "-c", "import sys, time; print('[12/20] T3 "
                                         "all-reduce', flush=True); time.sleep(120)"])
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--tier", "2", "--timeout-s", "5")
    assert code == 1, output
    assert doc is not None
    assert any(a[1] in f and "it was at: [12/20] T3 all-reduce" in f
               for f in doc["failures"]), doc["failures"]
