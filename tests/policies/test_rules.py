"""Every policy has a passing and a failing resource; the example plan passes them all; the
CrossGuard pack wraps the same functions (when pulumi-policy is installed)."""

from __future__ import annotations

import copy
import importlib
import json
from typing import Any

import pytest

from policies import rules
from policies.rules import (
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    GKE_CLUSTER,
    GKE_POOL,
    LAUNCH_TEMPLATE,
    POLICIES,
    TPU_VM,
    check_plan,
    check_resource,
)

GOOD_POOL: dict[str, Any] = {
    "name": "h100", "networkConfig": {"enablePrivateNodes": True},
    "nodeConfig": {
        "machineType": "a3-highgpu-8g", "serviceAccount": "<computed>",
        "guestAccelerators": [{"count": 8, "type": "nvidia-h100-80gb"}],
        "labels": {"accelfleet.io/team": "research"},
        "shieldedInstanceConfig": {"enableSecureBoot": True},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"}}}
GOOD_GKE: dict[str, Any] = {
    "enableShieldedNodes": True,
    "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": False},
    "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]},
    "nodeConfig": {"serviceAccount": "nodes@p.iam.gserviceaccount.com"}}
GOOD_VM: dict[str, Any] = {
    "serviceAccount": {"email": "<computed>"}, "shieldedInstanceConfig":
    {"enableSecureBoot": True}, "networkConfig": {"enableExternalIps": False},
    "labels": {"accelfleet-team": "ml"}}
GOOD_LT: dict[str, Any] = {
    "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
    "blockDeviceMappings": [{"ebs": {"encrypted": "true"}}]}
GOOD_EKS: dict[str, Any] = {
    "vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]},
    "encryptionConfig": {"resources": ["secrets"]}}
GOOD_NG: dict[str, Any] = {
    "amiType": "AL2023_x86_64_NVIDIA", "instanceTypes": ["p5.48xlarge"],
    "labels": {"accelfleet.io/team": "research"}, "launchTemplate": {"id": "lt-1"}}


def broken(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `base` with `path` set to `value` (None removes it)."""
    out = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return out


# (policy, resource type, passing inputs, failing inputs, words in the failure)
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    ("no-default-service-account", GKE_POOL, GOOD_POOL,
     broken(GOOD_POOL, "nodeConfig.serviceAccount", "default"), "default compute"),
    ("no-default-service-account", GKE_POOL, GOOD_POOL,
     broken(GOOD_POOL, "nodeConfig.serviceAccount",
            "123456789-compute@developer.gserviceaccount.com"), "default compute"),
    ("no-default-service-account", TPU_VM, GOOD_VM,
     broken(GOOD_VM, "serviceAccount", None), "not set"),
    ("no-default-service-account", GKE_CLUSTER, GOOD_GKE,
     broken(GOOD_GKE, "nodeConfig.serviceAccount", None), "not set"),
    ("secure-boot", GKE_POOL, GOOD_POOL,
     broken(GOOD_POOL, "nodeConfig.shieldedInstanceConfig.enableSecureBoot", False),
     "secure boot"),
    ("secure-boot", TPU_VM, GOOD_VM, broken(GOOD_VM, "shieldedInstanceConfig", None),
     "not set"),
    ("secure-boot", GKE_CLUSTER, GOOD_GKE, broken(GOOD_GKE, "enableShieldedNodes", False),
     "shielded"),
    ("imdsv2-required", LAUNCH_TEMPLATE, GOOD_LT,
     broken(GOOD_LT, "metadataOptions.httpTokens", "optional"), "IMDSv2"),
    ("imdsv2-required", LAUNCH_TEMPLATE, GOOD_LT,
     broken(GOOD_LT, "metadataOptions.httpPutResponseHopLimit", 2), "HopLimit"),
    ("imdsv2-required", EKS_NODE_GROUP, GOOD_NG, broken(GOOD_NG, "launchTemplate", None),
     "launch template"),
    ("private-nodes", GKE_CLUSTER, GOOD_GKE,
     broken(GOOD_GKE, "privateClusterConfig.enablePrivateNodes", False), "public IPs"),
    ("private-nodes", GKE_POOL, GOOD_POOL,
     broken(GOOD_POOL, "networkConfig.enablePrivateNodes", False), "public IPs"),
    ("private-nodes", TPU_VM, GOOD_VM, broken(GOOD_VM, "networkConfig.enableExternalIps", True),
     "public"),
    ("private-nodes", LAUNCH_TEMPLATE, GOOD_LT,
     broken(GOOD_LT, "networkInterfaces", [{"associatePublicIpAddress": "true"}]), "public"),
    ("public-endpoint-authorized-cidrs", GKE_CLUSTER, GOOD_GKE,
     broken(GOOD_GKE, "masterAuthorizedNetworksConfig", None), "anyone"),
    ("public-endpoint-authorized-cidrs", EKS_CLUSTER, GOOD_EKS,
     broken(GOOD_EKS, "vpcConfig.publicAccessCidrs", None), "anyone"),
    ("public-endpoint-authorized-cidrs", EKS_CLUSTER, GOOD_EKS,
     broken(GOOD_EKS, "vpcConfig.publicAccessCidrs", ["0.0.0.0/0"]), "open to all"),
    ("accelerator-pool-team-label", GKE_POOL, GOOD_POOL,
     broken(GOOD_POOL, "nodeConfig.labels", {"accelfleet.io/pool": "h100"}), "team"),
    ("accelerator-pool-team-label", EKS_NODE_GROUP, GOOD_NG, broken(GOOD_NG, "labels", {}),
     "team"),
    ("accelerator-pool-team-label", TPU_VM, GOOD_VM, broken(GOOD_VM, "labels", None),
     "accelfleet-team"),
    ("encrypted-node-disks", LAUNCH_TEMPLATE, GOOD_LT,
     broken(GOOD_LT, "blockDeviceMappings", [{"ebs": {"encrypted": "false"}}]), "encrypt"),
    ("gke-metadata-server", GKE_POOL, GOOD_POOL,
     broken(GOOD_POOL, "nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA"),
     "GKE_METADATA"),
    ("eks-secrets-encryption", EKS_CLUSTER, GOOD_EKS, broken(GOOD_EKS, "encryptionConfig", None),
     "secrets"),
]


@pytest.mark.parametrize(("policy", "type_", "good", "bad", "words"), CASES,
                         ids=[f"{c[0]}-{c[1].rsplit(':', 1)[-1]}-{i}"
                              for i, c in enumerate(CASES)])
def test_policy_passes_and_fails(policy: str, type_: str, good: dict[str, Any],
                                 bad: dict[str, Any], words: str) -> None:
    assert check_resource(type_, good) == []
    found = check_resource(type_, bad)
    assert [name for name, _ in found] == [policy], found
    assert words in found[0][1]


def test_every_policy_has_a_case() -> None:
    assert {p.name for p in POLICIES} == {c[0] for c in CASES}
    assert len({p.name for p in POLICIES}) == len(POLICIES)


def test_a_cpu_pool_needs_no_team_label() -> None:
    cpu = broken(broken(GOOD_POOL, "nodeConfig.guestAccelerators", None),
                 "nodeConfig.labels", {})
    cpu["nodeConfig"]["machineType"] = "e2-standard-4"
    assert check_resource(GKE_POOL, cpu) == []


def test_computed_values_never_violate() -> None:
    assert check_resource(LAUNCH_TEMPLATE, {"metadataOptions": {"httpTokens": "<computed>"},
                                            "blockDeviceMappings": []}) == []
    assert check_resource(EKS_CLUSTER, {"vpcConfig": {"publicAccessCidrs": "<computed>"},
                                        "encryptionConfig": "<computed>"}) == []


def test_example_plan_passes_and_a_broken_one_names_the_resource() -> None:
    from pathlib import Path

    snapshot = Path(__file__).parent.parent / "components" / "snapshots" / "example_plan.json"
    plan = json.loads(snapshot.read_text())
    assert check_plan(plan) == []
    bad = copy.deepcopy(plan)
    pool = next(r for r in bad["resources"] if r["name"] == "h100-train-pool")
    pool["inputs"]["nodeConfig"]["serviceAccount"] = "default"
    found = check_plan(bad)
    assert [(v.policy, v.resource, v.pool) for v in found] == [
        ("no-default-service-account", "gcp:container/nodePool:NodePool::h100-train-pool",
         "h100-train")]
    assert found[0].render().startswith("gcp:container/nodePool:NodePool::h100-train-pool "
                                        "(pool h100-train): ")


def test_pack_wraps_every_policy() -> None:
    """The CrossGuard pack, for real, where pulumi-policy is installed (the `policy` extra)."""
    pytest.importorskip("pulumi_policy", reason="pulumi-policy is not installed: "
                        "`pip install -e '.[policy]'` (kept out of dev: it pins protobuf 5.29)")
    from pulumi_policy import ResourceValidationArgs
    from pulumi_policy.proxy import unknown_checking_proxy

    pack = importlib.import_module("policies.__main__")
    wrapped = {p.name: pack.wrap(p) for p in POLICIES}
    assert set(wrapped) == {p.name for p in POLICIES}
    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown string
    props = unknown_checking_proxy(broken(GOOD_LT, "metadataOptions.httpTokens", unknown))
    assert pack.plain(props)["metadataOptions"]["httpTokens"] == rules.COMPUTED
    seen: list[str] = []
    bad = unknown_checking_proxy(broken(GOOD_LT, "metadataOptions.httpTokens", "optional"))
    args = ResourceValidationArgs(LAUNCH_TEMPLATE, bad, "urn:x", "lt", None, None, {}, {})
    wrapped["imdsv2-required"].validate(args, lambda message, urn: seen.append(message))
    assert seen and "IMDSv2" in seen[0]
