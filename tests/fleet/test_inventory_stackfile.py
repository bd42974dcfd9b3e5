from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet import load_fleet, read_stack_file
from fleet.errors import InputError, StackFileError
from fleet.inventory import Inventory, build_inventory
from fleet.stack.read import EXAMPLE_STACK, stack_name


def test_inventory_of_example():
    inv = build_inventory(load_fleet(str(EXAMPLE_STACK)), "example")
    pools = {p.name: p for p in inv.pools}
    v5p = pools["v5p-slice"]
    assert (v5p.nodes, v5p.devices_per_node, v5p.hosts_per_slice, v5p.topology) == (16, 4, 16,
                                                                                     "4x4x4")
    assert v5p.resource == "google.com/tpu"
    assert v5p.node_selector["accelfleet.io/pool"] == "v5p-slice"
    assert {"key": "google.com/tpu", "operator": "Equal", "value": "present",
            "effect": "NoSchedule"} in v5p.tolerations
    p5 = pools["p5-train"]
    assert (p5.cloud, p5.cluster, p5.nodes, p5.devices_per_node) == ("aws", "ml-eks", 2, 8)
    assert p5.node_selector["node.kubernetes.io/instance-type"] == "p5.48xlarge"


def test_inventory_round_trips_through_json():
    inv = build_inventory(load_fleet(str(EXAMPLE_STACK)), "example")
    again = Inventory.from_dict(json.loads(json.dumps(inv.to_dict())))
    assert again == inv
    with pytest.raises(InputError):
        Inventory.from_dict({"schema_version": 99})
    with pytest.raises(InputError, match="no pool"):
        inv.pool("nope")


def test_stack_file_errors(tmp_path: Path):
    with pytest.raises(StackFileError, match="does not exist"):
        read_stack_file(tmp_path / "missing.yaml")
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  accelfleet:fleet: [\n")
    with pytest.raises(StackFileError, match="not valid YAML at line"):
        read_stack_file(bad)
    empty = tmp_path / "Pulumi.empty.yaml"
    empty.write_text("config:\n  gcp:project: x\n")
    with pytest.raises(StackFileError, match="accelfleet:fleet"):
        read_stack_file(empty)


def test_stack_name():
    assert stack_name("stacks/Pulumi.prod.yaml") == "prod"
    assert stack_name(EXAMPLE_STACK) == "example"
