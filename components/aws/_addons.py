"""EKS managed add-ons (vpc-cni, kube-proxy, CoreDNS) at the catalog's pinned versions.

Two phases, as terraform-aws-modules/terraform-aws-eks does (`before_compute`): the add-ons
nodes need to become Ready go in right after the control plane and every node group waits for
them; the rest (CoreDNS, a Deployment that needs nodes to run on) wait for the node groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from fleet.labels import CLUSTER_TAG

# EKS installs its own (self-managed) vpc-cni, kube-proxy and CoreDNS with a new cluster; the
# managed add-on takes them over and owns their configuration from then on.
RESOLVE_CONFLICTS = "OVERWRITE"


def managed_addons(
    cluster: str,
    cluster_name: pulumi.Input[str],
    pins: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    depends_on: Sequence[pulumi.Resource] = (),
) -> dict[str, aws.eks.Addon]:
    """One `aws.eks.Addon` per pinned add-on (name -> version), named `<cluster>-<add-on>`."""
    return {
        name: aws.eks.Addon(
            f"{cluster}-{name}",
            cluster_name=cluster_name,
            addon_name=name,
            addon_version=version,
            resolve_conflicts_on_create=RESOLVE_CONFLICTS,
            resolve_conflicts_on_update=RESOLVE_CONFLICTS,
            tags={CLUSTER_TAG: cluster},
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(depends_on=list(depends_on))),
        )
        for name, version in sorted(pins.items())
    }
