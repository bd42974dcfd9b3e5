"""`TpuSecondNetwork`: the second network of a GKE cluster's TPU v6e and tpu7x slices, and of
the Cloud TPU VMs of those generations (issue 27 item 8; which generations: the catalog's
support.yaml `second_network`).

One VPC per cluster with one subnet and an internal firewall rule, as Cluster Toolkit's
advanced v6e blueprint builds its `-net-1`; every such slice's node pools attach it as an
additional node network (gVNIC), so each TPU VM has the two NICs GKE's Ironwood page counts. Its
range is fixed (TPU_SECOND_CIDR), apart from the GPUDirect networks' (components/gcp/_network.py
gpudirect_cidrs), so a cluster may hold both, and apart from the Cloud TPU VMs' primary range
(components/gcp/_build.py TPU_VM_CIDR), so a TPU VM's two NICs never share a range; the TPU
VMs' own second network takes TPU_VM_SECOND_CIDR, apart from every cluster's. A Cloud TPU
VM (tpu.V2Vm) takes it as its second `networkConfigs` entry: the Cloud TPU API's Node has
`network_configs`, "Repeated network configurations for the TPU node ... used to specify
multiple networks configs", mutually exclusive with `network_config`
(https://cloud.google.com/php/docs/reference/cloud-tpu/latest/V2.Node, read 2026-11-27;
pulumi-gcp 10.2.0 tpu.V2Vm `network_configs`)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.gcp._network import ExtraNetwork
from fleet.catalog.support import load_support
from fleet.model import ResolvedPool
from fleet.names import tpu_second_network_names

TYPE = "accelfleet:gcp:TpuSecondNetwork"
TPU_SECOND_CIDR = "192.168.224.0/20"  # about 4,000 TPU VMs
# The Cloud TPU VMs' second network: a range of its own, so that no two subnets of the project
# share one (a GKE cluster's and the TPU VMs' second networks may be peered one day).
TPU_VM_SECOND_CIDR = "192.168.240.0/20"


def wants_second_network(pool: ResolvedPool) -> bool:
    """Whether a TPU pool (a GKE slice or a Cloud TPU VM) gets the second network."""
    tpu = pool.shape.tpu
    return tpu is not None and load_support().second_network_for(tpu.key) is not None


@dataclass(frozen=True)
class TpuSecondNetworkArgs:
    cluster: str
    project: str
    region: str
    mtu: int | None
    cidr: str = TPU_SECOND_CIDR


class TpuSecondNetwork(pulumi.ComponentResource):
    """The VPC, subnet and internal firewall rule of a cluster's TPU second network."""

    extra: ExtraNetwork

    def __init__(self, name: str, args: TpuSecondNetworkArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        vpc_name, subnet_name, rule = tpu_second_network_names(args.cluster)
        vpc = gcp.compute.Network(vpc_name, name=vpc_name, project=args.project,
                                  auto_create_subnetworks=False, mtu=args.mtu, opts=child)
        subnet = gcp.compute.Subnetwork(subnet_name, name=subnet_name, project=args.project,
                                        region=args.region, network=vpc.id,
                                        ip_cidr_range=args.cidr, opts=child)
        gcp.compute.Firewall(rule, name=rule, project=args.project, network=vpc.id,
                             direction="INGRESS", source_ranges=[args.cidr],
                             allows=[gcp.compute.FirewallAllowArgs(protocol=p)
                                     for p in ("tcp", "udp", "icmp")], opts=child)
        self.extra = ExtraNetwork(name="tpu-net-1", vpc=vpc.name, subnet=subnet.name,
                                  device_mode="NetDevice")
        self.register_outputs({"network": vpc.name, "subnet": subnet.name})
