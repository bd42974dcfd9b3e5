"""What `Fleet` hands a cloud's cluster component, and what that component hands back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from fleet.catalog import Catalog
from fleet.model import Fleet, ResolvedPool
from fleet.routing import ClusterRouting
from fleet.spec.fields import Cluster


@dataclass(frozen=True)
class ClusterOutputs:
    """A built cluster: its name, API endpoint, secret kubeconfig and Kubernetes provider;
    `ready`: what an in-cluster component added later waits for (the system pool's nodes, and
    the smoke namespace where the Kueue routing creates it)."""

    name: str
    cloud: str
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: pulumi.ProviderResource
    ready: tuple[pulumi.Resource, ...] = ()


@dataclass(frozen=True)
class ClusterArgs:
    """One cluster of a validated fleet, with the pools that join it, and its Kueue routing
    (None: worked out from the fleet for this cluster alone)."""

    cluster: Cluster
    pools: list[ResolvedPool]
    fleet: Fleet
    catalog: Catalog
    routing: ClusterRouting | None = None


# What every node pool (GKE) and node group (EKS) component registers, GPU and CPU alike: the
# cloud's name for it and the accelfleet pool it builds; a cloud's own extras come after.
NODE_POOL_OUTPUTS = ("name", "pool")


def node_pool_outputs(name: pulumi.Input[str], pool: ResolvedPool, **extra: Any
                      ) -> dict[str, Any]:
    """The outputs of a node pool or node group component: `NODE_POOL_OUTPUTS`, then its
    cloud's extras (GKE: the extra GPUDirect networks; EKS: the launch template)."""
    return {"name": name, "pool": pool.name, **extra}
