"""Each rule of the fleet spec, with the message it gives."""

from __future__ import annotations

import pytest

from fleet import load_fleet, validate_fleet
from fleet.errors import SpecError
from fleet.stack.read import EXAMPLE_STACK
from tests.fleet.conftest import only, pool, problems


def test_example_stack_is_valid():
    fleet = load_fleet(str(EXAMPLE_STACK))
    names = {p.name: p for p in fleet.pools}
    assert set(names) >= {"h100-train", "l4-spot", "v5p-slice", "v6e-serve", "p5-train", "g6-ci"}
    v5p = names["v5p-slice"]
    assert (v5p.node_count, v5p.shape.topology_str, v5p.placement) == (16, "4x4x4", "compact")
    assert names["h100-train"].networking.kind == "tcpx"
    assert names["p5-train"].networking.efa_interfaces == 32
    assert names["v6e-serve"].node_count == 1


def test_valid_base(spec):
    fleet = validate_fleet(spec)
    assert fleet.pools[0].devices == 16


def test_pool_names_unique(spec):
    spec["pools"].append(pool(name="h100"))
    p = only(spec, "pools 'h100'")
    assert "2 times" in p.message and "unique" in p.hint


@pytest.mark.parametrize("bad", ["H100", "1pool", "pool_a", "pool-", "x" * 41])
def test_pool_names_dns_safe(spec, bad):
    spec["pools"][0]["name"] = bad
    p = only(spec, f"pools {bad!r}.name")
    assert "GKE node pool name" in p.message and "lower-case" in p.message
    assert p.hint.startswith("rename it, e.g.")


def test_zone_inside_region(spec):
    spec["pools"][0]["zone"] = "europe-west4-a"
    p = only(spec, "pools 'h100'.zone")
    assert "not in region us-central1" in p.message
    assert "us-central1-a" in p.hint


def test_aws_zone_inside_region(spec):
    spec["pools"] = [pool(name="p5", cluster="eks", accelerator="p5.48xlarge", zone="us-west-2a")]
    assert "not in region us-east-1" in only(spec, "pools 'p5'.zone").message


def test_accelerator_offered_on_that_cloud(spec):
    spec["pools"][0]["cluster"] = "eks"
    spec["pools"][0]["zone"] = "us-east-1a"
    p = only(spec, "pools 'h100'.accelerator")
    assert "not offered on aws" in p.message


def test_unknown_accelerator_suggests(spec):
    spec["pools"][0]["accelerator"] = "a3-highgpu-8"
    p = only(spec, "pools 'h100'.accelerator")
    assert "a3-highgpu-8g" in p.message


def test_tpu_topology_valid_for_generation(spec):
    spec["pools"] = [pool(name="tpu", accelerator="v5p", topology="3x3x3", nodes=None)]
    p = only(spec, "pools 'tpu'.topology")
    assert "3x3x3" in p.message and "2x2x1" in p.hint


def test_tpu_topology_dims_for_2d_generation(spec):
    spec["pools"] = [pool(name="tpu", accelerator="v6e", topology="2x2x2", nodes=None)]
    assert "topology" in only(spec, "pools 'tpu'.topology").message


def test_multihost_tpu_autoscales_only_atomically(spec):
    # 0..16 is allowed (tests/fleet/test_gcp_capacity.py); anything in between is not
    spec["pools"] = [pool(name="tpu", accelerator="v5p-128", nodes=None,
                          autoscaling={"min_nodes": 0, "max_nodes": 8})]
    p = only(spec, "pools 'tpu'.autoscaling")
    assert "atomically" in p.message and "multislice" in p.hint


def test_multihost_tpu_cannot_be_resized(spec):
    spec["pools"] = [pool(name="tpu", accelerator="v5p-128", nodes=8)]
    p = only(spec, "pools 'tpu'.nodes")
    assert "exactly 16" in p.message and "cannot be resized" in p.hint


def test_compact_placement_one_zone_only(spec):
    spec["pools"][0].pop("zone")
    spec["pools"][0]["zones"] = ["us-central1-a", "us-central1-b"]
    spec["pools"][0]["placement"] = "compact"
    p = only(spec, "pools 'h100'.placement")
    assert "single zone" in p.message


def test_multihost_tpu_is_always_compact(spec):
    spec["pools"] = [pool(name="tpu", accelerator="v5p-128", nodes=None, placement="none")]
    assert "compact" in only(spec, "pools 'tpu'.placement").message


def test_no_spot_with_reservation(spec):
    spec["pools"][0]["capacity"] = {"spot": True, "reservation": "r1"}
    p = only(spec, "pools 'h100'.capacity")
    assert "spot and a reservation" in p.message


@pytest.mark.parametrize("mode", ["flex_start", "queued"])
def test_no_flex_or_queued_with_reservation(spec, mode):
    spec["pools"][0]["capacity"] = {mode: True, "reservation": "r1"}
    assert "cannot use a reservation" in only(spec, "pools 'h100'.capacity").message


def test_flex_excludes_spot(spec):
    spec["pools"][0]["capacity"] = {"flex_start": True, "spot": True}
    assert "excludes spot" in only(spec, "pools 'h100'.capacity").message


def test_flex_not_on_aws(spec):
    spec["pools"] = [pool(name="p5", cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a",
                          capacity="flex-start")]
    assert "GKE features" in only(spec, "pools 'p5'.capacity").message


def test_aws_reservation_must_be_an_id(spec):
    spec["pools"] = [pool(name="p5", cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a",
                          capacity={"reservation": "my-res"})]
    assert "cr-" in only(spec, "pools 'p5'.capacity.reservation").hint


def test_capacity_shorthand(spec):
    spec["pools"][0]["capacity"] = "spot"
    assert validate_fleet(spec).pools[0].spec.capacity.spot
    spec["pools"][0]["capacity"] = "cheap"
    assert "not a capacity" in only(spec, "pools[0] 'h100'.capacity").message


def test_team_within_budget(spec):
    spec["teams"][0]["monthly_budget_usd"] = 1000
    p = only(spec, "teams 'research'.monthly_budget_usd")
    assert "over its budget of $1,000" in p.message and "h100" in p.message
    assert "spot" in p.hint


def test_unknown_team_and_cluster(spec):
    spec["pools"][0]["team"] = "reserch"
    spec["pools"][0]["cluster"] = "gkee"
    assert "research" in only(spec, "pools 'h100'.team").accepted
    assert "gke" in only(spec, "pools 'h100'.cluster").accepted


def test_cluster_cloud_must_be_declared(spec):
    del spec["clouds"]["aws"]
    assert "clouds.aws" in only(spec, "clusters 'eks'.cloud").message


def test_gpu_pool_needs_nodes(spec):
    del spec["pools"][0]["nodes"]
    assert "required" in only(spec, "pools 'h100'.nodes").message


def test_autoscaling_range(spec):
    spec["pools"][0]["autoscaling"] = {"min_nodes": 3, "max_nodes": 4}
    assert "outside autoscaling 3..4" in only(spec, "pools 'h100'.nodes").message


def test_driver_is_gke_only_and_ami_eks_only(spec):
    spec["pools"].append(pool(name="p5", cluster="eks", accelerator="p5.48xlarge",
                              zone="us-east-1a", driver="latest"))
    spec["pools"][0]["ami"] = "bottlerocket"
    assert "AMI carries the driver" in only(spec, "pools 'p5'.driver").message
    assert "EKS" in only(spec, "pools 'h100'.ami").message


def test_reserved_labels_rejected(spec):
    spec["pools"][0]["labels"] = {"accelfleet.io/pool": "x", "owner": "bad value!"}
    found = problems(spec)
    assert any("label key" in p.message for p in found)
    assert any("label value" in p.message for p in found)


def test_tpu_vm_runtime(spec):
    spec["pools"] = [pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="v5p-8",
                          nodes=None)]
    fleet = validate_fleet(spec)
    assert fleet.pools[0].runtime == "tpu-vm" and fleet.pools[0].cluster is None
    spec["pools"] = [pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="h100")]
    assert "TPU pools only" in only(spec, "pools 'vm'.runtime").message


def test_multislice_counts_nodes(spec):
    spec["pools"] = [pool(name="ms", accelerator="v5p-128", nodes=None, multislice=3)]
    p = validate_fleet(spec).pools[0]
    assert (p.units, p.node_count, p.devices) == (3, 48, 192)


def test_type_errors_name_the_pool_and_field(spec):
    spec["pools"][0]["nodes"] = "two"
    p = only(spec, "pools[0] 'h100'.nodes")
    assert "'two'" in p.message


def test_unknown_field_is_reported(spec):
    spec["pools"][0]["node_count"] = 2
    p = only(spec, "pools[0] 'h100'.node_count")
    assert p.message.startswith("unknown field") and "'nodes'" in p.message
    assert p.hint == "rename it to 'nodes'"


def test_all_problems_reported_together(spec):
    spec["pools"][0]["zone"] = "mars-1-a"
    spec["pools"].append(pool(name="Bad_Name"))
    err_text = ""
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    err_text = str(err.value)
    assert "2 problems" in err_text or "3 problems" in err_text
    assert "mars-1-a" in err_text and "Bad_Name" in err_text
    assert "fix:" in err_text


def test_gke_nodes_spread_evenly_over_zones(spec):
    spec["pools"][0].pop("zone")
    spec["pools"][0].update(zones=["us-central1-a", "us-central1-b"], nodes=3, placement="none")
    p = only(spec, "pools 'h100'.nodes")
    assert "evenly over 2 zones" in p.message and "multiple of 2" in p.hint
    spec["pools"][0]["nodes"] = 4
    assert validate_fleet(spec).pools[0].node_count == 4


def test_rdma_pools_of_a_cluster_share_one_zone(spec):
    spec["clouds"]["gcp"]["region"] = "us-west3"  # A4 is offered in two of its zones (zones.yaml)
    spec["pools"] = [pool(name="ultra-a", accelerator="a4-highgpu-8g", zone="us-west3-b"),
                     pool(name="b200-b", accelerator="a4-highgpu-8g", zone="us-west3-c")]
    p = only(spec, "clusters 'gke'")
    assert "2 zones" in p.message and "ultra-a" in p.message and "b200-b" in p.message
    spec["pools"][1]["zone"] = "us-west3-b"
    assert len(validate_fleet(spec).pools) == 2
