"""The GKE cluster: dedicated node identity, private nodes, and a Kubernetes provider."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.k8s import cluster_provider
from fleet.names import node_account_id

IDENTITY_TYPE = "accelfleet:gcp:NodeIdentity"
CLUSTER_TYPE = "accelfleet:gcp:GkeCluster"
# Only what a node needs: write logs and metrics, read images. Never the default compute SA.
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
NODE_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]  # IAM roles are the limit
MASTER_CIDR = "172.16.0.0/28"
# The pod ports a private cluster's control plane must reach beyond the 443 and 10250 GKE's own
# firewall rule opens (GKE private-clusters doc, "Adding firewall rules for specific use cases";
# e.g. influxdata/helm-charts#584, elastic/cloud-on-k8s#1437): the API server calls admission
# webhooks and aggregated APIs on their pods' ports. Kueue v0.19.2's chart: webhook 9443
# (charts/kueue/values.yaml webhookService), visibility API 8082 (templates/visibility/
# service.yaml); JobSet v0.12.0's chart: webhook 9443 (templates/controller/deployment.yaml).
CONTROL_PLANE_PORTS = ("8082", "9443")


@dataclass(frozen=True)
class NodeIdentityArgs:
    name: str
    project: str
    roles: tuple[str, ...] = NODE_ROLES


class NodeIdentity(pulumi.ComponentResource):
    """A dedicated service account for nodes, with only the listed project roles."""

    email: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(IDENTITY_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account_id = node_account_id(args.name)
        account = gcp.serviceaccount.Account(
            f"{args.name}-sa", account_id=account_id, project=args.project,
            display_name=f"accelfleet nodes of {args.name}", opts=child)
        self.email = account.email
        member = account.email.apply(lambda e: f"serviceAccount:{e}")
        for role in args.roles:
            gcp.projects.IAMMember(
                f"{args.name}-{role.split('/')[-1]}", project=args.project, role=role,
                member=member, opts=child)
        self.register_outputs({"email": self.email})


@dataclass(frozen=True)
class GkeClusterArgs:
    name: str
    project: str
    region: str
    network: pulumi.Input[str]
    subnet: pulumi.Input[str]
    node_service_account: pulumi.Input[str]
    release_channel: str
    private_endpoint: bool
    authorized_cidrs: list[str] = field(default_factory=list)
    kubernetes_version: str | None = None
    multi_networking: bool = False
    pods_range: str = "pods"
    services_range: str = "services"


class GkeCluster(pulumi.ComponentResource):
    """A regional GKE Standard cluster, secure by default, with no default node pool."""

    cluster: gcp.container.Cluster
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: GkeClusterArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLUSTER_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        C = gcp.container
        self.cluster = C.Cluster(
            f"{args.name}-gke", name=args.name, project=args.project, location=args.region,
            network=args.network, subnetwork=args.subnet, networking_mode="VPC_NATIVE",
            # The default pool is removed at once; while it lives it already uses the
            # dedicated service account and shielded nodes.
            remove_default_node_pool=True, initial_node_count=1,
            node_config=C.ClusterNodeConfigArgs(
                service_account=args.node_service_account, oauth_scopes=NODE_SCOPES,
                shielded_instance_config=C.ClusterNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True),
                workload_metadata_config=C.ClusterNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA")),
            deletion_protection=True,
            release_channel=C.ClusterReleaseChannelArgs(channel=args.release_channel),
            min_master_version=args.kubernetes_version,
            workload_identity_config=C.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"),
            datapath_provider="ADVANCED_DATAPATH",  # Dataplane V2; multi-networking needs it
            enable_multi_networking=args.multi_networking or None,
            enable_shielded_nodes=True,
            private_cluster_config=C.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True, enable_private_endpoint=args.private_endpoint,
                master_ipv4_cidr_block=MASTER_CIDR),
            master_authorized_networks_config=C.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[C.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=c, display_name=f"authorized-{i}")
                    for i, c in enumerate(args.authorized_cidrs)]),
            ip_allocation_policy=C.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args.pods_range,
                services_secondary_range_name=args.services_range),
            master_auth=C.ClusterMasterAuthArgs(
                client_certificate_config=C.ClusterMasterAuthClientCertificateConfigArgs(
                    issue_client_certificate=False)),
            enable_legacy_abac=False,
            opts=child)
        self.endpoint = self.cluster.endpoint
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(
            self.cluster.name, self.cluster.endpoint,
            self.cluster.master_auth.cluster_ca_certificate,
        ).apply(lambda a: kubeconfig(str(a[0]), str(a[1]), str(a[2]))))
        self.provider = cluster_provider(f"{args.name}-k8s", self.kubeconfig,
                                         pulumi.ResourceOptions(parent=self))
        # Without it the Kueue objects and every JobSet are refused: their webhooks time out.
        # Only to this cluster's nodes: every pool runs as the cluster's node service account
        # (a rule with no target applies to every VM of the network; GKE's own control-plane
        # rules are targeted, and its docs add this rule with `--target-tags`:
        # https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters#add_firewall_rules;
        # a service-account target needs no network tag on the pools:
        # https://cloud.google.com/firewall/docs/firewalls#service-accounts-vs-tags).
        gcp.compute.Firewall(
            f"{args.name}-webhooks", name=f"{args.name}-webhooks", project=args.project,
            network=args.network, direction="INGRESS", source_ranges=[MASTER_CIDR],
            target_service_accounts=[args.node_service_account],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp",
                                                  ports=list(CONTROL_PLANE_PORTS))],
            opts=child)
        self.register_outputs({"endpoint": self.endpoint, "kubeconfig": self.kubeconfig})


def kubeconfig(name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin (no static credentials)."""
    import json

    user = {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "gke-gcloud-auth-plugin",
        "provideClusterInfo": True,
        "installHint": "install gke-gcloud-auth-plugin: `gcloud components install "
                       "gke-gcloud-auth-plugin`",
    }}
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {
            "server": f"https://{endpoint}", "certificate-authority-data": ca_certificate}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": user}],
    }, sort_keys=True)
