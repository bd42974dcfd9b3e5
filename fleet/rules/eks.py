"""The rules of one EKS cluster that the cloud or the deploy would otherwise refuse late.

    admins            an EKS cluster built with access entries (authenticationMode API) admits
                      only the identity that created it unless the stack names others: a CI
                      role or a teammate is refused on every Kubernetes call (warning when empty;
                      refused on a GKE cluster, which has no access entries)
    private_endpoint  the same `pulumi up` that creates the cluster installs Helm releases and
                      Kueue objects through its endpoint; with no public endpoint that is a VPC
                      the program has just created and the deployer is not in (refused)

`fleet.rules.validate` calls `check_eks_cluster` for every cluster; it reports through the checker's
`add` and appends warnings to the list it is given.
"""

from __future__ import annotations

from fleet.errors import Problem, Where
from fleet.errors import Problems as Checks
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
