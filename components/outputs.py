"""What `Fleet` hands a cloud's cluster component, and what that component hands back."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from fleet.catalog import Catalog
from fleet.model import Fleet, ResolvedPool
from fleet.routing import ClusterRouting
from fleet.spec.fields import Cluster


@dataclass(frozen=True)
class ClusterOutputs:
    """A built cluster: its name, API endpoint, secret kubeconfig and Kubernetes provider."""

    name: str
    cloud: str
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: pulumi.ProviderResource


@dataclass(frozen=True)
class ClusterArgs:
    """One cluster of a validated fleet, with the pools that join it, and its Kueue routing
    (None: worked out from the fleet for this cluster alone)."""

    cluster: Cluster
    pools: list[ResolvedPool]
    fleet: Fleet
    catalog: Catalog
    routing: ClusterRouting | None = None
