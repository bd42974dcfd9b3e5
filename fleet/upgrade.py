"""The upgrade policy a pool's nodes are replaced under (a version upgrade, and every change
`plan --diff` calls ROLLS): the stack's `upgrade`, else the default for its cloud and
capacity. The components render it (GKE `upgrade_settings`, EKS `update_config`); `plan`
records it per pool and `plan --diff` names it beside each roll; `fleet.rules.upgrade`
refuses what the cloud would refuse.

Defaults, for gated accelerator pools, where a node replaced means a node proven again:

    GKE, capacity that exists     surge: max_surge 1, max_unavailable 0 (GKE's own default: a
                                  new node is made, proven by the gate, before an old one goes)
    GKE, a reservation or a TPU   max_surge 0, max_unavailable 1: "All nodes that GKE creates,
                                  including nodes used for upgrades, are subject to ... reservation
                                  capacity"; with maxSurge above 0 and no extra capacity the
                                  upgrade fails and GKE retries
                                  (https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota,
                                  read 2026-11-28). A reservation is sized to its pool, and a TPU
                                  slice's hosts come as the slice's topology, never one more.
    GKE, flex-start or queued     GKE's short-lived upgrades (cluster_service.proto
                                  NodePoolUpdateStrategy SHORT_LIVED: "the dedicated upgrade
                                  strategy for QueuedProvisioning and flex start nodepools"); no
                                  setting is rendered
    EKS                           max_unavailable 1; on a reservation (an ODCR or a Capacity
                                  Block) the MINIMAL strategy, which terminates an old instance
                                  before it launches a new one (EKS API NodegroupUpdateConfig,
                                  components/aws/_nodegroup.py update_strategy)
    Cloud TPU VMs                 none: no node pool (runtime tpu-vm)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleet.model import ResolvedPool
    from fleet.spec.fields import BlueGreen

NODE_UPGRADES_QUOTA = "https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota"


@dataclass(frozen=True)
class UpgradePolicy:
    """One pool's effective policy. `strategy`: surge | minimal | blue-green | short-lived;
    `declared`: whether the stack set it (else: the default, `why` says which)."""

    cloud: str
    strategy: str
    max_surge: int | None = None
    max_unavailable: int | None = None
    max_unavailable_percent: int | None = None
    blue_green: BlueGreen | None = None
    declared: bool = False
    why: str = ""

    @property
    def words(self) -> str:
        """`surge 1, unavailable 0` and the like: what a roll of the pool goes by."""
        if self.strategy == "short-lived":
            return "GKE's short-lived upgrade (flex-start)"
        if self.strategy == "blue-green":
            bg = self.blue_green
            batch = (f"{bg.batch_nodes} node(s)" if bg and bg.batch_nodes
                     else f"{bg.batch_percent}%" if bg and bg.batch_percent else "GKE's batch")
            return f"blue-green, drained {batch} at a time"
        unavailable = (f"{self.max_unavailable_percent}%" if self.max_unavailable_percent
                       is not None else str(self.max_unavailable))
        if self.cloud == "aws":
            order = ("an old node out first" if self.strategy == "minimal"
                     else "new nodes first")
            return f"{unavailable} unavailable at a time, {order}"
        return f"surge {self.max_surge}, unavailable {unavailable}"

    def summary(self) -> dict[str, Any]:
        bg = self.blue_green
        return {"strategy": self.strategy, "max_surge": self.max_surge,
                "max_unavailable": self.max_unavailable,
                "max_unavailable_percent": self.max_unavailable_percent,
                "blue_green": None if bg is None else bg.model_dump(),
                "declared": self.declared, "words": self.words}


def scarce(pool: ResolvedPool) -> bool:
    """Capacity no surge node can come from: a reservation, or a TPU slice."""
    return bool(pool.spec.capacity.reservation) or pool.shape.tpu is not None


def decide_upgrade(pool: ResolvedPool) -> UpgradePolicy | None:
    """The pool's policy: the stack's `upgrade` over its cloud's default (module docstring);
    None for Cloud TPU VMs. What the cloud refuses is `fleet.rules.upgrade`'s to say."""
    if pool.runtime == "tpu-vm":
        return None
    up = pool.spec.upgrade
    if pool.cloud == "aws":
        minimal_default = bool(pool.spec.capacity.reservation)
        strategy = (up.strategy if up and up.strategy in ("surge", "minimal")
                    else "minimal" if minimal_default else "surge")
        percent = up.max_unavailable_percent if up else None
        unavailable = None if percent is not None else (
            up.max_unavailable if up and up.max_unavailable is not None else 1)
        return UpgradePolicy("aws", strategy, None, unavailable, percent,
                             declared=up is not None,
                             why="" if up else ("a reservation: MINIMAL" if minimal_default
                                                else "EKS: one node at a time"))
    if pool.flex_start:
        return UpgradePolicy("gcp", "short-lived", declared=up is not None,
                             why="flex-start: GKE's SHORT_LIVED")
    if up is not None and up.strategy == "blue-green":
        return UpgradePolicy("gcp", "blue-green", blue_green=up.blue_green, declared=True)
    tight = scarce(pool) or (up is not None and up.strategy == "minimal")
    surge, unavailable = (0, 1) if tight else (1, 0)
    if up is not None:
        surge = up.max_surge if up.max_surge is not None else surge
        unavailable = up.max_unavailable if up.max_unavailable is not None else unavailable
    return UpgradePolicy("gcp", "minimal" if tight and not surge else "surge", surge,
                         unavailable, up.max_unavailable_percent if up else None,
                         declared=up is not None,
                         why="" if up else ("no surge capacity (a reservation or a TPU "
                                            f"slice: {NODE_UPGRADES_QUOTA})" if tight
                                            else "GKE's default surge"))
