"""What each EKS control plane costs, and which Kubernetes versions it can run at.

EKS bills every cluster per hour: one rate while its Kubernetes version is in standard support,
six times that once the version enters extended support (from the first day past its end of
standard support, UTC), and creates no cluster past the end of extended support
(catalog aws.yaml `eks_addons`: the release calendar and the two rates, with their sources).
A cluster that names no `kubernetes_version` gets the catalog's default, the newest version
whose add-ons are pinned. The platform pays the control planes (`PLATFORM_TEAM`), as it pays
the system pools.

`fleet.rules.validate` calls `control_plane_costs`; it reports through the checker's `add` and
appends warnings (a version in extended support, or leaving standard support soon).
"""

from __future__ import annotations

from datetime import date, timedelta

from fleet import words as W
from fleet.catalog import Catalog
from fleet.errors import Problem, Where
from fleet.errors import Problems as Checks
from fleet.model import ControlPlaneCost
from fleet.spec.fields import FleetSpec

# EKS announces the end of standard support at least 60 days ahead (kubernetes-versions.html,
# "Amazon EKS version FAQs"): a cluster at a version that leaves it within that time is warned.
NOTICE_DAYS = 60


def control_plane_costs(checks: Checks, spec: FleetSpec, catalog: Catalog, today: date,
                        warnings: list[Problem]) -> list[ControlPlaneCost]:
    """The cost of every EKS cluster's control plane on `today`; a version past its extended
    support is refused, one in extended support (or leaving standard support within
    NOTICE_DAYS) is warned, naming the version to move to."""
    eks = catalog.eks_addons
    newest = eks.newest()
    out: list[ControlPlaneCost] = []
    for cluster in spec.clusters:
        if cluster.cloud != "aws" or spec.clouds.aws is None:
            continue
        version = cluster.kubernetes_version or eks.default_kubernetes_version
        dates = eks.support.get(version)
        if dates is None:
            continue  # no pins for it: `fleet.rules.validate` refuses the version
        at = Where("clusters", name=cluster.name, field="kubernetes_version")
        support = eks.support_on(version, today)
        move = f"set `kubernetes_version: \"{newest}\"` (the newest version pinned)"
        if support is None:
            checks.add(at, f"Kubernetes {version} left EKS extended support on "
                       f"{dates.end_of_extended_support}: EKS creates no cluster at it",
                       move, tuple(v for v in eks.versions if eks.support_on(v, today)))
            continue
        rate = eks.control_plane_usd_per_hour[support]
        if support == "extended":
            standard = eks.control_plane_usd_per_hour["standard"]
            warnings.append(Problem(
                at, f"Kubernetes {version} left EKS standard support on "
                f"{dates.end_of_standard_support}: its control plane is billed at the "
                f"extended-support rate, {W.rate_usd(rate)} an hour ({rate / standard:.0f}x "
                f"{W.rate_usd(standard)}), until {dates.end_of_extended_support}", move))
            ends = dates.end_of_extended_support
        else:
            ends = dates.end_of_standard_support
            if ends - today <= timedelta(days=NOTICE_DAYS):
                extended = eks.control_plane_usd_per_hour["extended"]
                warnings.append(Problem(
                    at, f"Kubernetes {version} leaves EKS standard support on {ends} "
                    f"(in {(ends - today).days} days); from then its control plane is billed "
                    f"{W.rate_usd(extended)} an hour instead of {W.rate_usd(rate)}", move))
        out.append(ControlPlaneCost(cluster=cluster.name, kubernetes_version=version,
                                    support=support, usd_per_hour=rate, support_ends=ends,
                                    source=eks.control_plane_price_source))
    return out
