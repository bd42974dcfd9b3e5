"""Pure decisions for the AWS network and identities: zones, subnet ranges, ARNs, kubeconfig."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fleet.errors import InputError
from fleet.rules.network import ACCOUNT_ZONES, EKS_SUBNET_SPLIT_BITS, EKS_VPC_MAX_PREFIX

# EKS wants subnets in at least two Availability Zones for its control-plane interfaces (the
# rules count a system pool's nodes over as many: fleet.rules.network ACCOUNT_ZONES).
MIN_ZONES = ACCOUNT_ZONES
# The VPC range is cut in 8 blocks: one private block per zone, the last block holds the small
# public (NAT) subnets. Hence at most 7 zones, and a VPC of /24 or larger. fleet.rules.network
# decides it (and checks the ranges and zones before any cloud call).
_SPLIT_BITS = EKS_SUBNET_SPLIT_BITS
_MAX_PREFIX = EKS_VPC_MAX_PREFIX


@dataclass(frozen=True)
class ZoneSubnets:
    zone: str
    private_cidr: str
    public_cidr: str


@dataclass(frozen=True)
class AccountZones:
    """The Availability Zones the deploying account has in a region (the provider's
    availability-zones lookup: state available, no opt-in needed), names and AZ IDs in the
    order the lookup gives them, and the AZ IDs EKS refuses for its control plane there."""

    names: tuple[str, ...]
    zone_ids: tuple[str, ...]
    refused_ids: frozenset[str] = frozenset()
    # AZ IDs closed to new resources (catalog aws.yaml `offline_az_ids`): no node goes there
    offline_ids: frozenset[str] = frozenset()

    def zone_id(self, zone: str) -> str:
        return self.zone_ids[self.names.index(zone)]

    def control_plane_ok(self, zone: str) -> bool:
        """Whether EKS accepts a control-plane subnet in this zone of the account (and nodes
        may go there: the control plane's zones hold the system pool)."""
        return self.zone_id(zone) not in self.refused_ids | self.offline_ids


@dataclass(frozen=True)
class ClusterZones:
    """zones: every zone of the cluster's VPC (sorted); control_plane: those whose subnets the
    EKS control plane gets; system: where a system pool with no zones of its own goes. The
    last two are the account's first MIN_ZONES zones EKS accepts for its control plane, never
    the pools' zones: adding or removing a pool then never moves them (issue 27, class 3: the
    control plane's and a node group's `subnet_ids` replace what they hold)."""

    zones: list[str]
    control_plane: list[str]
    system: list[str]


def cluster_zones(region: str, pool_zones: Iterable[str], account: AccountZones
                  ) -> ClusterZones:
    """The zones of a cluster's VPC: every pool's zone, and the account's first MIN_ZONES zones
    EKS accepts (the control plane's and the system pool's). Never a zone guessed by letter."""
    if not account.names:
        raise InputError(
            f"the account lists no available Availability Zone in {region}",
            hint="check the provider's credentials and region (`aws ec2 "
            f"describe-availability-zones --region {region}`)")
    zones = list(dict.fromkeys(sorted(pool_zones)))
    missing = [z for z in zones if z not in account.names]
    if missing:
        raise InputError(
            f"zone {', '.join(missing)} is not an available Availability Zone of this account "
            f"(it has {', '.join(account.names)})",
            hint="name one of the account's zones in the pool's `zones` (zone letters map to "
            "different zones in each account of the oldest regions)")
    offline = [f"{z} ({account.zone_id(z)})" for z in zones
               if account.zone_id(z) in account.offline_ids]
    if offline:
        raise InputError(
            f"zone {', '.join(offline)} is closed to new resources: in this account the code "
            "maps to an AZ ID AWS no longer opens to new capacity (catalog aws.yaml "
            "`offline_az_ids`, with its sources)",
            hint="name another of the account's zones in the pool's `zones` ("
            + ", ".join(z for z in account.names
                        if account.zone_id(z) not in account.offline_ids) + ")")
    base = [z for z in account.names if account.control_plane_ok(z)][:MIN_ZONES]
    if len(base) < MIN_ZONES:
        raise InputError(
            f"{region} has fewer than {MIN_ZONES} Availability Zones EKS accepts for its "
            "control plane in this account", hint="deploy the cluster in another region")
    return ClusterZones(zones=sorted({*zones, *base}), control_plane=sorted(base),
                        system=list(base))


def zone_slot(zone: str) -> int:
    """The block a zone's subnets take: its letter's place (a -> 0, b -> 1, ...), so a zone
    keeps its ranges whatever zones join or leave the cluster (issue 27, class 3: `cidrBlock`
    forces a subnet's replacement, and with it every node group in it). The letter names the
    zone in the account that deploys, as the pools' `zones` do."""
    letter = zone[-1:]
    if not ("a" <= letter <= "z") or not zone[:-1] or not zone[-2:-1].isdigit():
        raise InputError(f"{zone!r} is not an Availability Zone name (region and a letter, "
                         "e.g. us-east-1a)", hint="name the pool's zones as the account lists "
                         "them (`aws ec2 describe-availability-zones`)")
    return ord(letter) - ord("a")


def subnet_layout(vpc_cidr: str, zones: list[str]) -> list[ZoneSubnets]:
    """A private and a public subnet range per zone, carved from the VPC range: the block of
    the zone's letter (zone_slot), never its place among the cluster's zones."""
    net = ipaddress.ip_network(vpc_cidr)
    if net.version != 4 or net.prefixlen > _MAX_PREFIX:
        raise InputError(
            f"VPC range {vpc_cidr} is too small for an EKS network",
            hint=f"give clusters[].network.cidr an IPv4 range of /{_MAX_PREFIX} or larger, "
            "e.g. 10.20.0.0/16",
        )
    blocks = list(net.subnets(prefixlen_diff=_SPLIT_BITS))
    public = list(blocks[-1].subnets(prefixlen_diff=_SPLIT_BITS))
    out = []
    for zone in zones:
        slot = zone_slot(zone)
        if slot >= len(blocks) - 1:
            raise InputError(
                f"zone {zone} has no subnet block in the VPC layout (zones a to "
                f"{chr(ord('a') + len(blocks) - 2)} each have one)",
                hint="use a zone of an earlier letter")
        out.append(ZoneSubnets(zone, str(blocks[slot]), str(public[slot])))
    return out


def partition(region: str) -> str:
    """The AWS partition of a region (ARNs and managed policy names depend on it)."""
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    if region.startswith("cn-"):
        return "aws-cn"
    return "aws"


def managed_policy_arn(region: str, name: str) -> str:
    return f"arn:{partition(region)}:iam::aws:policy/{name}"


def assume_role_policy(service: str) -> str:
    """A trust policy letting one AWS service principal assume the role."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": service},
            "Action": "sts:AssumeRole",
        }],
    })


def kms_use_policy(key_arn: str) -> str:
    """What the EKS cluster role needs on its envelope-encryption key, and nothing more."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"],
            "Resource": key_arn,
        }],
    })


def token_argv(cluster_name: str, region: str) -> list[str]:
    """`aws` arguments that mint a short-lived cluster token (kubeconfig exec plugin)."""
    return ["eks", "get-token", "--cluster-name", cluster_name, "--region", region,
            "--output", "json"]


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig (JSON, which is YAML) whose user runs `aws eks get-token` as an argv list."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name,
                      "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": token_argv(cluster_name, region),
            "interactiveMode": "Never",
        }}}],
        "contexts": [{"name": cluster_name,
                      "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
    }
    return json.dumps(doc, indent=2)
