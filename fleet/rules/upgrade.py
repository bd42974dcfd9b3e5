"""A pool's `upgrade` against what its cloud takes (fleet.spec._upgrade has the fields and
their per-field limits; fleet.upgrade the defaults). Refused: what the provider or the cloud
refuses, or a setting that cannot act; warned: what the cloud takes but that cannot work as
written on the pool's capacity.

    GKE   `max_unavailable_percent` (EKS only); max_surge + max_unavailable of 0 (the proto:
          "(maxUnavailable + maxSurge) determines the level of parallelism (how many nodes
          are being upgraded at the same time)", cluster_service.proto NodePool.UpgradeSettings,
          googleapis@f8291d2b89f0: with 0 no node is ever upgraded); any `upgrade` on a
          flex-start or queued pool (GKE upgrades those with its own SHORT_LIVED strategy,
          NodePoolUpdateStrategy, and "For nodes that use Flex-start VMs, GKE uses short-lived
          upgrades", https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies,
          read 2026-11-28). Warned: more than 20 at once (terraform-provider-google
          upgrade_settings: "The maximum number of nodes upgraded simultaneously is limited to
          20"); a surge or a blue-green upgrade on a reservation or a TPU slice (the extra
          nodes need capacity the reservation or the slice's topology does not have: with
          none GKE's upgrade fails and retries, node-upgrades-quota, read 2026-11-28).
    EKS   `max_surge` and `blue-green` (update_config has neither: max_unavailable or
          max_unavailable_percentage, terraform-provider-aws@012e0a32f068 node_group.go);
          `max_unavailable` 0 (IntBetween(1, 100)) or over 100. Warned: `strategy: surge` on a
          reservation (DEFAULT launches new instances first, which a fully used reservation
          cannot hold: EKS API NodegroupUpdateConfig.updateStrategy, read 2026-11-27).
    tpu-vm  no node pool: any `upgrade` is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleet.errors import Problem, Where
from fleet.model import ResolvedPool
from fleet.upgrade import NODE_UPGRADES_QUOTA, scarce

if TYPE_CHECKING:  # the rules checker lends its problem sink
    from fleet.rules.problems import RuleProblems

GKE_MAX_PARALLEL = 20  # terraform-provider-google upgrade_settings' description (module doc)
EKS_MAX_UNAVAILABLE = 100  # aws_eks_node_group update_config IntBetween(1, 100)


def _at(pool: ResolvedPool) -> Where:
    if pool.system and pool.cluster is not None:
        return Where("clusters", name=pool.cluster.name, field="system_pool.upgrade")
    return Where("pools", name=pool.name, field="upgrade")


def check_upgrade(checks: RuleProblems, pool: ResolvedPool, warnings: list[Problem]) -> None:
    up = pool.spec.upgrade
    if up is None:
        return
    at = _at(pool)
    if pool.runtime == "tpu-vm":
        checks.add(at, "a tpu-vm pool is Cloud TPU VMs, not a node pool: nothing upgrades "
                   "its nodes", "remove `upgrade`")
        return
    if pool.cloud == "aws":
        _eks(checks, pool, at, warnings)
    else:
        _gke(checks, pool, at, warnings)


def _eks(checks: RuleProblems, pool: ResolvedPool, at: Where, warnings: list[Problem]) -> None:
    up = pool.spec.upgrade
    assert up is not None
    if up.max_surge is not None:
        checks.add(at.dot("max_surge"), "an EKS node group has no surge setting: its update "
                   "takes max_unavailable or max_unavailable_percentage only",
                   "remove `max_surge`; `strategy: surge` (EKS DEFAULT) launches the new "
                   "nodes before it drains the old, `strategy: minimal` the other way round")
    if up.strategy == "blue-green":
        checks.add(at.dot("strategy"), "an EKS node group has no blue-green update (its "
                   "strategies are DEFAULT and MINIMAL)",
                   "use `strategy: surge` or `minimal`, or a second pool and a move of work")
    if up.max_unavailable is not None and not 1 <= up.max_unavailable <= EKS_MAX_UNAVAILABLE:
        checks.add(at.dot("max_unavailable"),
                   f"max_unavailable {up.max_unavailable}: an EKS node group takes 1 to "
                   f"{EKS_MAX_UNAVAILABLE}", "use 1 (one node at a time), or "
                   "`max_unavailable_percent`")
    if up.strategy == "surge" and pool.spec.capacity.reservation:
        warnings.append(Problem(
            at.dot("strategy"), "`strategy: surge` on a reservation: EKS launches each new "
            "instance before it terminates an old one, and a reservation sized to the pool "
            "has no instance to spare, so the update waits for capacity",
            "leave `strategy` out (a reservation gets `minimal`), or reserve one instance "
            "more than the pool"))


def _gke(checks: RuleProblems, pool: ResolvedPool, at: Where, warnings: list[Problem]) -> None:
    up = pool.spec.upgrade
    policy = pool.upgrade
    assert up is not None and policy is not None
    if pool.flex_start:
        checks.add(at, "GKE upgrades flex-start and queued nodes with its own short-lived "
                   "strategy: a surge or blue-green setting does not apply to them",
                   "remove `upgrade`")
        return
    if up.max_unavailable_percent is not None:
        checks.add(at.dot("max_unavailable_percent"), "a GKE node pool takes a count of "
                   "nodes, not a share", "use `max_unavailable` (a number of nodes)")
    if policy.strategy == "blue-green":
        if scarce(pool):
            warnings.append(Problem(
                at.dot("strategy"), f"a blue-green upgrade creates a second pool of "
                f"{pool.node_count} node(s) beside this one, and its "
                + ("reservation" if pool.spec.capacity.reservation else "TPU capacity")
                + " has none to spare: the upgrade waits for capacity",
                f"use `max_surge: 0, max_unavailable: 1` ({NODE_UPGRADES_QUOTA})"))
        return
    surge, unavailable = policy.max_surge or 0, policy.max_unavailable or 0
    if surge + unavailable == 0:
        checks.add(at, "max_surge 0 and max_unavailable 0: GKE upgrades max_surge + "
                   "max_unavailable nodes at a time, so no node would ever be upgraded",
                   "set `max_unavailable: 1` (an old node out first) or `max_surge: 1` (a "
                   "new node first)")
    elif surge + unavailable > GKE_MAX_PARALLEL:
        warnings.append(Problem(
            at, f"max_surge + max_unavailable is {surge + unavailable}: GKE upgrades at most "
            f"{GKE_MAX_PARALLEL} nodes at a time, so the rest never acts",
            f"keep the sum at {GKE_MAX_PARALLEL} or under"))
    if surge and scarce(pool):
        what = "reservation" if pool.spec.capacity.reservation else "TPU slice"
        warnings.append(Problem(
            at.dot("max_surge"), f"max_surge {surge} on a {what}: each surge node needs "
            f"capacity beyond the pool's, which a {what} does not have; with none GKE's "
            "upgrade fails and is retried", f"use `max_surge: 0, max_unavailable: 1` "
            f"({NODE_UPGRADES_QUOTA})"))
