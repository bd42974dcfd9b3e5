"""EKS Kubernetes versions and what the control plane costs (issue 20, item 9).

References: the EKS release calendar
(https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar:
1.33 standard support until 2026-07-29, 1.34 until 2026-12-02, 1.35 until 2027-03-27), and the
control-plane price, $0.10 per cluster-hour in standard support and $0.60 in extended support
(https://aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing/,
https://aws.amazon.com/eks/pricing/)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from fleet import validate_fleet
from fleet.catalog import HOURS_PER_MONTH, Catalog, load_catalog
from fleet.control_planes import control_plane_costs
from fleet.errors import Problem
from fleet.model import PLATFORM_TEAM
from fleet.spec.fields import FleetSpec
from tests.fleet.conftest import only

DAY = date(2026, 11, 24)  # the day the calendar and prices were read


@pytest.fixture
def cat() -> Catalog:
    return load_catalog()


class _Checks:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, where: str, message: str, hint: str = "",
            accepted: tuple[str, ...] = ()) -> None:
        self.problems.append(Problem(where, message, hint, accepted))


def eks_spec(version: str | None) -> FleetSpec:
    cluster: dict[str, Any] = {"name": "eks", "cloud": "aws"}
    if version is not None:
        cluster["kubernetes_version"] = version
    return FleetSpec.model_validate({
        "clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
        "clusters": [cluster]})


def costs(cat: Catalog, version: str | None, day: date = DAY
          ) -> tuple[list[Any], list[Problem], list[Problem]]:
    checks, warnings = _Checks(), []
    out = control_plane_costs(checks, eks_spec(version), cat, day, warnings)
    return out, checks.problems, warnings


def test_versions_in_standard_support_are_pinned_and_the_default_is_the_newest(
        cat: Catalog) -> None:
    """Before: only 1.33 was pinned (the default), which left standard support on 2026-07-29,
    and 1.34 and 1.35 were refused."""
    eks = cat.eks_addons
    assert {"1.34", "1.35"} <= set(eks.versions)
    assert eks.default_kubernetes_version == eks.newest() == "1.35"
    assert eks.support_on(eks.default_kubernetes_version, DAY) == "standard"
    for version, pins in eks.versions.items():
        assert pins["kube-proxy"].startswith(f"v{version}.")


@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_versions_in_standard_support_validate(spec: dict[str, Any], version: str) -> None:
    spec["clusters"][1]["kubernetes_version"] = version
    fleet = validate_fleet(spec)
    (plane,) = fleet.control_planes
    assert plane.kubernetes_version == version


def test_standard_support_costs_ten_cents_an_hour(cat: Catalog) -> None:
    (plane,), problems, warnings = costs(cat, None)
    assert not problems and not warnings
    assert (plane.kubernetes_version, plane.support) == ("1.35", "standard")
    assert plane.usd_per_hour == pytest.approx(0.10)
    assert plane.monthly_usd == pytest.approx(0.10 * HOURS_PER_MONTH)
    assert plane.support_ends == date(2027, 3, 27)


def test_extended_support_costs_six_times_as_much_and_warns(cat: Catalog) -> None:
    (plane,), problems, (warning,) = costs(cat, "1.33")
    assert (plane.support, plane.usd_per_hour) == ("extended", pytest.approx(0.60))
    assert plane.support_ends == date(2027, 7, 29)
    assert "2026-07-29" in warning.message and "6x" in warning.message
    assert '"1.35"' in warning.hint and not problems


def test_leaving_standard_support_soon_warns(cat: Catalog) -> None:
    (plane,), _, (warning,) = costs(cat, "1.34")  # 8 days before 2026-12-02
    assert plane.support == "standard"
    assert "2026-12-02" in warning.message and "in 8 days" in warning.message


def test_past_extended_support_is_refused(cat: Catalog) -> None:
    planes, (problem,), _ = costs(cat, "1.33", date(2027, 7, 29))
    assert not planes
    assert "EKS creates no cluster" in problem.message and "1.35" in problem.accepted


def test_the_platform_pays_the_control_planes_and_its_budget_counts_them(
        spec: dict[str, Any]) -> None:
    spec["pools"] = []  # no system pool cost from GKE pools' zones matters here
    fleet = validate_fleet(spec)
    (plane,) = fleet.control_planes
    platform = fleet.team_cost(PLATFORM_TEAM)
    systems = sum(p.monthly_usd or 0.0 for p in fleet.system_pools)
    assert platform.monthly_usd == pytest.approx(systems + plane.monthly_usd)
    assert PLATFORM_TEAM in {t.name for t in fleet.team_costs()}
    spec["teams"].append({"name": PLATFORM_TEAM, "monthly_budget_usd": 1})
    p = only(spec, f"teams {PLATFORM_TEAM!r}.monthly_budget_usd")
    assert "control planes $73" in p.message
