"""What GPU node pools and TPU slices share: node config, capacity and taints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_gcp as gcp

from components.gcp._cluster import NODE_SCOPES
from fleet.catalog import Catalog
from fleet.gate import gate_taint
from fleet.labels import POOL_RESOURCE_LABEL, TEAM_RESOURCE_LABEL
from fleet.model import ResolvedPool
from fleet.taints import api_effect

if TYPE_CHECKING:
    from components.gcp._network import ExtraNetwork

C = gcp.container
DRIVER_VERSIONS = {"default": "DEFAULT", "latest": "LATEST", "disabled": "INSTALLATION_DISABLED"}
RESERVATION_KEY = "compute.googleapis.com/reservation-name"


def taints(pool: ResolvedPool, catalog: Catalog
           ) -> list[gcp.container.NodePoolNodeConfigTaintArgs]:
    """The accelerator's taint from the catalog (a CPU pool has none), the gate's startup
    taint on a gated pool (every host of a multi-host TPU slice: the slice is proven as a
    unit), then the pool's own.

    The gate's key carries cluster-autoscaler's startup-taint prefix: the autoscaler leaves
    such taints out of the node template it simulates scale-up with, so pending pods that do
    not tolerate the gate still scale the pool up, from zero too, and it counts the tainted
    node as starting up (kubernetes/autoscaler cluster-autoscaler/FAQ.md "Startup taints" and
    utils/taints/taints.go StartupTaintPrefix / SanitizeTaints, read 2026-11-27). GKE applies
    node-config taints when a node registers and does not put a removed one back
    (kubernetes/cloud-provider-gcp#404, #322, read 2026-11-27); docs/gate.md has the rest."""
    out = []
    if pool.shape.kind != "cpu":
        t = catalog.kube(pool.shape).taint
        out.append(C.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value,
                                                 effect=api_effect(t.effect, "gke")))
    if pool.gate_enforced:  # a gate in shadow mode taints nothing
        g = gate_taint()
        out.append(C.NodePoolNodeConfigTaintArgs(key=g.key, value=g.value,
                                                 effect=api_effect(g.effect, "gke")))
    out += [C.NodePoolNodeConfigTaintArgs(key=x.key, value=x.value,
                                          effect=api_effect(x.effect, "gke"))
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
        machine_type=pool.shape.cloud_machine_type,
        disk_size_gb=pool.spec.disk_size_gb,
        image_type="COS_CONTAINERD",
        service_account=service_account,
        oauth_scopes=NODE_SCOPES,
        labels=pool.labels,
        resource_labels={TEAM_RESOURCE_LABEL: pool.team, POOL_RESOURCE_LABEL: pool.name},
        taints=taints(pool, catalog),
        spot=cap.spot or None,
        flex_start=pool.flex_start or None,  # queued pools too: GKE queues flex-start
        reservation_affinity=reservation_affinity(pool),
        gvnic=C.NodePoolNodeConfigGvnicArgs(enabled=True),
        workload_metadata_config=C.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"),
        shielded_instance_config=C.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True),
        metadata={"disable-legacy-endpoints": "true"},
        **extra,
    )


def node_network(extra: Sequence[ExtraNetwork]) -> gcp.container.NodePoolNetworkConfigArgs:
    """Private nodes, and each extra network (GPUDirect NICs, a TPU second network) attached
    as an additional node network."""
    return C.NodePoolNetworkConfigArgs(
        enable_private_nodes=True,
        additional_node_network_configs=[
            C.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(network=e.vpc,
                                                                   subnetwork=e.subnet)
            for e in extra] or None)


def management(pool: ResolvedPool | None = None) -> gcp.container.NodePoolManagementArgs:
    """Auto-upgrade always; auto-repair unless the pool is flex-start or queued (GKE refuses
    it there)."""
    repair = pool.auto_repair if pool is not None else True
    return C.NodePoolManagementArgs(auto_repair=repair, auto_upgrade=True)


def upgrade_settings(pool: ResolvedPool,
                     ) -> gcp.container.NodePoolUpgradeSettingsArgs | None:
    """The pool's upgrade policy (fleet.upgrade: the stack's `upgrade`, else the default for
    its capacity) as GKE's upgrade_settings; None for flex-start and queued pools, which GKE
    upgrades with its short-lived strategy whatever is set."""
    policy = pool.upgrade
    if policy is None or policy.strategy == "short-lived":
        return None
    if policy.strategy == "blue-green":
        bg = policy.blue_green
        rollout = C.NodePoolUpgradeSettingsBlueGreenSettingsStandardRolloutPolicyArgs(
            batch_node_count=bg.batch_nodes if bg else None,
            batch_percentage=bg.batch_percent / 100 if bg and bg.batch_percent else None,
            batch_soak_duration=f"{bg.batch_soak_s}s" if bg else None)
        green = C.NodePoolUpgradeSettingsBlueGreenSettingsArgs(
            standard_rollout_policy=rollout,
            node_pool_soak_duration=f"{bg.pool_soak_s}s"
            if bg and bg.pool_soak_s is not None else None)
        return C.NodePoolUpgradeSettingsArgs(strategy="BLUE_GREEN", blue_green_settings=green)
    return C.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=policy.max_surge,
                                         max_unavailable=policy.max_unavailable)


def autoscaling(pool: ResolvedPool) -> gcp.container.NodePoolAutoscalingArgs | None:
    """Total (all zones) min and max of one node pool, when the model says it autoscales.
    Spot and flex-start capacity take nodes in any zone that has them (location policy ANY).

    A flex-start or queued multi-host TPU slice takes per-zone min and max instead, as Cluster
    Toolkit sets them: "Per-zone limits (min_node_count/max_node_count) are required to
    workaround a Terraform provider bug when using TPU Flex Start"
    (GoogleCloudPlatform/cluster-toolkit@1047080375afbb44da4b596be314634e7486af4a
    modules/compute/gke-node-pool/main.tf, the node pool's autoscaling block). The slice is
    compact, in one zone, so per zone is all of it."""
    scaling = pool.scaling
    if scaling is None:
        return None
    anywhere = pool.spec.capacity.spot or pool.flex_start
    policy = "ANY" if anywhere else "BALANCED"
    if per_zone_limits(pool):
        zones = len(pool.spec.zones)
        return C.NodePoolAutoscalingArgs(
            min_node_count=per_zone_count(scaling[0], zones),
            max_node_count=per_zone_count(scaling[1], zones), location_policy=policy)
    return C.NodePoolAutoscalingArgs(
        total_min_node_count=scaling[0], total_max_node_count=scaling[1],
        location_policy=policy)


def per_zone_limits(pool: ResolvedPool) -> bool:
    """Whether the pool's autoscaling limits are per zone (see `autoscaling`)."""
    return pool.shape.tpu is not None and pool.shape.multi_host and pool.flex_start


def per_zone_count(nodes: int, zones: int) -> int:
    """GKE counts nodes per zone of `node_locations`: the smallest per-zone count that gives
    at least `nodes` in all (exact when `nodes` divides evenly)."""
    return -(-nodes // max(zones, 1))


def node_counts(pool: ResolvedPool, fixed: int) -> dict[str, Any]:
    """`node_count` (per zone) of a fixed pool of `fixed` nodes, or `initial_node_count` (per
    zone) of an autoscaled one: the NodePool keyword arguments."""
    zones = len(pool.spec.zones)
    if pool.scaling is None:
        return {"node_count": per_zone_count(fixed, zones)}
    return {"initial_node_count": per_zone_count(pool.initial_nodes, zones)}
