"""`EksCluster`: the EKS control plane, its identities, IRSA, and a Kubernetes provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws._layout import (
    assume_role_policy,
    kms_use_policy,
    kubeconfig,
    managed_policy_arn,
    partition,
)
from components.k8s import cluster_provider
from fleet.labels import CLUSTER_TAG

TYPE = "accelfleet:aws:EksCluster"

CONTROL_PLANE_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
LOG_RETENTION_DAYS = 90
# What a managed node needs and no more. The CNI policy lets the VPC CNI (aws-node) assign pod
# addresses through the node role; moving it to an IRSA role for aws-node is tighter (docs/aws.md).
NODE_POLICIES = [
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEKS_CNI_Policy",
]
CLUSTER_POLICIES = ["AmazonEKSClusterPolicy"]
ADMIN_POLICY = "arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


@dataclass(frozen=True)
class EksClusterArgs:
    """name: the EKS cluster name; admin_principal_arns: IAM roles/users given cluster admin
    through access entries; the identity running `pulumi up` gets one too unless listed."""

    name: str
    region: str
    kubernetes_version: str | None
    subnet_ids: list[pulumi.Input[str]]
    services_cidr: str
    private_endpoint: bool = False
    authorized_cidrs: list[str] = field(default_factory=list)
    admin_principal_arns: list[str] = field(default_factory=list)


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster with KMS envelope encryption, control-plane logs, access entries, OIDC."""

    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    cluster_name: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str | None]
    node_role_arn: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {CLUSTER_TAG: args.name}

        cluster_role = _service_role(f"{name}-cluster", "eks.amazonaws.com", CLUSTER_POLICIES,
                                     args.region, tags, child)
        key = aws.kms.Key(f"{name}-secrets", description=f"EKS {args.name} secrets envelope key",
                          enable_key_rotation=True, deletion_window_in_days=30, tags=tags,
                          opts=child)
        aws.iam.RolePolicy(f"{name}-cluster-kms", role=cluster_role.id,
                           policy=key.arn.apply(kms_use_policy), opts=child)
        logs = aws.cloudwatch.LogGroup(f"{name}-logs", name=f"/aws/eks/{args.name}/cluster",
                                       retention_in_days=LOG_RETENTION_DAYS, tags=tags,
                                       opts=child)

        public = not args.private_endpoint
        vpc_config = aws.eks.ClusterVpcConfigArgs(
            subnet_ids=args.subnet_ids,
            endpoint_private_access=True,
            endpoint_public_access=public,
            public_access_cidrs=args.authorized_cidrs if public and args.authorized_cidrs
            else None,
        )
        cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=args.name,
            role_arn=cluster_role.arn,
            version=args.kubernetes_version,
            vpc_config=vpc_config,
            # No bootstrap entry: EKS would make one for the creator, and a stack that lists
            # the creator in `admins` (CI's natural set-up) then gets 409 ResourceInUse on
            # its entry; the creator gets an entry below instead, unless listed, as
            # terraform-aws-modules/terraform-aws-eks v20 does
            # (enable_cluster_creator_admin_permissions; issues #3293, #2969).
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=False),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn),
                resources=["secrets"]),
            enabled_cluster_log_types=CONTROL_PLANE_LOGS,
            kubernetes_network_config=aws.eks.ClusterKubernetesNetworkConfigArgs(
                service_ipv4_cidr=args.services_cidr),
            tags=tags,
            # bootstrap_cluster_creator_admin_permissions is ForceNew (terraform-provider-aws
            # internal/service/eks/cluster.go@00555dc5b38f): a cluster created before it was
            # false keeps its value rather than be replaced with every node on it.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[logs],
                ignore_changes=["accessConfig.bootstrapClusterCreatorAdminPermissions"]),
        )

        issuer = cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer if ids and
                                          ids[0].oidcs else "")
        oidc = aws.iam.OpenIdConnectProvider(f"{name}-oidc", url=issuer,
                                             client_id_lists=["sts.amazonaws.com"], tags=tags,
                                             opts=child)

        node_role = _service_role(f"{name}-node", "ec2.amazonaws.com", NODE_POLICIES,
                                  args.region, tags, child)

        admins = [(f"{name}-admin-{i}", p) for i, p in enumerate(args.admin_principal_arns)]
        creator = creator_arn(self)
        if creator and creator not in args.admin_principal_arns:
            admins.append((f"{name}-creator", creator))
        for entry_name, principal in admins:
            entry = aws.eks.AccessEntry(entry_name, cluster_name=cluster.name,
                                        principal_arn=principal, type="STANDARD", opts=child)
            aws.eks.AccessPolicyAssociation(
                entry_name, cluster_name=cluster.name, principal_arn=principal,
                policy_arn=ADMIN_POLICY.format(partition=partition(args.region)),
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]))

        config = pulumi.Output.all(cluster.name, cluster.endpoint,
                                   cluster.certificate_authority.data).apply(
            lambda v: kubeconfig(v[0], v[1], v[2] or "", args.region))
        self.kubeconfig = pulumi.Output.secret(config)
        self.provider = cluster_provider(f"{name}-k8s", self.kubeconfig, child)
        self.endpoint = cluster.endpoint
        self.cluster_name = cluster.name
        # Created by EKS; nodes need it to talk to the control plane (an EFA launch template
        # names its interfaces' groups, so it must name this one too).
        self.cluster_security_group_id = cluster.vpc_config.apply(
            lambda c: c.cluster_security_group_id)
        self.node_role_arn = node_role.arn
        self.oidc_provider_arn = oidc.arn
        self.register_outputs({
            "endpoint": cluster.endpoint,
            "kubeconfig": self.kubeconfig,
            "oidc_provider_arn": oidc.arn,
            "node_role_arn": node_role.arn,
            "kms_key_arn": key.arn,
        })


def creator_arn(parent: pulumi.Resource) -> str | None:
    """The IAM role or user running `pulumi up`: the caller identity's issuer (an assumed
    role's session resolves to its role ARN, as terraform-aws-eks reads it from
    aws_iam_session_context.issuer_arn). None where the caller is unknown (a test's mocks)."""
    opts = pulumi.InvokeOptions(parent=parent)
    caller = aws.get_caller_identity(opts=opts)
    if not caller.arn:
        return None
    issuer = aws.iam.get_session_context(arn=caller.arn, opts=opts).issuer_arn
    return str(issuer or caller.arn)


def _service_role(name: str, service: str, policies: Sequence[str], region: str,
                  tags: dict[str, str], opts: pulumi.ResourceOptions) -> aws.iam.Role:
    """An IAM role that `service` assumes, with only the given AWS-managed policies."""
    role = aws.iam.Role(name, assume_role_policy=assume_role_policy(service), tags=tags,
                        opts=opts)
    for policy in policies:
        aws.iam.RolePolicyAttachment(f"{name}-{policy}", role=role.name,
                                     policy_arn=managed_policy_arn(region, policy), opts=opts)
    return role
