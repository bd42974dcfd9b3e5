"""EKS cluster rules of issue 20 (items 10 and 12): cluster admins through access entries, and
no private-only endpoint the same `pulumi up` cannot reach. Each test names its reference."""

from __future__ import annotations

from typing import Any

import pytest

from fleet import validate_fleet
from tests.fleet.conftest import only

CI_ROLE = "arn:aws:iam::123456789012:role/ci-deployer"


def eks(spec: dict[str, Any]) -> dict[str, Any]:
    cluster: dict[str, Any] = spec["clusters"][1]
    assert cluster["cloud"] == "aws"
    return cluster


# -- 10: admins --------------------------------------------------------------------------------
def test_admins_are_iam_role_and_user_arns(spec: dict[str, Any]) -> None:
    """An EKS access entry names an IAM role or user (principalArn); EKS user guide,
    https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html."""
    eks(spec)["admins"] = [CI_ROLE, "arn:aws:iam::123456789012:user/alice",
                           "arn:aws-us-gov:iam::123456789012:role/path/to/deployer"]
    fleet = validate_fleet(spec)
    assert fleet.cluster("eks").admins[0] == CI_ROLE
    assert not [w for w in fleet.warnings if w.where == "clusters 'eks'.admins"]


@pytest.mark.parametrize(("arn", "words"), [
    ("ci-deployer", "not an IAM role or user ARN"),
    ("arn:aws:iam::12345:role/x", "not an IAM role or user ARN"),
    ("arn:aws:iam::123456789012:group/admins", "not an IAM role or user ARN"),
    ("arn:aws:sts::123456789012:assumed-role/ci-deployer/session-1", "STS session"),
])
def test_bad_admin_arns_are_refused_with_the_fix(spec: dict[str, Any], arn: str,
                                                  words: str) -> None:
    eks(spec)["admins"] = [arn]
    p = only(spec, "clusters[1] 'eks'.admins")
    assert words in p.message
    if "assumed-role" in arn:  # the fix names the role the session belongs to
        assert CI_ROLE in p.hint
    else:
        assert "arn:aws:iam::" in p.hint


def test_no_admins_warns_that_ci_roles_will_be_refused(spec: dict[str, Any]) -> None:
    """Only the creating identity is admin (bootstrapClusterCreatorAdminPermissions, fixed at
    creation): EKS user guide, access-entries.html, "cluster creator" section."""
    fleet = validate_fleet(spec)
    (warning,) = [w for w in fleet.warnings if w.where == "clusters 'eks'.admins"]
    assert "CI role" in warning.message and "refused" in warning.message
    assert "admins:" in warning.hint and "AmazonEKSClusterAdminPolicy" in warning.hint


def test_admins_on_a_gke_cluster_are_refused(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["admins"] = [CI_ROLE]
    p = only(spec, "clusters 'gke'.admins")
    assert "GKE" in p.message and "remove `admins`" in p.hint


# -- 12: private endpoint ---------------------------------------------------------------------
def test_private_only_eks_endpoint_is_refused(spec: dict[str, Any]) -> None:
    """With `endpointPublicAccess: false` the API server is reachable only from the VPC
    (https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html, "Private access
    only"), which the same run creates: its Helm releases and Kueue objects could not be
    applied."""
    eks(spec)["private_endpoint"] = True
    p = only(spec, "clusters 'eks'.private_endpoint")
    assert "Helm releases" in p.message and "authorized_cidrs" in p.hint
