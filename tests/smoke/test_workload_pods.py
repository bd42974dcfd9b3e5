"""What each smoke pod asks of its node (issue 19 item 14): CPU and memory requests (no
BestEffort pod), EFA's RDMA setting only where the instance has RDMA read and huge pages as
AWS's EKS NCCL test requests them, TCPX's IPC_LOCK and socket mount as Google's nccl-test
manifests have them, and the pod's startup (image pull, sidecars) reported apart from its run.

References (read 2026-11-24):
- aws-samples/awsome-distributed-training@50820097a734ff9300a05149b6a60ed5eb7f91af
  micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml: p5 worker limits = requests
  {nvidia.com/gpu: 8, hugepages-2Mi: 5120Mi, vpc.amazonaws.com/efa: 32, memory: 32000Mi}, env
  FI_EFA_USE_DEVICE_RDMA=1.
- ofiwg/libfabric@a309bc2896765423e048d7d204a24f5332e211df prov/efa/src/rdm/efa_rdm_util.c:
  "FI_EFA_USE_DEVICE_RDMA=1 was set by user, but EFA device has no rdma-read capability.
  Application will abort()".
- aws/aws-ofi-nccl@45197dfad429db8e9fbc2da408d7c906c76dda2d src/platform-aws.cpp: gdr_required
  true on p4d/p4de/p5/p5e/p5en+, false on g5.48xlarge.
- GoogleCloudPlatform/container-engine-accelerators@0e5609b09f8daaa066be44cc3aaf49b11e1ea488
  gpudirect-tcpx/nccl-test-latest.yaml: the nccl-test container adds IPC_LOCK and mounts the
  tcpx-socket hostPath /run/tcpx at /tmp (so does AI-Hypercomputer/xpk@7ed501e tcpx_decorator).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from fleet import load_fleet
from fleet.catalog import load_catalog
from fleet.inventory import Inventory, InventoryHost, build_inventory
from smoke.cluster._podtime import pod_timing
from smoke.cluster.run import NodeOutcome
from smoke.cluster.workload import RenderedRun, RenderOptions, host_requests, render_run
from tests.smoke.workload_stack import agent_of, arg_of, env_of, inventory, pod_of, run

__all__ = ["inventory", "run"]  # fixtures

EFA_STACK = """\
config:
  accelfleet:fleet:
    clouds:
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: eks, cloud: aws}
    teams:
      - {name: research}
    pools:
      - {name: p4d, cluster: eks, team: research, accelerator: p4d.24xlarge, nodes: 2,
         zone: us-east-1a}
      - {name: g6e, cluster: eks, team: research, accelerator: g6e.48xlarge, nodes: 2,
         zone: us-east-1a}
      - {name: g5, cluster: eks, team: research, accelerator: g5.48xlarge, nodes: 2,
         zone: us-east-1a}
"""


@pytest.fixture(scope="module")
def efa_run(tmp_path_factory: pytest.TempPathFactory) -> RenderedRun:
    path = tmp_path_factory.mktemp("efa") / "Pulumi.efa.yaml"
    path.write_text(EFA_STACK, encoding="utf-8")
    inv = build_inventory(load_fleet(str(path)), "efa")
    return render_run(inv, RenderOptions(run_id="efa1", tier=3))


def qos_class(pod: dict[str, Any]) -> str:
    """The pod's QoS class by Kubernetes' rule (pkg/apis/core/helper/qos): BestEffort when no
    container requests or limits CPU or memory; Guaranteed when every container's CPU and
    memory limits equal their requests; else Burstable."""
    containers = pod["spec"]["containers"] + pod["spec"].get("initContainers", [])
    seen = [c.get("resources", {}) for c in containers]
    if not any(k in r.get(part, {}) for r in seen for part in ("requests", "limits")
               for k in ("cpu", "memory")):
        return "BestEffort"
    if all(r.get("limits", {}).get(k) is not None and r.get("limits", {}).get(k)
           == r.get("requests", {}).get(k, r.get("limits", {}).get(k))
           for r in seen for k in ("cpu", "memory")):
        return "Guaranteed"
    return "Burstable"


# -- requests -------------------------------------------------------------------------------
@pytest.mark.parametrize(("pool", "cpu", "memory"), [
    ("tcpx", "8", "32000Mi"), ("p5", "8", "32000Mi"), ("l4", "2", "8000Mi"),
    ("g6", "4", "16000Mi"), ("v6e", "4", "16000Mi"), ("v5p", "4", "16000Mi")])
def test_no_smoke_pod_is_best_effort(run: RenderedRun, pool: str, cpu: str,
                                     memory: str) -> None:
    pod = pod_of(run, pool)
    requests = agent_of(pod)["resources"]["requests"]
    assert (requests["cpu"], requests["memory"]) == (cpu, memory)
    assert qos_class(pod) == "Burstable"  # placed on CPU and memory, never OOM-capped


def test_requests_never_exceed_half_the_node(inventory: Inventory) -> None:
    catalog = load_catalog()
    host = catalog.hosts["g6.xlarge"]
    small = replace(inventory.pool("g6"), machine_type="g6.xlarge", devices_per_node=8,
                    host=InventoryHost(host.vcpus, host.memory_mib))
    half = {"cpu": str(host.vcpus // 2), "memory": f"{host.memory_mib // 2}Mi"}
    assert host_requests(small, catalog) == half
    # an inventory saved before it carried `host`: the catalog's figures for the machine
    assert host_requests(replace(small, host=None), catalog) == half


# -- EFA ------------------------------------------------------------------------------------
def test_efa_rdma_is_asked_only_where_the_device_has_rdma_read(efa_run: RenderedRun) -> None:
    p4d, g6e, g5 = (agent_of(pod_of(efa_run, p)) for p in ("p4d", "g6e", "g5"))
    assert env_of(p4d)["FI_EFA_USE_DEVICE_RDMA"] == "1"
    for agent in (g6e, g5):  # libfabric would abort: leave its default (RDMA only if present)
        env = env_of(agent)
        assert env["FI_PROVIDER"] == "efa" and "FI_EFA_USE_DEVICE_RDMA" not in env
    assert g6e["resources"]["limits"]["vpc.amazonaws.com/efa"] == "4"


FABRIC_FLAGS = ("--expect-fabric", "--expect-transport", "--expect-gdr", "--expect-nics")
G6E_LOG = Path(__file__).parent / "data" / "nccl" / "nccl-efa-ofi-eks-g6e-nogdr-info.log"


@pytest.mark.parametrize(("pool", "gdr", "healthy"), [
    ("g6e", "no", True), ("g5", "no", True), ("p4d", "yes", False), ("p5", "yes", False)])
def test_the_g6e_log_passes_on_a_g6e_pool_and_fails_where_gdr_is_required(
        efa_run: RenderedRun, run: RenderedRun, pool: str, gdr: str, healthy: bool) -> None:
    # aws/aws-ofi-nccl@2daf7d30 src/platform-aws.cpp: gdr_required true on p4d/p5, false on
    # g5.48xlarge, no entry for g6e; the recorded g6e.48xlarge log ran with GDR disabled,
    # "via NET/Libfabric/0" only. The pool's own rendered flags are what the agent judges by.
    from smoke.probes import agent
    from smoke.probes.nccl_log import judge, parse

    container = agent_of(pod_of(efa_run if pool != "p5" else run, pool))
    assert arg_of(container, "--expect-gdr") == gdr
    argv = [a for f in FABRIC_FLAGS if (v := arg_of(container, f)) is not None for a in (f, v)]
    expect = agent._fabric_expect(agent.parse_args(argv))
    assert expect is not None
    judged = judge(parse(G6E_LOG.read_text(encoding="utf-8")), expect)
    gdr_problems = [p for p in judged.problems if "no GPUDirect RDMA" in p]
    assert judged.ok is healthy, judged.problems
    assert bool(gdr_problems) is not healthy  # p4d, p5: failed for the lost GDR, named


def test_efa_pods_get_hugepages_as_aws_requests_them(efa_run: RenderedRun,
                                                     run: RenderedRun) -> None:
    for agent in (agent_of(pod_of(efa_run, "p4d")), agent_of(pod_of(run, "p5"))):
        res = agent["resources"]
        assert res["limits"]["hugepages-2Mi"] == res["requests"]["hugepages-2Mi"] == "5120Mi"
        assert "memory" in res["requests"]  # Kubernetes refuses huge pages without it
    p5 = agent_of(pod_of(run, "p5"))["resources"]["requests"]
    assert p5["memory"] == "32000Mi"  # the reference's figure for a p5's 8 GPUs
    assert "hugepages-2Mi" not in agent_of(pod_of(run, "g6"))["resources"]["limits"]


def test_efa_pods_pass_the_kubernetes_schema(efa_run: RenderedRun) -> None:
    for obj in efa_run.objects("eks"):
        kubernetes_validate.validate(obj, "1.37", strict=True)


# -- TCPX -----------------------------------------------------------------------------------
def test_tcpx_locks_memory_and_sees_the_rxdm_socket_where_the_reference_mounts_it(
        run: RenderedRun) -> None:
    pod = pod_of(run, "tcpx")
    agent = agent_of(pod)
    assert agent["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    mounts = {m["name"]: m["mountPath"] for m in agent["volumeMounts"]}
    volumes = {v["name"]: v.get("hostPath", {}).get("path") for v in pod["spec"]["volumes"]}
    assert (mounts["tcpx-socket"], volumes["tcpx-socket"]) == ("/tmp", "/run/tcpx")
    assert env_of(agent)["NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX"] == "/tmp"
    daemon = next(c for c in pod["spec"]["initContainers"] if c["name"] == "tcpx-daemon")
    assert {m["name"]: m["mountPath"] for m in daemon["volumeMounts"]}["tcpx-socket"] == \
        "/run/tcpx"  # the daemon's --uds_path
    for other in ("tcpxo", "rdma", "l4", "p5"):
        assert "securityContext" not in agent_of(pod_of(run, other)), other


# -- startup apart from run -----------------------------------------------------------------
# A real completed Job pod's status (kite-org/kite#136, 2025-09-01, excerpt: the conditions and
# the container's terminated state as the issue shows them).
KITE_STATUS: dict[str, Any] = {
    "phase": "Failed",
    "conditions": [
        {"type": "Initialized", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": "2025-09-01T23:53:36Z"},
        {"type": "Ready", "status": "False", "lastProbeTime": None,
         "lastTransitionTime": "2025-09-01T23:53:36Z", "reason": "PodFailed"},
        {"type": "ContainersReady", "status": "False", "lastProbeTime": None,
         "lastTransitionTime": "2025-09-01T23:53:36Z", "reason": "PodFailed"},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": "2025-09-01T23:53:36Z"}],
    "startTime": "2025-09-01T23:53:36Z",
    "containerStatuses": [{"name": "apply-jansora-app-job", "state": {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": "2025-09-01T23:53:36Z",
        "finishedAt": "2025-09-01T23:53:36Z"}}}],
}


def _with_times(scheduled: str, started: str, finished: str | None) -> dict[str, Any]:
    """The real status above with other times: a 3.5-minute image pull, then the run."""
    status: dict[str, Any] = {**KITE_STATUS, "conditions": [
        {**c, "lastTransitionTime": scheduled} if c["type"] == "PodScheduled" else c
        for c in KITE_STATUS["conditions"]]}
    state = ({"terminated": {"exitCode": 0, "startedAt": started, "finishedAt": finished}}
             if finished else {"running": {"startedAt": started}})
    status["containerStatuses"] = [{"name": "agent", "state": state}]
    return status


def test_startup_and_run_come_from_the_pod_status() -> None:
    real = pod_timing(KITE_STATUS, container="apply-jansora-app-job")
    assert (real.startup_s, real.run_s) == (0.0, 0.0)
    pulled = pod_timing(_with_times("2026-11-24T10:00:00Z", "2026-11-24T10:03:30Z",
                                    "2026-11-24T10:05:00Z"))
    assert (pulled.startup_s, pulled.run_s) == (210.0, 90.0)
    assert pulled.scheduled_at == "2026-11-24T10:00:00Z"
    running = pod_timing(_with_times("2026-11-24T10:00:00Z", "2026-11-24T10:00:40Z", None))
    assert (running.startup_s, running.run_s) == (40.0, None)


@pytest.mark.parametrize("status", [
    {}, {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    _with_times("2026-11-24T10:05:00Z", "2026-11-24T10:00:00Z", "2026-11-24T09:00:00Z"),
    _with_times("not a time", "2026-11-24T10:00:00Z", None)])
def test_missing_or_inconsistent_times_are_none_never_a_guess(status: dict[str, Any]) -> None:
    t = pod_timing(status)
    assert t.run_s is None or t.run_s >= 0
    assert t.startup_s is None


def test_the_run_document_carries_each_pods_timing() -> None:
    timing = pod_timing(_with_times("2026-11-24T10:00:00Z", "2026-11-24T10:03:30Z",
                                    "2026-11-24T10:05:00Z")).to_dict()
    node = NodeOutcome(index=0, pod="af-x-0", node="n0", timing=timing)
    assert node.to_dict()["timing"]["startup_s"] == 210.0
    assert NodeOutcome.from_dict(node.to_dict()) == node


def test_the_launcher_reads_timing_from_the_pod(tmp_path: Path) -> None:
    from smoke.cluster.launcher import _PodState

    pod = {"metadata": {"name": "af-x-0", "labels": {}}, "spec": {"nodeName": "n0"},
           "status": _with_times("2026-11-24T10:00:00Z", "2026-11-24T10:02:00Z",
                                 "2026-11-24T10:02:30Z")}
    state = _PodState.of(pod)
    assert state.timing is not None
    assert (state.timing["startup_s"], state.timing["run_s"]) == (120.0, 30.0)


def test_the_run_summary_says_how_long_pods_took_to_start() -> None:
    from smoke.cluster.run import PoolReport, PoolStatus, RunReport
    from smoke.reports.text import run_summary

    def node(i: int, start: str, end: str) -> NodeOutcome:
        timing = pod_timing(_with_times("2026-11-24T10:00:00Z", start, end)).to_dict()
        return NodeOutcome(index=i, pod=f"p{i}", node=f"n{i}", timing=timing)

    pool = PoolReport("h100", "gke", "a3-highgpu-8g", "af-x-h100", 2, PoolStatus.DONE,
                      (node(0, "2026-11-24T10:01:00Z", "2026-11-24T10:02:00Z"),
                       node(1, "2026-11-24T10:04:10Z", "2026-11-24T10:05:00Z")))
    run = RunReport(run_id="r1", stack="s", started_at="", duration_s=300.0,
                    thresholds_version="t", agent_digest="d", pools=(pool,))
    text = run_summary(run)
    assert "started within 250 s of placement" in text and "slowest h100/n1" in text
    assert "ran up to 60 s" in text
