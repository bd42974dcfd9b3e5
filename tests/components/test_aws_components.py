"""AWS components under Pulumi's mocks: every recorded input the issue names, per pool."""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi
import pytest

from components.aws import build_aws_cluster, efa_network_interfaces
from components.aws._layout import kubeconfig, subnet_layout, token_argv
from components.k8s import JOBSET, KUEUE
from fleet import validate_fleet
from fleet.catalog import load_catalog
from fleet.errors import CatalogError, InputError, SpecError
from tests.components.aws_zones import zones_answer

CLUSTER_SG = "sg-cluster0123"

SPEC: dict[str, Any] = {
    "clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "eks", "cloud": "aws", "kubernetes_version": "1.33",
                  "authorized_cidrs": ["203.0.113.0/24"], "network": {"cidr": "10.20.0.0/16"}}],
    "teams": [{"name": "research"}, {"name": "vision"}],
    "pools": [
        {"name": "p5", "cluster": "eks", "team": "research", "accelerator": "p5.48xlarge",
         "nodes": 2, "zone": "us-east-1a", "labels": {"example.com/owner": "ml"}},
        {"name": "g6", "cluster": "eks", "team": "vision", "accelerator": "g6.12xlarge",
         "nodes": 1, "autoscaling": {"min_nodes": 0, "max_nodes": 4},
         "zones": ["us-east-1a", "us-east-1b"], "placement": "none", "capacity": "spot",
         "fabric": "off",  # g6.12xlarge has EFA; this pool spans two zones, so without it
         "ami": "bottlerocket", "disk_size_gb": 300,
         "taints": [{"key": "example.com/ci", "value": "yes", "effect": "NoExecute"}]},
    ],
}


class _Mocks(pulumi.runtime.Mocks):
    """Echo inputs as outputs, plus the few outputs a real provider would compute."""

    def __init__(self) -> None:
        self.resources: list[Any] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        outputs = dict(args.inputs)
        if args.typ.startswith("aws:"):
            outputs.setdefault("arn", f"arn:aws:mock:::{args.name}")
        if args.typ == "aws:eks/cluster:Cluster":
            outputs["vpcConfig"] = {**outputs["vpcConfig"],
                                    "clusterSecurityGroupId": CLUSTER_SG}
            outputs["endpoint"] = "https://EXAMPLE.gr7.us-east-1.eks.amazonaws.com"
            outputs["certificateAuthority"] = {"data": "Q0EtREFUQQ=="}
            outputs["identities"] = [{"oidcs": [{"issuer": "https://oidc.eks.example/id/X"}]}]
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs["latestVersion"] = 3
        if args.typ == "aws:ec2/placementGroup:PlacementGroup":
            outputs["name"] = f"{args.name}-pg"
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs
             ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return zones_answer(args) or {}, []  # the account's zones (tests/components/aws_zones)


def _build(spec: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    fleet = validate_fleet(copy.deepcopy(spec))
    catalog = load_catalog()
    out: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        cluster = fleet.spec.clusters[0]
        built = build_aws_cluster(cluster, fleet.pools_in(cluster.name), fleet, catalog,
                                  pulumi.ResourceOptions())
        out["built"] = built
        return pulumi.Output.all(built.kubeconfig, built.endpoint).apply(
            lambda v: out.update(kubeconfig=v[0], endpoint=v[1]))

    run()
    return mocks.resources, out


@pytest.fixture(scope="module")
def built() -> tuple[list[Any], dict[str, Any]]:
    return _build(SPEC)


def _one(resources: list[Any], typ: str, name: str) -> dict[str, Any]:
    found = [r for r in resources if r.typ == typ and r.name == name]
    assert len(found) == 1, (typ, name, [r.name for r in resources if r.typ == typ])
    return dict(found[0].inputs)


def _all(resources: list[Any], typ: str) -> list[Any]:
    return [r for r in resources if r.typ == typ]


NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


# -- node groups ----------------------------------------------------------------------------
def test_node_group_ami_instance_type_and_scaling(built: Any) -> None:
    res, _ = built
    p5, g6 = _one(res, NG, "p5-ng"), _one(res, NG, "g6-ng")
    assert p5["amiType"] == "AL2023_x86_64_NVIDIA"
    assert g6["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"
    assert p5["instanceTypes"] == ["p5.48xlarge"]
    assert g6["instanceTypes"] == ["g6.12xlarge"]
    assert p5["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 2}
    assert g6["scalingConfig"] == {"minSize": 0, "desiredSize": 1, "maxSize": 4}
    assert p5["capacityType"] == "ON_DEMAND" and g6["capacityType"] == "SPOT"
    assert p5["clusterName"] == "eks" and p5["version"] == "1.33"
    assert p5["launchTemplate"] == {"id": "p5-lt-id", "version": "3"}


def test_node_group_labels_and_taints(built: Any) -> None:
    res, _ = built
    p5, g6 = _one(res, NG, "p5-ng"), _one(res, NG, "g6-ng")
    assert p5["labels"] == {
        "example.com/owner": "ml", "accelfleet.io/pool": "p5", "accelfleet.io/team": "research",
        "accelfleet.io/accelerator": "h100-80gb", "accelfleet.io/ami": "al2023",
        "vpc.amazonaws.com/efa.present": "true"}
    assert "vpc.amazonaws.com/efa.present" not in g6["labels"]
    assert g6["labels"]["accelfleet.io/ami"] == "bottlerocket"
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    # the gate's startup taint in the EKS API's spelling (docs/gate.md), on by default
    gate = {"key": "startup-taint.cluster-autoscaler.kubernetes.io/accelfleet-gate",
            "value": "unproven", "effect": "NO_SCHEDULE"}
    assert p5["taints"] == [gpu_taint, gate]
    assert g6["taints"] == [gpu_taint, gate,
                            {"key": "example.com/ci", "value": "yes", "effect": "NO_EXECUTE"}]


def test_node_groups_use_private_subnets_of_their_zones(built: Any) -> None:
    res, _ = built
    assert _one(res, NG, "p5-ng")["subnetIds"] == ["eks-private-us-east-1a-id"]
    assert _one(res, NG, "g6-ng")["subnetIds"] == ["eks-private-us-east-1a-id",
                                                   "eks-private-us-east-1b-id"]


def test_launch_template_imdsv2_and_encrypted_gp3(built: Any) -> None:
    res, _ = built
    for name, device, size in (("p5-lt", "/dev/xvda", 200), ("g6-lt", "/dev/xvdb", 300)):
        lt = _one(res, LT, name)
        assert lt["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required",
                                         "httpPutResponseHopLimit": 1}
        (disk,) = lt["blockDeviceMappings"]
        assert disk["deviceName"] == device
        assert disk["ebs"]["encrypted"] == "true"
        assert disk["ebs"]["volumeType"] == "gp3"
        assert disk["ebs"]["volumeSize"] == size
        assert "imageId" not in lt and "userData" not in lt  # EKS picks the NVIDIA AMI


def test_p5_launch_template_has_32_efa_interfaces(built: Any) -> None:
    res, _ = built
    nics = _one(res, LT, "p5-lt")["networkInterfaces"]
    assert len(nics) == 32
    assert [n["networkCardIndex"] for n in nics] == list(range(32))
    assert nics[0]["interfaceType"] == "efa" and nics[0]["deviceIndex"] == 0
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    assert {n["deviceIndex"] for n in nics[1:]} == {1}
    for nic in nics:
        assert nic["securityGroups"] == ["eks-efa-id", CLUSTER_SG]


def test_p5_in_cluster_placement_group_g6_not(built: Any) -> None:
    res, _ = built
    (pg,) = _all(res, "aws:ec2/placementGroup:PlacementGroup")
    assert pg.name == "eks-p5" and pg.inputs["strategy"] == "cluster"
    assert _one(res, LT, "p5-lt")["placement"] == {"groupName": "eks-p5-pg"}
    g6 = _one(res, LT, "g6-lt")
    assert "placement" not in g6 and "networkInterfaces" not in g6


def test_efa_security_group_allows_all_traffic_to_and_from_itself(built: Any) -> None:
    res, _ = built
    (sg,) = _all(res, "aws:ec2/securityGroup:SecurityGroup")
    sg_id = f"{sg.name}-id"
    (ingress,) = _all(res, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    (egress,) = _all(res, "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    for rule in (ingress.inputs, egress.inputs):
        assert rule["securityGroupId"] == sg_id
        assert rule["referencedSecurityGroupId"] == sg_id
        assert rule["ipProtocol"] == "-1"
        assert "cidrIpv4" not in rule


# -- network -----------------------------------------------------------------------------------
def test_network_private_subnets_nat_and_routes(built: Any) -> None:
    res, _ = built
    subnets = {r.name: r.inputs for r in _all(res, "aws:ec2/subnet:Subnet")}
    assert set(subnets) == {"eks-private-us-east-1a", "eks-private-us-east-1b",
                            "eks-public-us-east-1a", "eks-public-us-east-1b"}
    assert all(not s["mapPublicIpOnLaunch"] for s in subnets.values())
    assert subnets["eks-private-us-east-1a"]["tags"]["kubernetes.io/role/internal-elb"] == "1"
    (nat,) = _all(res, "aws:ec2/natGateway:NatGateway")
    assert nat.inputs["subnetId"] == "eks-public-us-east-1a-id"
    private = _one(res, "aws:ec2/routeTable:RouteTable", "eks-private")
    assert private["routes"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "eks-nat-id"}]


def test_subnet_layout_and_zones() -> None:
    layout = subnet_layout("10.20.0.0/16", ["us-east-1a", "us-east-1b"])
    assert [(z.private_cidr, z.public_cidr) for z in layout] == [
        ("10.20.0.0/19", "10.20.224.0/22"), ("10.20.32.0/19", "10.20.228.0/22")]
    with pytest.raises(InputError):
        subnet_layout("10.20.0.0/26", ["us-east-1a", "us-east-1b"])
    with pytest.raises(InputError):
        subnet_layout("10.20.0.0/16", [f"us-east-1{c}" for c in "abcdefgh"])


# -- EKS cluster -------------------------------------------------------------------------------
def test_eks_cluster_encryption_logs_access_and_endpoint(built: Any) -> None:
    res, _ = built
    cluster = _one(res, "aws:eks/cluster:Cluster", "eks-eks")
    assert cluster["name"] == "eks" and cluster["version"] == "1.33"
    assert cluster["accessConfig"]["authenticationMode"] == "API"
    assert cluster["encryptionConfig"]["resources"] == ["secrets"]
    assert cluster["encryptionConfig"]["provider"]["keyArn"] == "arn:aws:mock:::eks-secrets"
    assert set(cluster["enabledClusterLogTypes"]) == {
        "api", "audit", "authenticator", "controllerManager", "scheduler"}
    vpc = cluster["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is True
    assert vpc["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert cluster["kubernetesNetworkConfig"] == {"serviceIpv4Cidr": "10.96.0.0/20"}
    (key,) = _all(res, "aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True
    (oidc,) = _all(res, "aws:iam/openIdConnectProvider:OpenIdConnectProvider")
    assert oidc.inputs["url"] == "https://oidc.eks.example/id/X"
    assert oidc.inputs["clientIdLists"] == ["sts.amazonaws.com"]


def test_stack_admins_get_access_entries_with_the_cluster_admin_policy() -> None:
    """`admins` become EKS access entries (type STANDARD) each associated with
    AmazonEKSClusterAdminPolicy at cluster scope, on a cluster in authentication mode API, as
    terraform-aws-modules/terraform-aws-eks v20+ does with its `access_entries` input
    (aws_eks_access_entry + aws_eks_access_policy_association); EKS user guide,
    https://docs.aws.amazon.com/eks/latest/userguide/access-policies.html (read 2026-11-24).
    Before issue 20 the stack could name no admins: only the creator could use the API."""
    spec = copy.deepcopy(SPEC)
    admins = ["arn:aws:iam::123456789012:role/ci-deployer",
              "arn:aws:iam::123456789012:user/alice"]
    spec["clusters"][0]["admins"] = admins
    res, _ = _build(spec)
    cluster = _one(res, "aws:eks/cluster:Cluster", "eks-eks")
    assert cluster["accessConfig"]["authenticationMode"] in ("API", "API_AND_CONFIG_MAP")
    entries = _all(res, "aws:eks/accessEntry:AccessEntry")
    assert sorted(e.inputs["principalArn"] for e in entries) == sorted(admins)
    assert {e.inputs["type"] for e in entries} == {"STANDARD"}
    assoc = _all(res, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert sorted(a.inputs["principalArn"] for a in assoc) == sorted(admins)
    for a in assoc:
        assert a.inputs["policyArn"] == (
            "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy")
        assert a.inputs["accessScope"] == {"type": "cluster"}


def test_node_role_has_only_the_three_node_policies(built: Any) -> None:
    res, _ = built
    attached = [r.inputs for r in _all(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                if r.name.startswith("eks-node-")]
    assert sorted(a["policyArn"] for a in attached) == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]
    role = _one(res, "aws:iam/role:Role", "eks-node")
    assert "ec2.amazonaws.com" in role["assumeRolePolicy"]


def test_kubeconfig_is_secret_and_runs_get_token_as_argv(built: Any) -> None:
    _, out = built
    assert out["endpoint"].startswith("https://")
    assert "aws" in out["kubeconfig"] and "get-token" in out["kubeconfig"]
    doc = json.loads(kubeconfig("eks", "https://x", "Q0E=", "us-east-1"))
    exec_ = doc["users"][0]["user"]["exec"]
    assert exec_["command"] == "aws"
    assert exec_["args"] == token_argv("eks", "us-east-1")
    assert exec_["args"][:2] == ["eks", "get-token"]
    assert json.loads(out["kubeconfig"])["clusters"][0]["cluster"]["server"] == out["endpoint"]


def test_kubeconfig_output_is_marked_secret(built: Any) -> None:
    _, out = built
    is_secret = out["built"].kubeconfig.is_secret()
    from pulumi.runtime.sync_await import _sync_await

    assert _sync_await(is_secret) is True


def test_aws_provider_is_pinned_to_the_account_and_region(built: Any) -> None:
    res, _ = built
    (provider,) = _all(res, "pulumi:providers:aws")
    assert provider.inputs["region"] == "us-east-1"
    assert "123456789012" in provider.inputs["allowedAccountIds"]


# -- capacity ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("capacity", "ng_type", "market"), [
    ({"reservation": "cr-0123456789abcdef0"}, "ON_DEMAND", None),
    ({"reservation": "cr-0123456789abcdef0", "block": True}, "CAPACITY_BLOCK", "capacity-block"),
])
def test_reservation_and_capacity_block(capacity: dict[str, Any], ng_type: str,
                                        market: str | None) -> None:
    spec = copy.deepcopy(SPEC)
    spec["pools"] = [dict(spec["pools"][0], capacity=capacity)]
    res, _ = _build(spec)
    assert _one(res, NG, "p5-ng")["capacityType"] == ng_type
    lt = _one(res, LT, "p5-lt")
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}
    assert lt.get("instanceMarketOptions", {}).get("marketType") == market


def test_capacity_block_needs_a_reservation() -> None:
    spec = copy.deepcopy(SPEC)
    spec["pools"][0]["capacity"] = {"block": True}
    with pytest.raises(SpecError) as exc:
        validate_fleet(spec)
    assert "capacity.block" in str(exc.value)


# -- the EFA interface rule, on its own ----------------------------------------------------------
def test_efa_interface_rule() -> None:
    nics = efa_network_interfaces(4, ["sg-a"])
    assert [(n["network_card_index"], n["device_index"], n["interface_type"]) for n in nics] == [
        (0, 0, "efa"), (1, 1, "efa-only"), (2, 1, "efa-only"), (3, 1, "efa-only")]
    assert efa_network_interfaces(1, [])[0]["interface_type"] == "efa"
    with pytest.raises(CatalogError):
        efa_network_interfaces(0, ["sg-a"])


@pytest.mark.parametrize("machine", ["p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge",
                                     "p6-b200.48xlarge"])
def test_efa_interface_count_follows_the_catalog(machine: str) -> None:
    shape = load_catalog().resolve(machine, cloud="aws")
    assert shape.networking is not None
    count = shape.networking.efa_interfaces
    assert len(efa_network_interfaces(count, ["sg"])) == count


def test_device_plugins_installed_with_the_cluster_provider(built: Any) -> None:
    res, _ = built
    releases = {r.inputs["chart"]: r for r in _all(res, "kubernetes:helm.sh/v3:Release")}
    # the device plugins, the DCGM exporter the gate reads (a gated GPU pool: issue 37), and
    # JobSet and Kueue (on every cluster: tests/components/test_kueue)
    assert set(releases) == {"nvidia-device-plugin", "aws-efa-k8s-device-plugin",
                             "dcgm-exporter", JOBSET.ref, KUEUE.ref}
    efa = releases["aws-efa-k8s-device-plugin"].inputs
    assert efa["values"]["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    assert efa["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    for r in releases.values():
        assert r.provider and "eks-k8s" in r.provider
        assert r.inputs["version"]
    (k8s_provider,) = _all(res, "pulumi:providers:kubernetes")
    assert k8s_provider.name == "eks-k8s"


def test_no_efa_pool_means_no_efa_plugin() -> None:
    spec = copy.deepcopy(SPEC)
    spec["pools"] = spec["pools"][1:]
    res, _ = _build(spec)
    charts = {r.inputs["chart"] for r in _all(res, "kubernetes:helm.sh/v3:Release")}
    assert charts == {"nvidia-device-plugin", "dcgm-exporter", JOBSET.ref, KUEUE.ref}
    assert "networkInterfaces" not in _one(res, LT, "g6-lt")
