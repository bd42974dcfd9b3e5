"""Issue 27 item 5: the identity running `pulumi up` is an EKS admin through an access entry of
ours, never EKS's bootstrap entry, and gets none when the stack lists it already (a second
entry for the same principal is 409 ResourceInUseException:
terraform-aws-modules/terraform-aws-eks#3293, #2969; the module's v20 sets
bootstrap_cluster_creator_admin_permissions false and adds the caller's
aws_iam_session_context issuer_arn as an entry)."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from components.aws import build_aws_cluster
from fleet import validate_fleet
from fleet.catalog import load_catalog
from tests.components.test_aws_components import SPEC, _all, _Mocks

ROLE = "arn:aws:iam::123456789012:role/ci-deployer"
# what STS answers a role's session (the caller identity) and what IAM resolves it to
SESSION = "arn:aws:sts::123456789012:assumed-role/ci-deployer/pulumi-1700000000"


class _Caller(_Mocks):
    def call(self, args: pulumi.runtime.MockCallArgs
             ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": "123456789012", "arn": SESSION, "userId": "AROAEXAMPLE:s",
                    "id": "123456789012"}, []
        if args.token == "aws:iam/getSessionContext:getSessionContext":
            assert args.args["arn"] == SESSION
            return {"arn": SESSION, "issuerArn": ROLE, "issuerId": "AROAEXAMPLE",
                    "issuerName": "ci-deployer", "sessionName": "pulumi-1700000000"}, []
        return super().call(args)


def _entries(admins: list[str]) -> tuple[list[str], dict[str, Any]]:
    spec = copy.deepcopy(SPEC)
    spec["clusters"][0]["admins"] = admins
    mocks = _Caller()
    pulumi.runtime.set_mocks(mocks, preview=False)
    fleet = validate_fleet(spec)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        c = fleet.spec.clusters[0]
        built = build_aws_cluster(c, fleet.pools_in(c.name), fleet, load_catalog(),
                                  pulumi.ResourceOptions())
        return built.endpoint

    run()
    entries = [r.inputs["principalArn"] for r in _all(mocks.resources,
                                                      "aws:eks/accessEntry:AccessEntry")]
    (cluster,) = _all(mocks.resources, "aws:eks/cluster:Cluster")
    return entries, dict(cluster.inputs)


@pytest.mark.parametrize("admins", [[], ["arn:aws:iam::123456789012:user/alice"]])
def test_the_caller_gets_an_entry_of_ours(admins: list[str]) -> None:
    entries, cluster = _entries(admins)
    assert cluster["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
    assert sorted(entries) == sorted([*admins, ROLE])  # its role, not the session


def test_a_listed_caller_gets_one_entry() -> None:
    entries, cluster = _entries([ROLE, "arn:aws:iam::123456789012:user/alice"])
    assert cluster["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
    assert entries.count(ROLE) == 1 and len(entries) == 2
