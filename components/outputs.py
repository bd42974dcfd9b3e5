"""What a cluster builder hands back to `Fleet`."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi


@dataclass(frozen=True)
class ClusterOutputs:
    """A built cluster: its name, API endpoint, secret kubeconfig and Kubernetes provider."""

    name: str
    cloud: str
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: pulumi.ProviderResource
