"""Issue 27 item 7: p5.4xlarge is built with its one EFA interface, in a cluster placement
group, labelled as an EFA node: the EFA device plugin chart v0.5.30 lists it among its EFA
instance types (tests/components/fixtures/aws-efa-k8s-device-plugin-v0.5.30.yaml), so its
DaemonSet runs there and the node offers vpc.amazonaws.com/efa."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tests.components.test_aws_components import SPEC, _all, _build

CHART = Path(__file__).parent / "fixtures" / "aws-efa-k8s-device-plugin-v0.5.30.yaml"


def test_p5_4xlarge_has_its_efa_interface_placement_group_and_label() -> None:
    assert "p5.4xlarge" in yaml.safe_load(CHART.read_text(encoding="utf-8"))["values"]
    spec = copy.deepcopy(SPEC)
    spec["pools"] = [{"name": "p54", "cluster": "eks", "team": "research",
                      "accelerator": "p5.4xlarge", "nodes": 1, "zone": "us-east-1a"}]
    res, _ = _build(spec)
    (lt,) = [r.inputs for r in _all(res, "aws:ec2/launchTemplate:LaunchTemplate")
             if r.name == "p54-lt"]
    (nic,) = lt["networkInterfaces"]
    assert nic["interfaceType"] == "efa" and nic["networkCardIndex"] == 0
    (pg,) = [r.inputs for r in _all(res, "aws:ec2/placementGroup:PlacementGroup")]
    assert pg["strategy"] == "cluster" and lt["placement"]["groupName"] == "eks-p54-pg"
    (ng,) = [r.inputs for r in _all(res, "aws:eks/nodeGroup:NodeGroup") if r.name == "p54-ng"]
    assert ng["labels"]["vpc.amazonaws.com/efa.present"] == "true"
