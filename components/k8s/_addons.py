"""`GpuAddons`: the device plugins and the DCGM exporter a GPU cluster needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s._charts import (
    DCGM_EXPORTER,
    EFA_DEVICE_PLUGIN,
    NVIDIA_DEVICE_PLUGIN,
    Chart,
)
from components.k8s._values import (
    GpuScheduling,
    dcgm_exporter_values,
    efa_device_plugin_values,
    nvidia_device_plugin_values,
)

TYPE = "accelfleet:k8s:GpuAddons"


def pinned_release(resource_name: str, chart: Chart, values: dict[str, Any],
                   opts: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
    """A Helm release of `chart` at its pinned version, in its own namespace; atomic, so a
    failed install or upgrade rolls back instead of leaving a half-applied release."""
    return k8s.helm.v3.Release(
        resource_name,
        name=chart.chart,
        chart=chart.ref,
        version=chart.version,
        repository_opts=None if chart.oci else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
        namespace=chart.namespace,
        create_namespace=True,
        atomic=True,
        values=values,
        opts=opts,
    )


def release_opts(component: pulumi.Resource, opts: pulumi.ResourceOptions | None
                 ) -> pulumi.ResourceOptions:
    """Options for a component's Helm releases: its children, waiting for what the component
    was told to wait for (a component's `depends_on` does not reach its children by itself).
    The cluster components pass the system pool's nodes: an atomic release installed before
    any untainted node exists times out and rolls back."""
    return pulumi.ResourceOptions(parent=component, depends_on=opts.depends_on if opts else None)


@dataclass(frozen=True)
class GpuAddonsArgs:
    """efa: install the EFA device plugin (the cluster has EFA pools); dcgm_exporter: NVIDIA's
    DCGM exporter, which the gate reads between proofs (components.k8s.wants_dcgm_exporter);
    device_plugin: NVIDIA's device plugin (False on GKE, which runs its own);
    driver_dir: where the nodes keep the NVIDIA driver, for the exporter (GKE's, see
    components.k8s._values.GKE_NVIDIA_DIR; None where it is on the library path)."""

    scheduling: GpuScheduling
    efa: bool = True
    dcgm_exporter: bool = False
    device_plugin: bool = True
    driver_dir: str | None = None


class GpuAddons(pulumi.ComponentResource):
    """Helm releases, each pinned to a chart version, scheduled on the nodes that need them."""

    releases: dict[str, k8s.helm.v3.Release]

    def __init__(
        self, name: str, args: GpuAddonsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        wanted: list[tuple[Chart, dict[str, Any]]] = []
        if args.device_plugin:
            wanted.append((NVIDIA_DEVICE_PLUGIN, nvidia_device_plugin_values(args.scheduling)))
        if args.efa:
            wanted.append((EFA_DEVICE_PLUGIN, efa_device_plugin_values(args.scheduling)))
        if args.dcgm_exporter:
            wanted.append((DCGM_EXPORTER, dcgm_exporter_values(args.scheduling,
                                                               driver_dir=args.driver_dir)))
        self.releases = {}
        for chart, values in wanted:
            self.releases[chart.chart] = pinned_release(
                f"{name}-{chart.chart}", chart, values, release_opts(self, opts))
        self.register_outputs({
            "releases": {n: r.version for n, r in self.releases.items()},
        })
