"""Issue 27 item 6: node groups on an On-Demand Capacity Reservation or a Capacity Block update
with updateStrategy MINIMAL (terminate, then launch: a fully used reservation has no room for
DEFAULT's surge; EKS API reference NodegroupUpdateConfig), and a Capacity Block group leaves its
desired size to EKS (ignore_changes), which scales it around the block's end."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest
from pulumi.runtime.mocks import MockMonitor

from components.aws import build_aws_cluster
from fleet import validate_fleet
from fleet.catalog import load_catalog
from tests.components.test_aws_components import SPEC, _Mocks

NG = "aws:eks/nodeGroup:NodeGroup"


class _Monitor(MockMonitor):  # type: ignore[misc]
    """Keeps each registration's ignoreChanges (the resource options the mocks do not see)."""

    def __init__(self, mocks: Any) -> None:
        super().__init__(mocks)
        self.ignored: dict[str, list[str]] = {}

    def RegisterResource(self, request: Any) -> Any:
        self.ignored[request.name] = list(request.ignoreChanges)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


def _groups(capacity: Any) -> tuple[dict[str, Any], list[str]]:
    spec = copy.deepcopy(SPEC)
    spec["pools"] = [dict(spec["pools"][0], capacity=capacity)]
    mocks = _Mocks()
    monitor = _Monitor(mocks)
    pulumi.runtime.set_mocks(mocks, preview=False, monitor=monitor)
    fleet = validate_fleet(spec)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        c = fleet.spec.clusters[0]
        return build_aws_cluster(c, fleet.pools_in(c.name), fleet, load_catalog(),
                                 pulumi.ResourceOptions()).endpoint

    run()
    (group,) = [r for r in mocks.resources if r.typ == NG and r.name == "p5-ng"]
    return dict(group.inputs), monitor.ignored["p5-ng"]


@pytest.mark.parametrize(("capacity", "desired_ignored"), [
    ({"reservation": "cr-0123456789abcdef0"}, False),
    ({"reservation": "cr-0123456789abcdef0", "block": True}, True),
])
def test_reserved_groups_update_minimally(capacity: dict[str, Any],
                                          desired_ignored: bool) -> None:
    group, ignored = _groups(capacity)
    assert group["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    assert ("scalingConfig.desiredSize" in ignored) is desired_ignored


def test_on_demand_groups_keep_the_default() -> None:
    group, ignored = _groups("on-demand")
    assert group["updateConfig"] == {"maxUnavailable": 1}
    assert ignored == []


# -- issue 36: a reservation is placed where it was made ---------------------------------------

PG = "aws:ec2/placementGroup:PlacementGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


def _built(pool_fields: dict[str, Any]) -> list[Any]:
    spec = copy.deepcopy(SPEC)
    spec["pools"] = [dict(spec["pools"][0], **pool_fields)]
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    fleet = validate_fleet(spec)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        c = fleet.spec.clusters[0]
        return build_aws_cluster(c, fleet.pools_in(c.name), fleet, load_catalog(),
                                 pulumi.ResourceOptions()).endpoint

    run()
    return list(mocks.resources)


@pytest.mark.parametrize(("fields", "grouped"), [
    # the instance: an EFA pool on a targeted On-Demand Capacity Reservation
    ({"capacity": {"reservation": "cr-0123456789abcdef0"}}, False),
    # own: the same with `placement: compact` written out
    ({"capacity": {"reservation": "cr-0123456789abcdef0"}, "placement": "compact"}, False),
    # own: a compact pool without EFA on an ODCR
    ({"capacity": {"reservation": "cr-0123456789abcdef0"}, "placement": "compact",
      "fabric": "off"}, False),
    ({"capacity": {"reservation": "cr-0123456789abcdef0", "block": True}}, False),
    ({"capacity": "on-demand"}, True),
    ({"capacity": "spot"}, True),
])
def test_a_reserved_pool_gets_no_placement_group_of_its_own(fields: dict[str, Any],
                                                            grouped: bool) -> None:
    resources = _built(fields)
    groups = [r for r in resources if r.typ == PG]
    (template,) = [r for r in resources if r.typ == LT and r.name == "p5-lt"]
    assert bool(groups) is grouped
    assert ("placement" in template.inputs) is grouped
