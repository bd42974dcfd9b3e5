"""What GKE and Cloud TPU would refuse or get wrong, refused (or warned about) by `fleet validate`
first (issue 20, items 3-5)."""

from __future__ import annotations

from typing import Any

import pytest

from fleet import validate_fleet
from fleet.catalog import _tpu as tpu
from fleet.catalog import load_catalog
from fleet.errors import SpecError
from fleet.names import node_account_id
from tests.fleet.conftest import only, pool, problems


def _warnings(spec: dict[str, Any]) -> list[str]:
    return [f"{w.where}: {w.message}" for w in validate_fleet(spec).warnings]


# -- item 3: derived names unique per project ---------------------------------------------------
def test_two_clusters_sharing_23_characters_would_share_a_service_account(spec):
    # IAM: account ids are unique per project (6-30 chars); ours are the cluster name cut to 23
    # characters + "-nodes", so the second cluster's create fails with 409.
    first, second = "research-training-east-a", "research-training-east-b"
    assert node_account_id(first) == node_account_id(second)
    spec["clusters"] = [{"name": first, "cloud": "gcp"}, {"name": second, "cloud": "gcp"},
                        {"name": "eks", "cloud": "aws"}]
    spec["pools"] = [pool(name="h100", cluster=first)]
    p = only(spec, f"clusters {second!r}.name")
    assert first in p.message and second in p.message and "409" in p.message
    assert "23 characters" in p.hint


def test_distinct_23_character_prefixes_are_fine(spec):
    west = {"cidr": "10.1.0.0/16", "pods_cidr": "10.4.0.0/14", "services_cidr": "10.8.0.0/20"}
    spec["clusters"] = [{"name": "research-training-east", "cloud": "gcp"},
                        {"name": "research-training-west", "cloud": "gcp", "network": west},
                        {"name": "eks", "cloud": "aws"}]
    spec["pools"] = [pool(name="h100", cluster="research-training-east")]
    validate_fleet(spec)


def test_a_cluster_named_tpu_vms_collides_with_the_tpu_vm_network(spec):
    spec["clusters"][0]["name"] = "tpu-vms"
    spec["pools"][0]["cluster"] = "tpu-vms"
    p = only(spec, "clusters 'tpu-vms'.name")
    assert "tpu-vms-vpc" in p.message and "tpu-vms-nodes" in p.message


def test_the_component_uses_the_checked_account_id():
    from components.gcp import _cluster

    assert _cluster.node_account_id is node_account_id


# -- item 4: who can reach the control plane ------------------------------------------------------
def test_private_endpoint_refuses_public_authorized_ranges(spec):
    # https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks: with only a
    # private endpoint, GKE takes internal ranges only.
    spec["clusters"][0].update(private_endpoint=True,
                               authorized_cidrs=["10.8.0.0/16", "203.0.113.0/24"])
    p = only(spec, "clusters 'gke'.authorized_cidrs")
    assert "203.0.113.0/24 is a public range" in p.message and "10.8.0.0/16" not in p.message
    assert "private_endpoint: false" in p.hint


def test_private_endpoint_with_private_ranges_warns_about_the_runner(spec):
    spec["clusters"][0].update(private_endpoint=True, authorized_cidrs=["10.8.0.0/16"])
    spec["clusters"][1]["authorized_cidrs"] = ["198.51.100.0/24"]
    warned = _warnings(spec)
    assert any(w.startswith("clusters 'gke'.private_endpoint") and "`pulumi up`" in w
               for w in warned), warned


def test_empty_authorized_cidrs_warn_and_say_what_to_add(spec):
    fleet = validate_fleet(spec)
    gke = [w for w in fleet.warnings if w.where == "clusters 'gke'.authorized_cidrs"]
    assert gke and "no range" in gke[0].message and "--policies" in gke[0].message
    assert "authorized_cidrs: [" in gke[0].hint
    assert any(w.where == "clusters 'eks'.authorized_cidrs" for w in fleet.warnings)


def test_authorized_cidrs_silence_the_warning(spec):
    for c in spec["clusters"]:
        c["authorized_cidrs"] = ["198.51.100.0/24"]
    assert not [w for w in _warnings(spec) if "authorized_cidrs" in w]


# -- item 5: TPU shapes ---------------------------------------------------------------------------
@pytest.mark.parametrize(("gen", "topology"), [
    ("v5p", "4x4x384"), ("v5p", "8x8x96"), ("v5p", "16x16x28"), ("tpu7x", "4x4x576"),
])
def test_each_side_is_bounded(spec, gen, topology):
    # v5p: "The maximum v5p shape is 16x16x24" (docs.cloud.google.com/tpu/docs/v5p); tpu7x:
    # xpk's generate_tpu_topologies caps each side at 256. The chip count alone let these in.
    spec["pools"] = [pool(name="tpu", accelerator=gen, topology=topology, nodes=None)]
    p = only(spec, "pools 'tpu'")
    assert topology in p.message or "topology" in p.where


# xpk@02b0c0928aeee28beee4b90f853073488d3893fb lists tpu7x 4x4x244 and 16x24x24: still valid
@pytest.mark.parametrize(("gen", "topology"), [("v5p", "16x16x24"), ("tpu7x", "16x24x24"),
                                               ("tpu7x", "4x4x244"), ("v5p", "8x8x24")])
def test_the_largest_shapes_still_validate(gen, topology):
    g = load_catalog().tpus[gen]
    assert tpu.normalise(g, tpu.parse_topology(topology) or ()) is not None


def test_multislice_of_single_host_slices_is_refused(spec):
    # https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice: multi-host only.
    spec["pools"] = [pool(name="v6e", accelerator="v6e", topology="2x2", nodes=None,
                          multislice=4, zone="us-east5-b")]
    spec["clouds"]["gcp"]["region"] = "us-east5"
    p = only(spec, "pools 'v6e'.multislice")
    assert "single-host" in p.message and "multi-host" in p.message


def test_multislice_of_multi_host_slices_still_validates(spec):
    spec["pools"] = [pool(name="v5p", accelerator="v5p", topology="2x2x2", nodes=None,
                          multislice=2)]
    assert not [p for p in _problems_or_none(spec) if p.endswith("multislice")]


def _problems_or_none(spec: dict[str, Any]) -> list[str]:
    try:
        validate_fleet(spec)
    except SpecError:  # other rules may refuse; only multislice matters here
        return [p.where for p in problems(spec)]
    return []
