"""GPUDirect networks of a GKE cluster: GKE `Network` names, node pool dependencies, subnet
sizes and MTUs, under Pulumi's mocks (fixture: tcpx, tcpxo and rdma pools in one cluster).

References (snapshots read: GoogleCloudPlatform/container-engine-accelerators@992db81,
2026-06-09; GoogleCloudPlatform/cluster-toolkit@1047080, 2026-06-25):
- Network names: container-engine-accelerators gpudirect-tcpx/nccl-test-latest.yaml (eth1..eth4
  -> vpc1..vpc4), gpudirect-tcpxo/nccl-test-latest.yaml (eth1..eth8 -> vpc1..vpc8),
  gpudirect-rdma/nccl-test.yaml (eth2..eth9 -> rdma-0..rdma-7); cluster-toolkit
  modules/scheduler/gke-cluster/variables.tf `k8s_network_names` (gVNIC networks `gvnic-1`...,
  RDMA networks `rdma-0`...; the A3 High / Mega blueprints set gvnic_prefix `vpc`).
- Sizes: cluster-toolkit examples/gke-a3-megagpu/gke-a3-megagpu.yaml and gke-a3-highgpu.yaml
  (multivpc `subnetwork_cidr_suffix: 20`, "the subnet can support upto 4k nodes"),
  examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml (gVNIC subnet /18, RDMA subnets: a /18 split
  over 8, so /21).
- MTU: the same blueprints give the primary VPC `mtu: 8244` (A3 High, A3 Mega) and the
  modules/network/vpc default 8896 (A3 Ultra, A4).
"""

from __future__ import annotations

import ipaddress
import itertools
from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import Plan, PlannedResource
from fleet.catalog import load_catalog
from fleet.stack.read import EXAMPLE_STACK
from tests.plans import planned

FIXTURE = Path(__file__).parent / "fixtures" / "Pulumi.gcptest.yaml"
NODE_POOL = "gcp:container/nodePool:NodePool"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
CRD = "kubernetes:networking.gke.io/v1:"
VPCS = [f"vpc{i}" for i in range(1, 9)]
RDMA = [f"rdma-{i}" for i in range(8)]


@pytest.fixture(scope="module")
def plan() -> Plan:
    return planned(FIXTURE)


def by_name(plan: Plan, type_: str) -> dict[str, PlannedResource]:
    return {r.inputs["name"]: r for r in plan.of_type(type_)}


def param_sets(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"]
            for r in plan.of_type(f"{CRD}GKENetworkParamSet")}


def test_gke_network_objects_are_named_as_gke_and_the_references_name_them(plan: Plan) -> None:
    networks = {r.inputs["metadata"]["name"] for r in plan.of_type(f"{CRD}Network")}
    assert networks == set(VPCS) | {"gvnic-1"} | set(RDMA)  # tcpx and tcpxo share vpc1..vpc4
    sets = param_sets(plan)
    assert {n: s["deviceMode"] for n, s in sets.items()} == {
        **{n: "NetDevice" for n in [*VPCS, "gvnic-1"]}, **{n: "RDMA" for n in RDMA}}
    roce = {sets[n]["vpc"] for n in RDMA}
    assert len(roce) == 1  # the eight RDMA networks are subnets of one RoCE VPC
    assert len({sets[n]["vpcSubnet"] for n in RDMA}) == 8
    assert len({sets[n]["vpc"] for n in [*VPCS, "gvnic-1"]}) == 9


@pytest.mark.parametrize(("pool", "names"), [
    ("tcpx", VPCS[:4]), ("tcpxo", VPCS), ("rdma", ["gvnic-1", *RDMA])])
def test_node_pools_attach_the_networks_their_pods_name(plan: Plan, pool: str,
                                                         names: list[str]) -> None:
    sets = param_sets(plan)
    attached = by_name(plan, NODE_POOL)[pool].inputs["networkConfig"][
        "additionalNodeNetworkConfigs"]
    assert [(a["network"], a["subnetwork"]) for a in attached] == [
        (sets[n]["vpc"], sets[n]["vpcSubnet"]) for n in names]
    fabric = load_catalog().fabrics[pool]
    assert [i.network for i in fabric.interfaces if i.network != "default"] == \
        [n for n in names if n != "gvnic-1"]  # the pod's interfaces name these networks


@pytest.mark.parametrize("pool", ["tcpx", "tcpxo", "rdma"])
def test_node_pools_depend_on_their_vpcs_and_subnets(plan: Plan, pool: str) -> None:
    """Pulumi creates a pool after its subnets and deletes it before them."""
    vpcs, subnets = by_name(plan, NETWORK), by_name(plan, SUBNET)
    node_pool = by_name(plan, NODE_POOL)[pool]
    for a in node_pool.inputs["networkConfig"]["additionalNodeNetworkConfigs"]:
        assert vpcs[a["network"]].urn in node_pool.dependencies, a
        assert subnets[a["subnetwork"]].urn in node_pool.dependencies, a


def test_subnets_hold_thousands_of_nodes_and_never_overlap(plan: Plan) -> None:
    sets = param_sets(plan)
    subnets = {name: ipaddress.ip_network(r.inputs["ipCidrRange"])
               for name, r in by_name(plan, SUBNET).items()}
    for name in [*VPCS, "gvnic-1"]:
        assert subnets[sets[name]["vpcSubnet"]].prefixlen <= 20, name
    for name in RDMA:
        assert subnets[sets[name]["vpcSubnet"]].prefixlen <= 21, name
    for a, b in itertools.combinations(subnets.values(), 2):
        assert not a.overlaps(b), (a, b)


def test_mtus_of_gpu_vpcs_and_of_the_primary_vpc(plan: Plan) -> None:
    sets = param_sets(plan)
    vpcs = {name: r.inputs for name, r in by_name(plan, NETWORK).items()}
    assert {vpcs[sets[n]["vpc"]]["mtu"] for n in VPCS} == {8244}
    assert {vpcs[sets[n]["vpc"]]["mtu"] for n in ["gvnic-1", *RDMA]} == {8896}
    assert vpcs["c1-vpc"]["mtu"] == 8896  # the largest MTU of the cluster's GPU networks
    # the Cloud TPU VMs' network takes the TPU MTU (tpu.yaml `network`; issue 20 item 8)
    assert vpcs["tpu-vms-vpc"]["mtu"] == load_catalog().tpu_network_mtu == 8896


def test_example_primary_vpc_takes_tcpx_mtu() -> None:
    vpcs = by_name(planned(EXAMPLE_STACK), NETWORK)
    assert vpcs["ml-gke-vpc"].inputs["mtu"] == 8244


def test_cidrs_do_not_move_when_a_cluster_gains_a_kind() -> None:
    from components.gcp._network import gpudirect_plan

    cat = load_catalog()
    alone = {n.name: n.cidr for n in gpudirect_plan("c", ["tcpx"], cat)}
    both = {n.name: n.cidr for n in gpudirect_plan("c", ["rdma", "tcpx", "tcpxo"], cat)}
    assert alone == {k: both[k] for k in alone}
