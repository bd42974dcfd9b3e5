"""Everything the fleet schedules fits where it is pinned (issue 27, class 1): fleet/rules/fit.py.

Allocatable figures are the product's (fleet/allocatable.py: the recorded a3-highgpu-8g,
p5.48xlarge and p4de.24xlarge nodes, else GKE's and EKS's documented reservations); the
e2-standard-4 figure the issue quotes (3920m / 13622Mi) is what GKE's formula gives for 4 vCPU
and 16 GiB. The system pods and their sources are catalog system_pods.yaml.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from components.gcp._k8s import nccl_installer, nri_device_injector
from components.k8s._kueue import controller_resources
from fleet import load_fleet, pods
from fleet.allocatable import hugepages_2mi_mib
from fleet.catalog import load_catalog
from fleet.errors import SpecError
from fleet.pods import SystemPod, fabric_requests, kueue_requests, system_pods
from fleet.rules import fit
from fleet.stack.read import EXAMPLE_STACK
from tests.stacks import ONE_GKE_CLUSTER

# The example: a GKE cluster whose pools reach 512 hosts at their largest.
BIG = ONE_GKE_CLUSTER + """\
    pools:
      - {name: l4, cluster: c1, team: research, accelerator: g2-standard-24,
         zone: us-central1-a, autoscaling: {min_nodes: 0, max_nodes: 512}}
"""
EKS = """\
config:
  accelfleet:fleet:
    clouds:
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: e1, cloud: aws, authorized_cidrs: [198.51.100.0/24]%s}
    teams:
      - {name: research}
    pools:
      - {name: g6, cluster: e1, team: research, accelerator: g6.12xlarge, nodes: 2,
         zone: us-east-1a}
      - {name: p5, cluster: e1, team: research, accelerator: p5.48xlarge, nodes: 2,
         zone: us-east-1a}
"""


def stack(tmp_path: Path, text: str) -> str:
    path = tmp_path / "Pulumi.fit.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def problems(path: str) -> list[str]:
    try:
        load_fleet(path)
    except SpecError as exc:
        return [f"{p.where}: {p.message} | {p.hint}" for p in exc.problems]
    return []


def test_kueue_for_512_hosts_does_not_fit_the_default_gke_system_pool(tmp_path: Path) -> None:
    [why] = problems(stack(tmp_path, BIG))
    assert why.startswith("clusters 'c1'.system_pool: kueue-controller-manager (sized for 512 "
                          "nodes) asks 3 CPU / 16384Mi")
    assert "e2-standard-4: 3920m CPU / 13622Mi allocatable" in why
    assert "short by" in why and "Mi memory" in why
    assert "system_pool.machine_type: e2-standard-8" in why  # the fix, the smallest that holds it
    fixed = BIG.replace("{name: c1, cloud: gcp}",
                        "{name: c1, cloud: gcp, system_pool: {machine_type: e2-standard-8}}")
    assert problems(stack(tmp_path, fixed)) == []


def test_the_example_stack_fits() -> None:
    fleet = load_fleet(str(EXAMPLE_STACK))
    assert {p.cloud for p in fleet.system_pools} == {"gcp", "aws"}


def test_a_two_vcpu_eks_system_pool_cannot_hold_kueues_two_cpus(tmp_path: Path) -> None:
    """Found by the check on the example stack: the EKS default was m6i.large (1930m
    allocatable), and Kueue's controller asks 2 CPUs at least; the default is now m6i.xlarge."""
    small = EKS % ", system_pool: {machine_type: m6i.large}"
    [why] = problems(stack(tmp_path, small))
    assert "kueue-controller-manager" in why and "short by 100m CPU" in why
    assert "machine_type: m6i.xlarge" in why
    assert problems(stack(tmp_path, EKS % "")) == []
    assert load_catalog().system_pool_defaults("aws").machine_type == "m6i.xlarge"


def test_pods_that_each_fit_a_node_but_not_all_together_are_refused(tmp_path: Path) -> None:
    """Kueue for 410 nodes (2 CPU / 13120Mi) fits an e2-standard-4 node's 13276Mi left after
    GKE's node agents; with JobSet, kube-dns and the rest, one node is not enough."""
    one = BIG.replace("{name: c1, cloud: gcp}",
                      "{name: c1, cloud: gcp, system_pool: {nodes: 1, "
                      "zones: [us-central1-a]}}").replace("max_nodes: 512", "max_nodes: 410")
    [why] = problems(stack(tmp_path, one))
    assert "the system pool's 1 node(s) of e2-standard-4 cannot hold every pod" in why
    assert "left over" in why and "more nodes" in why
    assert problems(stack(tmp_path, one.replace("nodes: 1,", "nodes: 2,"))) == []


def test_a_new_system_component_is_checked_by_its_data_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One home: a component added to system_pods.yaml (the gate controller, say) is placed
    with the rest, with no change to the check."""
    gate = SystemPod(name="gate-controller", component="gate", kind="Deployment",
                     replicas=2, clouds=("gcp",), when="always", where=("system",),
                     cpu_millicores=2500, memory_mib=1024, sized=None, source="test")
    path = stack(tmp_path, ONE_GKE_CLUSTER + """\
    pools:
      - {name: l4, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a}
""")
    assert problems(path) == []
    monkeypatch.setattr(pods, "system_pods", lambda: (*system_pods(), gate))
    [why] = problems(path)
    assert "cannot hold every pod pinned there: gate-controller left over" in why


def test_kueue_is_sized_in_one_place() -> None:
    assert kueue_requests(512) == (3000, 16384)
    assert kueue_requests(3) == (2000, 4096)
    assert controller_resources(512)["requests"] == {"cpu": "3", "memory": "16384Mi"}


def test_a_smoke_pod_asks_no_huge_pages_of_nodes_without_them(tmp_path: Path) -> None:
    """Found by the check: every single-EFA g4dn/g5/g6/g6e pool's smoke pod asked the EFA
    fabric's 5120Mi of huge pages, which its nodes (none recorded) do not offer and its Kueue
    flavor does not hold: never admitted, never scheduled. The p5's recorded nodes have them."""
    catalog = load_catalog()
    efa = catalog.fabrics["efa"].resources
    assert fabric_requests(efa, hugepages_2mi_mib("g6.12xlarge")) == {}
    assert fabric_requests(efa, hugepages_2mi_mib("p5.48xlarge")) == {"hugepages-2Mi": "5120Mi"}
    fleet = load_fleet(stack(tmp_path, EKS % ""))
    needs = {p.name: fit.smoke_need(p, catalog) for p in fleet.pools}
    assert needs["g6"].hugepages == 0 and needs["p5"].hugepages == 5120
    assert dict(needs["p5"].devices) == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}


def test_a_pod_asking_what_its_nodes_lack_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The huge pages the smoke pod asks must be on the node and in the Kueue flavor."""
    monkeypatch.setattr(fit, "fabric_requests", lambda resources, offered: dict(resources))
    found = problems(stack(tmp_path, EKS % ""))
    assert any(w.startswith("pools 'g6': the smoke pod asks hugepages-2Mi 5120Mi") and
               "offers 0Mi" in w for w in found), found
    assert any(w.startswith("pools 'g6': Kueue's flavor 'g6' does not offer") for w in found)
    assert not any(w.startswith("pools 'p5'") for w in found)


def test_fleet_validate_refuses_it_with_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["fleet", "validate", stack(tmp_path, BIG)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "kueue-controller-manager (sized for 512 nodes) asks 3 CPU / 16384Mi" in text
    assert "fix: set `clusters[].system_pool.machine_type: e2-standard-8`" in text


def test_the_gpudirect_daemonsets_request_what_the_fit_check_counts() -> None:
    """components/gcp/_k8s.py reads the installers' requests from system_pods.yaml."""
    installer = nccl_installer("tcpx", ["nvidia-h100-80gb"])["spec"]["template"]["spec"]
    assert installer["initContainers"][-1]["resources"] == {"requests": {"cpu": "150m"}}
    injector = nri_device_injector(["nvidia-h100-80gb"])["spec"]["template"]["spec"]
    assert injector["containers"][0]["resources"] == {"requests": {"cpu": "150m"}}
    assert pods.system_pod("nccl-installer").cpu_millicores == 150


def test_the_gate_controller_is_placed_on_the_system_pool_with_the_stacks_replicas() -> None:
    """Issue 26 meets issue 27: the gate controller (system_pods.yaml `accelfleet-gate`) is one
    of the system pods of a cluster with a gated pool, as many times as `gate.replicas`."""
    from fleet.pods import cluster_pods

    fleet = load_fleet(str(EXAMPLE_STACK))
    cat = load_catalog()
    gke = next(c for c in fleet.spec.clusters if c.cloud == "gcp")
    members = [p for p in fleet.pools if p.cluster is not None and p.cluster.name == gke.name]
    assert any(p.gated for p in members)
    gate = [p for p in cluster_pods(gke, members, cat, gate_replicas=5)
            if p.name == "accelfleet-gate"]
    assert [(p.replicas, p.cpu_millicores, p.memory_mib) for p in gate] == [(5, 100, 256)]
    ungated = [p for p in members if not p.gated]
    assert all(p.name != "accelfleet-gate" for p in cluster_pods(gke, ungated, cat))
