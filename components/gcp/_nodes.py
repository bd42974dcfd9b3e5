"""What GPU node pools and TPU slices share: node config, capacity and taints."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.gcp._cluster import NODE_SCOPES
from fleet.catalog import Catalog
from fleet.model import ResolvedPool

C = gcp.container
DRIVER_VERSIONS = {"default": "DEFAULT", "latest": "LATEST", "disabled": "INSTALLATION_DISABLED"}
RESERVATION_KEY = "compute.googleapis.com/reservation-name"


def taints(pool: ResolvedPool, catalog: Catalog
           ) -> list[gcp.container.NodePoolNodeConfigTaintArgs]:
    """The accelerator's taint from the catalog, then the pool's own."""
    effect = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE",
              "NoExecute": "NO_EXECUTE"}
    t = catalog.kube(pool.shape).taint
    out = [C.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=effect[t.effect])]
    out += [C.NodePoolNodeConfigTaintArgs(key=x.key, value=x.value, effect=effect[x.effect])
            for x in pool.spec.taints]
    return out


def reservation_affinity(
    pool: ResolvedPool,
) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs | None:
    """A named reservation: SPECIFIC; spot, flex-start and queued: NO_RESERVATION."""
    cap = pool.spec.capacity
    if cap.reservation:
        return C.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION", key=RESERVATION_KEY,
            values=[cap.reservation])
    if cap.spot or cap.flex_start or cap.queued:
        return C.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="NO_RESERVATION")
    return None


def node_config(pool: ResolvedPool, catalog: Catalog, service_account: pulumi.Input[str],
                **extra: Any) -> gcp.container.NodePoolNodeConfigArgs:
    """Secure defaults for every accelfleet node: dedicated SA, GKE metadata server, shielded
    VM with secure boot, gVNIC, no legacy metadata endpoints."""
    cap = pool.spec.capacity
    return C.NodePoolNodeConfigArgs(
        machine_type=pool.shape.machine_type,
        disk_size_gb=pool.spec.disk_size_gb,
        image_type="COS_CONTAINERD",
        service_account=service_account,
        oauth_scopes=NODE_SCOPES,
        labels=pool.labels,
        resource_labels={"accelfleet-team": pool.team, "accelfleet-pool": pool.name},
        taints=taints(pool, catalog),
        spot=cap.spot or None,
        flex_start=cap.flex_start or None,
        reservation_affinity=reservation_affinity(pool),
        gvnic=C.NodePoolNodeConfigGvnicArgs(enabled=True),
        workload_metadata_config=C.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"),
        shielded_instance_config=C.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True),
        metadata={"disable-legacy-endpoints": "true"},
        **extra,
    )


def management() -> gcp.container.NodePoolManagementArgs:
    return C.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True)
