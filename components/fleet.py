"""`Fleet`: builds every cluster and pool a validated fleet declares, and exports the inventory.

Wiring only: each cloud's components decide nothing that the catalog or `fleet.model` decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s import install_gate
from components.outputs import ClusterOutputs
from fleet.catalog import load_catalog
from fleet.inventory import build_inventory
from fleet.model import Fleet as FleetModel

TYPE = "accelfleet:index:Fleet"


@dataclass(frozen=True)
class FleetArgs:
    fleet: FleetModel
    stack: str


class Fleet(pulumi.ComponentResource):
    """Every cluster, network and pool of one stack's fleet."""

    clusters: dict[str, ClusterOutputs]
    inventory: dict[str, Any]

    def __init__(
        self, name: str, args: FleetArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        catalog = load_catalog()
        child = pulumi.ResourceOptions(parent=self)
        self.clusters = {}
        # Kueue routing (flavors, team queues), decided once when the fleet was validated
        routing = {r.cluster: r for r in args.fleet.routing}
        for cluster in args.fleet.spec.clusters:
            pools = args.fleet.pools_in(cluster.name)
            if cluster.cloud == "gcp":
                from components.gcp import build_gcp_cluster

                self.clusters[cluster.name] = build_gcp_cluster(
                    cluster, pools, args.fleet, catalog, child,
                    routing=routing.get(cluster.name)
                )
            else:
                from components.aws import build_aws_cluster

                self.clusters[cluster.name] = build_aws_cluster(
                    cluster, pools, args.fleet, catalog, child,
                    routing=routing.get(cluster.name)
                )
        tpu_vms = [p for p in args.fleet.pools if p.runtime == "tpu-vm"]
        if tpu_vms:
            from components.gcp import build_tpu_vms

            build_tpu_vms(tpu_vms, args.fleet, catalog, child)
        self.inventory = build_inventory(args.fleet, args.stack, catalog).to_dict()
        for name, built in self.clusters.items():  # the gate controller where a pool is gated
            install_gate(args.fleet, name, built, self.inventory, child)
        self.register_outputs({
            "inventory": self.inventory,
            "clusters": {n: c.endpoint for n, c in self.clusters.items()},
        })
