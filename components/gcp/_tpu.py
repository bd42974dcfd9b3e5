"""`TpuSlice` (TPU slices as GKE node pools) and `TpuVm` (Cloud TPU VMs, no Kubernetes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.gcp._network import ExtraNetwork
from components.gcp._nodes import (
    autoscaling,
    management,
    node_config,
    node_counts,
    node_network,
    reservation_affinity,
    upgrade_settings,
)
from components.gcp._pins import TPU_VM_RUNTIME
from fleet.catalog import Catalog, Shape
from fleet.errors import InputError
from fleet.labels import POOL_RESOURCE_LABEL, TEAM_RESOURCE_LABEL
from fleet.model import ResolvedPool
from fleet.names import slice_pool_names, tpu_vm_names, workload_policy_name

SLICE_TYPE = "accelfleet:gcp:TpuSlice"
VM_TYPE = "accelfleet:gcp:TpuVm"
C = gcp.container


@dataclass(frozen=True)
class TpuSliceArgs:
    pool: ResolvedPool
    catalog: Catalog
    cluster: pulumi.Input[str]
    project: str
    service_account: pulumi.Input[str]
    # the cluster's TPU second network (components/gcp/_tpu_network.py), where the generation
    # takes one
    extra_networks: list[ExtraNetwork] = field(default_factory=list)


class TpuSlice(pulumi.ComponentResource):
    """One node pool per slice (a multislice is N identical pools). Machine type and node
    count from the catalog's shape; multi-host slices are compact with their TPU topology
    (tpu7x: a workload policy with the accelerator topology) and autoscale only atomically,
    between 0 and all their hosts (flex-start and queued slices always do)."""

    node_pools: list[gcp.container.NodePool]

    def __init__(self, name: str, args: TpuSliceArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(SLICE_TYPE, name, None, opts)
        pool, shape = args.pool, args.pool.shape
        tpu = shape.tpu
        if tpu is None:
            raise InputError(f"pool {pool.name!r} is not a TPU pool",
                             hint="use a GPU node pool for GPU machine types")
        child = pulumi.ResourceOptions(parent=self)
        policy_name: pulumi.Input[str] | None = None
        if shape.multi_host and tpu.placement == "workload-policy":
            policy = gcp.compute.ResourcePolicy(
                f"{name}-workload-policy",
                name=workload_policy_name(pool.name, pool.cluster.name if pool.cluster else "",
                                          shape.topology_str),
                project=args.project,
                region=pool.region,
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=shape.topology_str),
                opts=child)
            policy_name = policy.name
        self.node_pools = []
        # named by fleet.names, whose rules check that every slice's name fits GKE's
        for pool_name in slice_pool_names(pool.name, pool.spec.multislice):
            suffix = pool_name[len(pool.name):]
            self.node_pools.append(C.NodePool(
                f"{name}{suffix}-pool", name=pool_name, project=args.project,
                cluster=args.cluster, location=pool.region, node_locations=list(pool.spec.zones),
                **node_counts(pool, shape.hosts),
                autoscaling=autoscaling(pool),
                management=management(pool),
                upgrade_settings=upgrade_settings(pool),
                placement_policy=placement(shape, policy_name),
                queued_provisioning=C.NodePoolQueuedProvisioningArgs(enabled=True)
                if pool.spec.capacity.queued else None,
                network_config=node_network(args.extra_networks),
                node_config=node_config(pool, args.catalog, args.service_account),
                # a slice's topology has no in-place update (the provider ignores it): replace
                # (components/engine/data/replacements.yaml, no_update_path)
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount"]
                                            if pool.scaling else None,
                                            replace_on_changes=["placementPolicy"]
                                            if shape.multi_host else None)))
        self.register_outputs({"node_pools": [p.name for p in self.node_pools],
                               "topology": shape.topology_str, "hosts": shape.hosts})


def placement(shape: Shape, policy_name: pulumi.Input[str] | None
              ) -> gcp.container.NodePoolPlacementPolicyArgs | None:
    """Multi-host: COMPACT with tpu_topology, or the workload policy where the generation
    asks for one. Single-host slices need no placement policy."""
    if not shape.multi_host:
        return None
    if policy_name is not None:
        return C.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=policy_name)
    return C.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=shape.topology_str)


def accelerator_type(shape: Shape) -> str:
    """The Cloud TPU API name of a slice: v5p-128 counts TensorCores, v6e-8 counts chips."""
    tpu = shape.tpu
    assert tpu is not None
    return tpu.api_name(shape.chips)


@dataclass(frozen=True)
class TpuVmArgs:
    """`extra_networks`: networks attached beside the primary one, each a NIC of every VM
    (the second network of v6e and tpu7x, components/gcp/_tpu_network.py)."""

    pool: ResolvedPool
    project: str
    network: pulumi.Input[str]
    subnet: pulumi.Input[str]
    service_account: pulumi.Input[str]
    extra_networks: Sequence[ExtraNetwork] = ()


class TpuVm(pulumi.ComponentResource):
    """Cloud TPU VMs outside Kubernetes: one `tpu.V2Vm` (one slice), on-demand or spot,
    with the dedicated node identity, secure boot and labels. No external IPs. Flex-start and
    queued TPU VMs are refused by the rules: pulumi-gcp's tpu.V2QueuedResource cannot set
    their service account, shielded VM, labels or provisioning model."""

    def __init__(self, name: str, args: TpuVmArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(VM_TYPE, name, None, opts)
        pool, shape = args.pool, args.pool.shape
        tpu = shape.tpu
        if tpu is None or tpu.key not in TPU_VM_RUNTIME:
            gen = tpu.key if tpu else shape.machine_type
            raise InputError(
                f"pool {pool.name!r}: {gen} is not offered as Cloud TPU VMs",
                hint="drop `runtime: tpu-vm` to run it in a GKE cluster")
        if pool.flex_start:
            raise InputError(
                f"pool {pool.name!r}: flex-start and queued TPU VMs cannot be built with the "
                "dedicated service account", hint="drop `runtime: tpu-vm` to run it in GKE")
        if pool.spec.multislice > 1 or pool.spec.capacity.reservation:
            # fleet.rules.tpu_vms refuses both first: N VMs are no Multislice, and V2Vm has
            # no reservation name
            raise InputError(
                f"pool {pool.name!r}: a Cloud TPU VM pool is one slice with no named "
                "reservation", hint="drop `runtime: tpu-vm` to run it in GKE")
        child = pulumi.ResourceOptions(parent=self)
        zone = pool.spec.zones[0]
        cap = pool.spec.capacity
        runtime = TPU_VM_RUNTIME[tpu.key]
        acc_type = accelerator_type(shape)
        labels = {TEAM_RESOURCE_LABEL: pool.team, POOL_RESOURCE_LABEL: pool.name}
        names = tpu_vm_names(pool.name, pool.spec.multislice)
        primary = gcp.tpu.V2VmNetworkConfigArgs(
            network=args.network, subnetwork=args.subnet, enable_external_ips=False)
        # One NIC per network; the API takes either `network_config` or `network_configs`.
        nics = [primary, *(gcp.tpu.V2VmNetworkConfigArgs(
            network=n.vpc, subnetwork=n.subnet, enable_external_ips=False)
            for n in args.extra_networks)]
        for i, node_id in enumerate(names):
            gcp.tpu.V2Vm(
                f"{name}-{i}-vm", name=node_id, project=args.project, zone=zone,
                accelerator_type=acc_type, runtime_version=runtime, labels=labels,
                network_config=primary if len(nics) == 1 else None,
                network_configs=nics if len(nics) > 1 else None,
                service_account=gcp.tpu.V2VmServiceAccountArgs(
                    email=args.service_account,
                    scopes=["https://www.googleapis.com/auth/cloud-platform"]),
                scheduling_config=gcp.tpu.V2VmSchedulingConfigArgs(spot=cap.spot or None),
                shielded_instance_config=gcp.tpu.V2VmShieldedInstanceConfigArgs(
                    enable_secure_boot=True),
                opts=child)
        self.register_outputs({"nodes": names, "accelerator_type": acc_type})


__all__ = ["TpuSlice", "TpuSliceArgs", "TpuVm", "TpuVmArgs", "accelerator_type",
           "reservation_affinity"]
