"""The fleet's secure defaults and rules as policies: pure functions over one resource (its
Pulumi type token and its inputs, as the engine sends them: camelCase keys).

The same functions run in two places:
- `pulumi preview --policy-pack policies` (CrossGuard): `policies/__main__.py` wraps each one
  in a `pulumi_policy.ResourceValidationPolicy`, so they hold for any Pulumi program;
- `accelfleet plan --policies`: `check_plan` runs them on the offline plan's recorded inputs.

This module imports neither pulumi nor pulumi_policy. A value the provider computes is
"<computed>" here (the plan's spelling; the pack maps the engine's unknowns to it): a computed
value is never taken as a violation of a rule about a literal.

    >>> from policies.rules import POLICIES, check_resource
    >>> check_resource("aws:ec2/launchTemplate:LaunchTemplate",
    ...                {"metadataOptions": {"httpTokens": "optional"}})
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleet.placeholders import COMPUTED

TEAM_LABEL = "accelfleet.io/team"  # fleet.model.TEAM_LABEL (Kubernetes node label)
TEAM_GCP_LABEL = "accelfleet-team"  # a Google Cloud resource label: no dots or slashes
OPEN = {"0.0.0.0/0", "::/0"}

GKE_POOL = "gcp:container/nodePool:NodePool"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EC2_INSTANCE = "aws:ec2/instance:Instance"

Check = Callable[[str, Mapping[str, Any]], list[str]]


@dataclass(frozen=True)
class Policy:
    name: str  # CrossGuard policy names: lowercase, digits, hyphens
    description: str
    types: tuple[str, ...]
    check: Check


@dataclass(frozen=True)
class Violation:
    policy: str
    resource: str  # "<type>::<name>"
    message: str
    pool: str | None = None

    def render(self) -> str:
        where = f" (pool {self.pool})" if self.pool else ""
        return f"{self.resource}{where}: {self.message} [{self.policy}]"

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "resource": self.resource, "pool": self.pool,
                "message": self.message}


def get(value: Any, path: str, default: Any = None) -> Any:
    """`get(inputs, "nodeConfig.shieldedInstanceConfig.enableSecureBoot")`: None-safe; under
    a computed value, computed."""
    for key in path.split("."):
        if value == COMPUTED:
            return COMPUTED
        if not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    return value


def _truthy(value: Any) -> bool:
    """Booleans as the engine and the AWS provider spell them (True, "true")."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _falsy(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.lower() == "false")


def _known(value: Any) -> bool:
    return value is not None and value != COMPUTED


# --- the policies -------------------------------------------------------------------------

_DEFAULT_SA = re.compile(r"^(default|\d+-compute@developer\.gserviceaccount\.com)$")


def no_default_service_account(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    if type_ == TPU_VM:
        email = get(inputs, "serviceAccount.email")
        where = "serviceAccount.email"
    elif type_ == GKE_CLUSTER:
        if get(inputs, "nodeConfig") is None:
            return []  # no default pool settings given (accelfleet removes the default pool)
        email, where = get(inputs, "nodeConfig.serviceAccount"), "nodeConfig.serviceAccount"
    else:
        email, where = get(inputs, "nodeConfig.serviceAccount"), "nodeConfig.serviceAccount"
    if email is None or email == "":
        return [f"{where} is not set: the nodes run as the default compute service account "
                "(Editor on the project); give them a dedicated least-privilege one"]
    if isinstance(email, str) and _DEFAULT_SA.match(email):
        return [f"{where} is the default compute service account ({email}); use a "
                "dedicated least-privilege one"]
    return []


def secure_boot(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    if type_ == GKE_CLUSTER:
        if _falsy(get(inputs, "enableShieldedNodes")):
            return ["enableShieldedNodes is false: every node must be a shielded VM"]
        return []
    path = ("shieldedInstanceConfig.enableSecureBoot" if type_ == TPU_VM
            else "nodeConfig.shieldedInstanceConfig.enableSecureBoot")
    value = get(inputs, path)
    if value == COMPUTED or _truthy(value):
        return []
    return [f"{path} is {'not set' if value is None else value}: turn secure boot on (only "
            "signed boot components run)"]


def imdsv2_required(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    if type_ == EKS_NODE_GROUP:
        if get(inputs, "launchTemplate") is None:
            return ["no launchTemplate: the nodes get EKS's default instance metadata "
                    "settings; give a launch template with metadataOptions.httpTokens "
                    "'required' and a hop limit of 1"]
        return []
    tokens = get(inputs, "metadataOptions.httpTokens")
    hops = get(inputs, "metadataOptions.httpPutResponseHopLimit")
    out = []
    if tokens != COMPUTED and tokens != "required":
        out.append(f"metadataOptions.httpTokens is {tokens or 'not set'}: require IMDSv2 "
                   "('required')")
    if _known(hops) and isinstance(hops, int | float) and hops > 1:
        out.append(f"metadataOptions.httpPutResponseHopLimit is {hops}: 1 keeps pods from "
                   "reaching the node's credentials")
    return out


def private_nodes(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    if type_ == GKE_CLUSTER:
        value = get(inputs, "privateClusterConfig.enablePrivateNodes")
        if value == COMPUTED or _truthy(value):
            return []
        return ["privateClusterConfig.enablePrivateNodes is "
                f"{'not set' if value is None else value}: nodes get public IPs"]
    if type_ == GKE_POOL:
        if _falsy(get(inputs, "networkConfig.enablePrivateNodes")):
            return ["networkConfig.enablePrivateNodes is false: this pool's nodes get "
                    "public IPs"]
        return []
    if type_ == TPU_VM:
        if _truthy(get(inputs, "networkConfig.enableExternalIps")):
            return ["networkConfig.enableExternalIps is true: the TPU workers get public "
                    "IPs"]
        return []
    out = []
    for i, nic in enumerate(get(inputs, "networkInterfaces") or []):
        if isinstance(nic, Mapping) and _truthy(nic.get("associatePublicIpAddress")):
            out.append(f"networkInterfaces[{i}].associatePublicIpAddress is true: nodes get "
                       "public IPs")
    return out


def public_endpoint_needs_cidrs(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    if type_ == GKE_CLUSTER:
        if _truthy(get(inputs, "privateClusterConfig.enablePrivateEndpoint")):
            return []
        blocks = get(inputs, "masterAuthorizedNetworksConfig.cidrBlocks") or []
        cidrs = [COMPUTED] if blocks == COMPUTED else [
            b.get("cidrBlock") if isinstance(b, Mapping) else b for b in blocks]
        where = "masterAuthorizedNetworksConfig.cidrBlocks"
    else:  # EKS: the public endpoint is on unless endpointPublicAccess is false
        if _falsy(get(inputs, "vpcConfig.endpointPublicAccess")):
            return []
        listed = get(inputs, "vpcConfig.publicAccessCidrs")
        cidrs = [] if listed is None else [COMPUTED] if listed == COMPUTED else list(listed)
        where = "vpcConfig.publicAccessCidrs"
    if any(c == COMPUTED for c in cidrs):
        return []
    if not cidrs:
        return [f"the control plane has a public endpoint and {where} is empty: anyone can "
                "reach it; list the networks allowed (authorized_cidrs) or make it private"]
    opened = sorted(OPEN & {str(c) for c in cidrs})
    if opened:
        return [f"{where} allows {', '.join(opened)}: the public endpoint is open to all"]
    return []


_GPU_FAMILY = re.compile(r"^(p\d|g\d|trn\d|inf\d|dl\d)", re.IGNORECASE)


def is_accelerator_pool(type_: str, inputs: Mapping[str, Any]) -> bool:
    """GPUs (guest accelerators, NVIDIA/Neuron AMIs, accelerated instance families) or TPUs."""
    if type_ == TPU_VM:
        return True
    if type_ == GKE_POOL:
        machine = str(get(inputs, "nodeConfig.machineType") or "")
        return bool(get(inputs, "nodeConfig.guestAccelerators")) or machine.startswith("ct") \
            or bool(get(inputs, "placementPolicy.tpuTopology"))
    if type_ == EKS_NODE_GROUP:
        ami = str(get(inputs, "amiType") or "").upper()
        types: Sequence[Any] = get(inputs, "instanceTypes") or []
        return "NVIDIA" in ami or "NEURON" in ami or any(
            isinstance(t, str) and _GPU_FAMILY.match(t) for t in types)
    return False


def team_label(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    if not is_accelerator_pool(type_, inputs):
        return []
    if type_ == TPU_VM:
        key, labels = TEAM_GCP_LABEL, get(inputs, "labels")
    elif type_ == GKE_POOL:
        key, labels = TEAM_LABEL, get(inputs, "nodeConfig.labels")
    else:
        key, labels = TEAM_LABEL, get(inputs, "labels")
    if labels == COMPUTED:
        return []
    value = labels.get(key) if isinstance(labels, Mapping) else None
    if not value:
        return [f"an accelerator pool without the {key} label: every accelerator pool names "
                "the team that owns (and pays for) it"]
    return []


def encrypted_disks(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    out = []
    for i, bdm in enumerate(get(inputs, "blockDeviceMappings") or []):
        ebs = bdm.get("ebs") if isinstance(bdm, Mapping) else None
        if isinstance(ebs, Mapping):
            value = ebs.get("encrypted")
            if value != COMPUTED and not _truthy(value):
                out.append(f"blockDeviceMappings[{i}].ebs.encrypted is "
                           f"{'not set' if value is None else value}: encrypt node disks")
    return out


def gke_metadata_server(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    mode = get(inputs, "nodeConfig.workloadMetadataConfig.mode")
    if mode in ("GKE_METADATA", COMPUTED):
        return []
    return [f"nodeConfig.workloadMetadataConfig.mode is {mode or 'not set'}: use "
            "GKE_METADATA (workload identity; pods never see the node's credentials)"]


def eks_secrets_encryption(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    resources = get(inputs, "encryptionConfig.resources") or []
    if resources == COMPUTED or "secrets" in resources:
        return []
    return ["encryptionConfig does not cover secrets: envelope-encrypt Kubernetes secrets "
            "with a KMS key"]


POLICIES: tuple[Policy, ...] = (
    Policy("no-default-service-account", "GKE nodes and TPU VMs run as a dedicated "
           "least-privilege service account, never the default compute one.",
           (GKE_POOL, GKE_CLUSTER, TPU_VM), no_default_service_account),
    Policy("secure-boot", "GKE nodes and TPU VMs are shielded VMs with secure boot on.",
           (GKE_POOL, GKE_CLUSTER, TPU_VM), secure_boot),
    Policy("imdsv2-required", "EC2 nodes require IMDSv2 (session tokens) with a hop limit "
           "of 1; EKS node groups take a launch template that says so.",
           (LAUNCH_TEMPLATE, EC2_INSTANCE, EKS_NODE_GROUP), imdsv2_required),
    Policy("private-nodes", "Nodes and TPU workers have no public IP addresses.",
           (GKE_CLUSTER, GKE_POOL, TPU_VM, LAUNCH_TEMPLATE), private_nodes),
    Policy("public-endpoint-authorized-cidrs", "A public Kubernetes control-plane endpoint "
           "only with authorized networks, never 0.0.0.0/0.",
           (GKE_CLUSTER, EKS_CLUSTER), public_endpoint_needs_cidrs),
    Policy("accelerator-pool-team-label", "Every accelerator pool (GPU node pool or group, "
           "TPU slice or VM) carries the label of the team that owns it.",
           (GKE_POOL, EKS_NODE_GROUP, TPU_VM), team_label),
    Policy("encrypted-node-disks", "EC2 node volumes are encrypted.",
           (LAUNCH_TEMPLATE, EC2_INSTANCE), encrypted_disks),
    Policy("gke-metadata-server", "GKE nodes use the GKE metadata server (workload "
           "identity).", (GKE_POOL,), gke_metadata_server),
    Policy("eks-secrets-encryption", "EKS clusters envelope-encrypt Kubernetes secrets.",
           (EKS_CLUSTER,), eks_secrets_encryption),
)


def check_resource(type_: str, inputs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(policy name, message) for every policy this resource breaks."""
    return [(p.name, msg) for p in POLICIES if type_ in p.types for msg in p.check(type_, inputs)]


def check_plan(plan: Mapping[str, Any]) -> list[Violation]:
    """Every violation in an offline plan document (`accelfleet plan --json`), sorted."""
    from components.engine.diff import pool_owners  # pure; no pulumi

    owners = pool_owners(dict(plan))
    out = []
    for r in plan.get("resources") or []:
        key = f"{r.get('type')}::{r.get('name')}"
        pool = owners.get(key, (None, None))[0]
        for name, message in check_resource(str(r.get("type")), r.get("inputs") or {}):
            out.append(Violation(name, key, message, pool))
    return sorted(out, key=lambda v: (v.resource, v.policy, v.message))
