"""Google Cloud components under Pulumi's mocks: the recorded inputs, keyed on type token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import COMPUTED, Plan, run_plan
from components.gcp._cluster import NODE_ROLES
from components.gcp._tpu import accelerator_type
from fleet.catalog import load_catalog
from tests.plans import planned

FIXTURE = Path(__file__).parent / "fixtures" / "Pulumi.gcptest.yaml"
NODE_POOL = "gcp:container/nodePool:NodePool"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return planned(FIXTURE)


def pools(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["name"]: r.inputs for r in plan.of_type(NODE_POOL)}


def walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)


# -- TPU slices ---------------------------------------------------------------------------
def test_multihost_tpu_slice_machine_topology_nodes_and_multislice(plan: Plan) -> None:
    by_name = pools(plan)
    assert {"v5p-s0", "v5p-s1"} <= set(by_name)  # multislice 2 = two identical pools
    assert "v5p" not in by_name
    a, b = by_name["v5p-s0"], by_name["v5p-s1"]
    for p in (a, b):
        assert p["nodeConfig"]["machineType"] == "ct5p-hightpu-4t"
        # queued: atomically between 0 and its 16 hosts (64 chips / 4 chips per VM), per zone
        # (one zone); see test_gcp_capacity_forms.py for the references
        assert p["autoscaling"]["maxNodeCount"] == 16
        assert p["initialNodeCount"] == 0 and "nodeCount" not in p
        assert p["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4x4"}
        assert p["queuedProvisioning"] == {"enabled": True}
        assert p["nodeConfig"]["reservationAffinity"] == {
            "consumeReservationType": "NO_RESERVATION"}
    assert {k: v for k, v in a.items() if k != "name"} == \
        {k: v for k, v in b.items() if k != "name"}


def test_single_host_tpu_has_no_placement_and_one_node(plan: Plan) -> None:
    p = pools(plan)["v6e"]
    assert p["nodeConfig"]["machineType"] == "ct6e-standard-4t"
    assert p["nodeCount"] == 1
    assert "placementPolicy" not in p


def test_tpu7x_uses_a_workload_policy_instead_of_tpu_topology(plan: Plan) -> None:
    [policy] = plan.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT",
                                               "acceleratorTopology": "2x2x2"}
    p = pools(plan)["ironwood"]
    assert p["nodeConfig"]["machineType"] == "tpu7x-standard-4t"
    assert p["nodeCount"] == 2
    assert p["placementPolicy"]["type"] == "COMPACT"
    assert "policyName" in p["placementPolicy"]
    assert "tpuTopology" not in p["placementPolicy"]


def test_tpu_taint_is_google_tpu(plan: Plan) -> None:
    for name in ("v5p-s0", "v6e", "ironwood"):
        assert {"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"} in \
            pools(plan)[name]["nodeConfig"]["taints"]


# -- GPU pools ----------------------------------------------------------------------------
@pytest.mark.parametrize(("pool", "driver"), [
    ("tcpx", "LATEST"), ("tcpxo", "INSTALLATION_DISABLED"), ("l4", "DEFAULT")])
def test_guest_accelerator_and_driver(plan: Plan, pool: str, driver: str) -> None:
    cat = load_catalog()
    [acc] = pools(plan)[pool]["nodeConfig"]["guestAccelerators"]
    machine = cat.machines[pools(plan)[pool]["nodeConfig"]["machineType"]]
    assert acc["type"] == machine.gke_accelerator
    assert acc["count"] == machine.gpus
    assert acc["gpuDriverInstallationConfig"] == {"gpuDriverVersion": driver}


def test_gpu_taints_and_labels(plan: Plan) -> None:
    cfg = pools(plan)["tcpx"]["nodeConfig"]
    assert cfg["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        # the gate's startup taint (docs/gate.md): every accelerator pool is gated by default
        {"key": "startup-taint.cluster-autoscaler.kubernetes.io/accelfleet-gate",
         "value": "unproven", "effect": "NO_SCHEDULE"},
        {"key": "example.com/dedicated", "value": "train", "effect": "NO_SCHEDULE"},
    ]
    assert cfg["labels"] == {"example.com/owner": "research", "accelfleet.io/pool": "tcpx",
                             "accelfleet.io/team": "ml", "accelfleet.io/accelerator": "h100-80gb"}


def test_capacity_reservation_spot_and_flex_start(plan: Plan) -> None:
    by_name = pools(plan)
    assert by_name["tcpxo"]["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name", "values": ["res-1"]}
    assert by_name["l4"]["nodeConfig"]["spot"] is True
    assert by_name["l4"]["nodeConfig"]["reservationAffinity"]["consumeReservationType"] == \
        "NO_RESERVATION"
    assert "reservationAffinity" not in by_name["tcpx"]["nodeConfig"]  # on-demand: any
    rdma = by_name["rdma"]
    assert rdma["nodeConfig"]["flexStart"] is True
    assert rdma["autoscaling"]["totalMinNodeCount"] == 0
    assert rdma["autoscaling"]["totalMaxNodeCount"] == 4


def test_placement_and_per_zone_counts(plan: Plan) -> None:
    by_name = pools(plan)
    assert by_name["tcpx"]["placementPolicy"] == {"type": "COMPACT"}
    assert by_name["tcpx"]["nodeCount"] == 2
    assert "placementPolicy" not in by_name["l4"]
    assert by_name["l4"]["nodeLocations"] == ["us-central1-a", "us-central1-b"]
    assert by_name["l4"]["nodeCount"] == 1  # GKE counts per zone: 2 nodes over 2 zones


@pytest.mark.parametrize(("pool", "extra"), [("tcpx", 4), ("tcpxo", 8), ("rdma", 9), ("l4", 0)])
def test_extra_node_networks_per_gpudirect_kind(plan: Plan, pool: str, extra: int) -> None:
    net = pools(plan)[pool]["networkConfig"]
    assert len(net.get("additionalNodeNetworkConfigs", [])) == extra
    assert net["enablePrivateNodes"] is True


def test_gpudirect_vpcs_subnets_and_mtu(plan: Plan) -> None:
    vpcs = {r.inputs["name"]: r.inputs for r in plan.of_type(NETWORK)}
    subnets = [r.inputs for r in plan.of_type(SUBNET)]
    # TCPX and TCPXO share the GKE networks vpc1..vpc4 (test_gcp_gpudirect_networks.py)
    mine = [v for n, v in vpcs.items() if n.startswith("c1-gpu-vpc")]
    assert len(mine) == 8
    assert {v["mtu"] for v in mine} == {8244}
    rdma = vpcs["c1-gpu-rdma"]
    assert rdma["networkProfile"] == \
        "projects/acme-test-proj/global/networkProfiles/us-central1-b-vpc-roce"
    assert rdma["mtu"] == 8896
    assert len([s for s in subnets if s["name"].startswith("c1-gpu-rdma-")]) == 8
    assert vpcs["c1-gpu-gvnic-1"]["mtu"] == 8896
    cidrs = [s["ipCidrRange"] for s in subnets]
    assert len(cidrs) == len(set(cidrs))  # no two subnets share a range


def test_secure_node_defaults_on_every_pool(plan: Plan) -> None:
    for name, p in pools(plan).items():
        cfg = p["nodeConfig"]
        assert cfg["shieldedInstanceConfig"] == {"enableSecureBoot": True,
                                                 "enableIntegrityMonitoring": True}, name
        assert cfg["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}, name
        assert cfg["gvnic"] == {"enabled": True}, name
        # the dedicated account's email: an output of the Account resource, not a literal
        assert cfg["serviceAccount"] == COMPUTED, name


def test_node_service_account_is_dedicated_and_least_privilege(plan: Plan) -> None:
    accounts = plan.of_type("gcp:serviceaccount/account:Account")
    assert {a.inputs["accountId"] for a in accounts} == {"c1-nodes", "tpu-vms-nodes"}
    roles = sorted(m.inputs["role"] for m in plan.of_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == sorted(NODE_ROLES * 2)
    for r in plan.resources:
        for v in walk(r.inputs):
            assert not (isinstance(v, str) and "compute@developer.gserviceaccount.com" in v)


def test_cluster_is_private_with_workload_identity_and_no_default_pool(plan: Plan) -> None:
    [cluster] = plan.of_type("gcp:container/cluster:Cluster")
    c = cluster.inputs
    assert c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["removeDefaultNodePool"] is True
    assert c["workloadIdentityConfig"] == {"workloadPool": "acme-test-proj.svc.id.goog"}
    assert c["datapathProvider"] == "ADVANCED_DATAPATH"
    assert c["enableMultiNetworking"] is True
    assert c["enableShieldedNodes"] is True
    assert c["releaseChannel"] == {"channel": "REGULAR"}
    assert c["nodeConfig"]["serviceAccount"] == COMPUTED
    assert c["masterAuthorizedNetworksConfig"]["cidrBlocks"][0]["cidrBlock"] == \
        "203.0.113.0/24"
    [provider] = plan.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == "<secret>"


def test_network_fabric_has_nat_and_secondary_ranges(plan: Plan) -> None:
    subnet = next(s.inputs for s in plan.of_type(SUBNET) if s.inputs["name"] == "c1-subnet")
    assert [r["rangeName"] for r in subnet["secondaryIpRanges"]] == ["pods", "services"]
    assert subnet["privateIpGoogleAccess"] is True
    nats = plan.of_type("gcp:compute/routerNat:RouterNat")
    assert {n.inputs["name"] for n in nats} == {"c1-nat", "tpu-vms-nat"}


# -- Cloud TPU VMs ------------------------------------------------------------------------
def test_tpu_vms(plan: Plan) -> None:
    vms = {r.inputs["name"]: r.inputs for r in plan.of_type("gcp:tpu/v2Vm:V2Vm")}
    vm = vms["v5e-vm"]
    assert vm["acceleratorType"] == "v5litepod-16"
    assert vm["runtimeVersion"] == "v2-alpha-tpuv5-lite"
    assert vm["schedulingConfig"] == {"spot": True}
    assert vm["networkConfig"]["enableExternalIps"] is False
    assert vm["shieldedInstanceConfig"] == {"enableSecureBoot": True}
    # one 8-chip VM (test_gcp_tpu_vms.py); queued TPU VMs are refused there
    assert vms["v6e-vm8"]["acceleratorType"] == "v6e-8"
    # on-demand; a named reservation is refused by the rules, never dropped into `reserved`
    assert vms["v6e-vm8"].get("schedulingConfig") in (None, {})
    assert not plan.of_type("gcp:tpu/v2QueuedResource:V2QueuedResource")


def test_accelerator_type_counts_tensorcores_or_chips() -> None:
    cat = load_catalog()
    assert accelerator_type(cat.resolve("v5p-128")) == "v5p-128"
    assert accelerator_type(cat.resolve("v6e 2x4")) == "v6e-8"


def test_tpu7x_as_tpu_vm_is_refused_before_a_plan(tmp_path: Path) -> None:
    """The Cloud TPU API does not take TPU7x (test_gcp_tpu_vms.py has the source): no plan
    builds a tpu.V2Vm of it (one did, until Google's words were read)."""
    from fleet.errors import SpecError

    text = FIXTURE.read_text().replace("accelerator: v5e, topology: 4x4",
                                       "accelerator: tpu7x, topology: 2x2x2")
    stack = tmp_path / "Pulumi.tpu7x.yaml"
    stack.write_text(text)
    with pytest.raises(SpecError, match=r"tpu7x cannot run as `runtime: tpu-vm`"):
        run_plan(stack)
