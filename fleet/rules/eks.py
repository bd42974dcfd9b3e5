"""The rules of one EKS cluster that the cloud or the deploy would otherwise refuse late.

    admins            an EKS cluster built with access entries (authenticationMode API) admits
                      only the identity that created it unless the stack names others: a CI
                      role or a teammate is refused on every Kubernetes call (warning when empty;
                      refused on a GKE cluster, which has no access entries)
    private_endpoint  the same `pulumi up` that creates the cluster installs Helm releases and
                      Kueue objects through its endpoint; with no public endpoint that is a VPC
                      the program has just created and the deployer is not in (refused)

    vpc-cni pin   the catalog's vpc-cni for the cluster's Kubernetes version against AWS's
                  published "Amazon VPC CNI versions" table (catalog aws.yaml
                  `vpc_cni_published`): warned when the table read has no row for the version
                  (unverified) or lists other versions for it; EKS itself refuses an add-on
                  version it does not offer for the cluster's version, at `pulumi up`

`fleet.rules.validate` calls `check_eks_cluster` for every cluster; it reports through the checker's
`add` and appends warnings to the list it is given.
"""

from __future__ import annotations

from fleet.catalog import Catalog, EksAddonPins
from fleet.errors import Problem, Where
from fleet.errors import Problems as Checks
from fleet.model import ResolvedPool
from fleet.spec.fields import Cluster

# https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html (read 2026-11-24):
# access entries with the AmazonEKSClusterAdminPolicy access policy, cluster scope.
ADMIN_POLICY_NAME = "AmazonEKSClusterAdminPolicy"


def check_eks_cluster(checks: Checks, cluster: Cluster, warnings: list[Problem]) -> None:
    at = Where("clusters", name=cluster.name)
    if cluster.cloud != "aws":
        if cluster.admins:
            checks.add(at.dot("admins"), "`admins` names EKS access entries; a GKE cluster "
                       "grants access through IAM on its project",
                       "remove `admins`; grant roles/container.admin (or narrower) on the "
                       "project to the people and CI service accounts instead")
        return
    if not cluster.admins:
        warnings.append(Problem(
            at.dot("admins"),
            "no cluster admins: only the identity that runs the first `pulumi up` can use "
            "the cluster's Kubernetes API; a CI role or a teammate running `pulumi up`, "
            "`accelfleet up` or `smoke run` is refused on every Kubernetes call",
            "list the IAM roles and users to make admins, e.g. `admins: "
            "[arn:aws:iam::123456789012:role/ci-deployer]` (each gets an EKS access entry "
            f"with {ADMIN_POLICY_NAME})"))
    if cluster.private_endpoint:
        checks.add(
            at.dot("private_endpoint"),
            "an EKS cluster with no public endpoint cannot be configured by the `pulumi up` "
            "that creates it: its Helm releases (device plugins, JobSet, Kueue) and Kueue "
            "objects go through the endpoint, which is reachable only from inside the new "
            "VPC the same run creates",
            "keep the public endpoint and restrict it with `authorized_cidrs` (your runner's "
            "egress range); the endpoint's private access stays on for the nodes")


def check_vpc_cni(cluster: Cluster, addons: EksAddonPins, warnings: list[Problem]) -> None:
    """The pinned vpc-cni of an EKS cluster's Kubernetes version (its own, else the catalog's
    default) against what AWS's table listed for that version (module docstring)."""
    if cluster.cloud != "aws":
        return
    version = cluster.kubernetes_version or addons.default_kubernetes_version
    pin = addons.versions.get(version, {}).get("vpc-cni")
    if pin is None:  # a version without pins is refused by the checker itself
        return
    listed = addons.vpc_cni_listed(version)
    at = Where("clusters", name=cluster.name, field="kubernetes_version")
    check = (f"run `aws eks describe-addon-versions --addon-name vpc-cni --kubernetes-version "
             f"{version}` and pin a version it lists (aws.yaml `eks_addons`); EKS refuses one "
             "it does not offer")
    if listed is None:
        warnings.append(Problem(
            at, f"vpc-cni {pin}, pinned for Kubernetes {version}, is not verified: AWS's table "
            f"of VPC CNI versions as read has no row for {version} (aws.yaml "
            "`vpc_cni_published`)", check))
    elif pin not in listed:
        warnings.append(Problem(
            at, f"vpc-cni {pin}, pinned for Kubernetes {version}, is not a version AWS's "
            f"table of VPC CNI versions lists for {version} ({', '.join(listed)})", check))


def check_offline_zones(checks: Checks, pool: ResolvedPool, catalog: Catalog,
                        warnings: list[Problem]) -> None:
    """A pool of an EKS cluster in a zone closed to new resources (catalog aws.yaml
    `offline_az_ids`, with its sources). A zone code names the same AZ ID in every account of
    a Region mapped uniformly (letter n is AZ ID n), where a closed zone is refused here; in
    the oldest Regions each account maps codes its own way (zones.yaml
    `independently_mapped_regions`), so validate cannot know and warns, and `pulumi up`,
    which reads the account's mapping, refuses it (components/aws/_layout.py)."""
    addons = catalog.eks_addons
    closed = addons.offline_az_ids.get(pool.region, ())
    if pool.cloud != "aws" or not closed or not pool.spec.zones:
        return
    base = (Where("clusters", name=pool.cluster.name, field="system_pool")
            if pool.system and pool.cluster is not None else Where("pools", name=pool.name))
    at = base.dot("zones")
    if pool.region in catalog.zone_offers.aws_independent:
        warnings.append(Problem(
            at, f"{pool.region} has an Availability Zone closed to new resources "
            f"({', '.join(closed)}); its zone codes map to AZ IDs per account, so whether "
            f"{', '.join(pool.spec.zones)} is that zone depends on the account that deploys: "
            "`pulumi up` refuses a zone that is (catalog aws.yaml `offline_az_ids`)",
            f"check the ZoneId of each zone: aws ec2 describe-availability-zones --region "
            f"{pool.region}"))
        return
    numbers = {int(z.rsplit("-az", 1)[1]): z for z in closed}
    for i, zone in enumerate(pool.spec.zones):
        letter = zone[-1:]
        az = numbers.get(ord(letter) - ord("a") + 1) if "a" <= letter <= "z" else None
        if az is not None:
            checks.add(base.dot(f"zones[{i}]"),
                       f"{zone} is AZ ID {az}, closed to new resources (catalog aws.yaml "
                       f"`offline_az_ids`: {addons.offline_az_ids_source})",
                       f"use another zone of {pool.region}")
