"""Issue 27, class 3: `plan --diff` can only show a replacement the table knows. Every resource
type any plan creates is in components/engine/data/replacements.yaml, with its replacing fields
and their source (repository, commit, file: the Terraform provider's ForceNew fields for the
bridged gcp/aws providers, pulumi-kubernetes' own lists for Kubernetes), or listed under
`unread` with the reason it is not read (the diff cannot say whether a change replaces it).
A type in neither fails here, and so does an unread type without a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from components.engine.diff import TABLE, replacement_table
from tests.plans import planned

ROOT = Path(__file__).resolve().parents[2]
STACKS = ["stacks/Pulumi.example.yaml", "tests/components/fixtures/Pulumi.gcpcapacity.yaml",
          "tests/components/fixtures/Pulumi.gcptaints.yaml",
          "tests/components/fixtures/Pulumi.gcptest.yaml"]


def _table() -> dict[str, object]:
    data = YAML(typ="safe").load(TABLE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("stack", STACKS)
def test_every_type_a_plan_creates_is_in_the_table(stack: str) -> None:
    data = _table()
    known = set(data["types"]) | set(data.get("unread") or {})  # type: ignore[call-overload]
    made = {r.type for r in planned(ROOT / stack).resources if r.custom}
    assert sorted(made - known) == []


# How many plan types stay unread (2026-11-27: none). It may only go down.
MAX_UNREAD = 0


def test_each_type_is_read_or_unread_not_both_and_each_read_one_cites_a_commit() -> None:
    data = _table()
    types, unread = data["types"], data.get("unread") or {}
    assert isinstance(types, dict) and isinstance(unread, dict)
    assert not set(types) & set(unread)
    for type_, entry in types.items():
        src = entry["source"]
        # bridged providers: the Terraform provider's source; Kubernetes: pulumi-kubernetes'
        expected = ("pulumi/pulumi-kubernetes" if type_.startswith(("kubernetes:",
                                                                      "pulumi:providers:k"))
                    else "pulumi/pulumi-aws" if type_ == "pulumi:providers:aws"
                    else "hashicorp/terraform-provider-")
        assert src["repo"].startswith(expected), type_
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), type_
        assert src["files"], type_
    rules = replacement_table()
    assert any(r.path == "cidrBlock" for r in rules["aws:ec2/subnet:Subnet"])


def test_an_unread_type_says_why_and_few_stay_unread() -> None:
    unread = _table().get("unread") or {}
    assert isinstance(unread, dict)
    for type_, why in unread.items():
        # a reason a reader can act on: what source, and why it was not read
        assert isinstance(why, str) and len(why.split()) >= 8, type_
    assert len(unread) <= MAX_UNREAD, sorted(unread)


def test_every_kubernetes_object_is_replaced_on_a_new_name_or_namespace() -> None:
    """pulumi-kubernetes replaces any object whose .metadata.name or .metadata.namespace
    changes (provider/pkg/provider/diff.go, metadataForceNewProperties); a Helm release on
    its .name or .namespace (helm_release.go)."""
    table = replacement_table()
    for type_, rules in table.items():
        if not type_.startswith("kubernetes:"):
            continue
        paths = {r.path for r in rules}
        want = {"name", "namespace"} if type_ == "kubernetes:helm.sh/v3:Release" else \
            {"metadata.name", "metadata.namespace"}
        assert want <= paths, type_


@pytest.mark.parametrize(("type_", "path", "replaces"), [
    ("kubernetes:apps/v1:DaemonSet", "spec.selector.matchLabels.k8s-app", True),
    ("kubernetes:apps/v1:DaemonSet", "spec.template.spec.containers[0].image", False),
    ("kubernetes:apps/v1:Deployment", "spec.replicas", False),
    ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "roleRef.name", True),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "rules[0].verbs", False),
    ("kubernetes:core/v1:ConfigMap", "data.inventory.json", True),
    ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "spec.cohortName", False),
    ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "metadata.name", True),
    ("kubernetes:helm.sh/v3:Release", "version", False),
    ("kubernetes:helm.sh/v3:Release", "namespace", True),
    ("aws:ec2/launchTemplate:LaunchTemplate", "blockDeviceMappings[0].ebs.volumeSize", False),
    ("aws:ec2/securityGroup:SecurityGroup", "description", True),
    ("aws:iam/role:Role", "assumeRolePolicy", False),
    ("aws:iam/rolePolicy:RolePolicy", "role", True),
    ("aws:ec2/natGateway:NatGateway", "subnetId", True),
    ("aws:ec2/routeTable:RouteTable", "routes[0].natGatewayId", False),
    ("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "accessScope.type", True),
    ("gcp:compute/resourcePolicy:ResourcePolicy", "workloadPolicy.acceleratorTopology", True),
    # the gate controller's own (issue 35): a PriorityClass's value cannot be updated (the API
    # server refuses it), a PodDisruptionBudget's spec can (policy/v1, unlike v1beta1)
    ("kubernetes:scheduling.k8s.io/v1:PriorityClass", "value", True),
    ("kubernetes:scheduling.k8s.io/v1:PriorityClass", "description", False),
    ("kubernetes:policy/v1:PodDisruptionBudget", "spec.maxUnavailable", False),
    ("kubernetes:policy/v1:PodDisruptionBudget", "metadata.name", True),
])
def test_read_rows(type_: str, path: str, replaces: bool) -> None:
    from components.engine.diff import rule_for

    assert (rule_for(type_, path, "a", "b") is not None) is replaces


def test_eks_envelope_encryption_replaces_only_when_removed() -> None:
    """terraform-provider-aws cluster.go CustomizeDiff: ForceNewIfChange on encryption_config
    from one block to none."""
    from components.engine.diff import rule_for

    t, block = "aws:eks/cluster:Cluster", {"resources": ["secrets"]}
    assert rule_for(t, "encryptionConfig", block, None) is not None
    assert rule_for(t, "encryptionConfig", None, block) is None
    assert rule_for(t, "encryptionConfig.resources", ["secrets"], ["secrets", "x"]) is None


def test_a_gke_clusters_node_config_replaces_the_cluster() -> None:
    """The cluster's node_config is the node pool's schemaNodeConfig (resource_container_
    cluster.go): its ForceNew fields replace the cluster, every node pool with it."""
    from components.engine.diff import rule_for

    t = "gcp:container/cluster:Cluster"
    assert rule_for(t, "nodeConfig.serviceAccount", "a@x", "b@x") is not None
    assert rule_for(t, "nodeConfig.oauthScopes", ["a"], ["b"]) is not None
    assert rule_for(t, "privateClusterConfig.masterIpv4CidrBlock", "a", "b") is not None
    assert rule_for(t, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA", "x") is None


def test_a_security_group_rule_is_replaced_when_its_source_kind_changes() -> None:
    """terraform-provider-aws ModifyPlan: from a CIDR to a referenced group replaces; a new
    CIDR is modified in place."""
    from components.engine.diff import rule_for

    t = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    assert rule_for(t, "cidrIpv4", "10.0.0.0/8", None) is not None
    assert rule_for(t, "referencedSecurityGroupId", None, "sg-1") is not None
    assert rule_for(t, "cidrIpv4", "10.0.0.0/8", "10.1.0.0/16") is None


def _leaves(value: object, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [p for v in value for p in _leaves(v, path)]
    return [path]


def test_rule_paths_spell_the_inputs_as_the_plan_records_them() -> None:
    """A rule key that differs from a recorded input path only in case, separators or a
    plural `s` (guest_accelerator -> guestAccelerators) would never match: a misspelling."""
    import json

    def norm(p: str) -> str:
        return re.sub(r"[^a-z0-9.]", "", p.lower()).rstrip("s")

    plan = json.loads((ROOT / "tests/components/snapshots/example_plan.json").read_text())
    table = replacement_table()
    wrong = set()
    for r in plan["resources"]:
        for leaf in _leaves(r["inputs"]):
            parts = leaf.split(".")
            prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
            for rule in table.get(r["type"], ()):
                wrong |= {(r["type"], p, rule.path) for p in prefixes
                          if p != rule.path and norm(p) == norm(rule.path)}
    assert sorted(wrong) == []
