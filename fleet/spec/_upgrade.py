"""A pool's `upgrade`: how its nodes are replaced when the cloud upgrades or rolls them (a
version, a machine type, a disk, a launch template: every change `plan --diff` calls ROLLS).
Each field is checked here against the providers' schemas; which fields a cloud takes, and
the defaults, are `fleet.upgrade` and `fleet.rules.upgrade`. Imported through
`fleet.spec.fields`.

    GKE   upgrade_settings of google_container_node_pool (hashicorp/terraform-provider-google
          @e03b7622a26c google/services/container/resource_container_node_pool.go, read
          2026-11-28): max_surge and max_unavailable IntAtLeast(0); strategy SURGE or
          BLUE_GREEN; blue_green_settings.standard_rollout_policy batch_percentage
          FloatBetween(0.0, 1.0) or batch_node_count (one of them: googleapis
          google/container/v1/cluster_service.proto@f8291d2b89f0, `oneof update_batch_size`),
          batch_soak_duration, node_pool_soak_duration.
    EKS   update_config of aws_eks_node_group (hashicorp/terraform-provider-aws@012e0a32f068
          internal/service/eks/node_group.go, read 2026-11-28): max_unavailable
          IntBetween(1, 100) or max_unavailable_percentage IntBetween(1, 100), exactly one;
          update_strategy DEFAULT or MINIMAL (EKS API NodegroupUpdateConfig).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fleet.spec._values import SpecValueError, _Model

# What a stack writes -> what it means: `surge` new nodes first (GKE SURGE, EKS DEFAULT),
# `minimal` an old node first (EKS MINIMAL; on GKE: max_surge 0), `blue-green` a whole new
# pool beside the old, then the old drained (GKE BLUE_GREEN only).
STRATEGIES = ("surge", "minimal", "blue-green")
# a day: GKE takes a soak as a duration; a week bounds a typo (GKE's autoscaled policy
# itself waits at most 7 days, cluster_service.proto AutoscaledRolloutPolicy)
SOAK_MAX_S = 7 * 24 * 60 * 60


class BlueGreen(_Model):
    """GKE's standard blue-green rollout: the old (blue) pool drained in batches of
    `batch_nodes` nodes or `batch_percent` of the pool, `batch_soak_s` after each batch, and
    the blue pool deleted `pool_soak_s` after the last."""

    batch_nodes: int | None = Field(default=None, ge=1)
    batch_percent: int | None = Field(default=None, ge=1, le=100)
    batch_soak_s: int = Field(default=0, ge=0, le=SOAK_MAX_S)
    pool_soak_s: int | None = Field(default=None, ge=0, le=SOAK_MAX_S)

    @model_validator(mode="after")
    def _one_batch_size(self) -> BlueGreen:
        if self.batch_nodes is not None and self.batch_percent is not None:
            raise SpecValueError(
                "`batch_nodes` and `batch_percent` both set: GKE takes one batch size "
                "(cluster_service.proto `oneof update_batch_size`)",
                "keep one, e.g. `batch_nodes: 1`")
        return self


class Upgrade(_Model):
    """How a pool's nodes are upgraded or rolled (docs/stack.md "Upgrades")."""

    strategy: Literal["surge", "minimal", "blue-green"] | None = None
    max_surge: int | None = Field(default=None, ge=0)
    max_unavailable: int | None = Field(default=None, ge=0)
    max_unavailable_percent: int | None = Field(default=None, ge=1, le=100)
    blue_green: BlueGreen | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Upgrade:
        if self.max_unavailable is not None and self.max_unavailable_percent is not None:
            raise SpecValueError(
                "`max_unavailable` and `max_unavailable_percent` both set: a node group "
                "takes exactly one (aws_eks_node_group update_config ExactlyOneOf)",
                "keep one, e.g. `max_unavailable: 1`")
        if self.blue_green is not None and self.strategy != "blue-green":
            raise SpecValueError(
                "`blue_green` settings without `strategy: blue-green` (the provider refuses "
                "blue-green settings when the blue-green strategy is not enabled)",
                "add `strategy: blue-green`, or remove `blue_green`")
        if self.strategy == "blue-green" and (self.max_surge is not None
                                              or self.max_unavailable is not None
                                              or self.max_unavailable_percent is not None):
            raise SpecValueError(
                "`max_surge` / `max_unavailable` with `strategy: blue-green` (the provider "
                "refuses surge settings when the surge strategy is not enabled)",
                "remove them; a blue-green upgrade drains in `blue_green.batch_nodes` or "
                "`batch_percent` batches instead")
        if self.strategy == "minimal" and self.max_surge:
            raise SpecValueError(
                "`strategy: minimal` replaces an old node before it adds one: it takes no "
                "`max_surge`", "remove `max_surge`, or use `strategy: surge`")
        return self
