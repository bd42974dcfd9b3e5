"""Names that land in the clouds: every value of a stack that becomes a resource name, a label,
a taint or a tag is checked against the rules of every place it lands (catalog limits.yaml
`names`), and the names accelfleet derives from them are decided here, once, so that the rules
check what the components build.

    pool name     a GKE node pool (and, with multislice, NAME-s0 .. NAME-sN-1), an EKS node
                  group, a Cloud TPU VM (NAME-0 ..), a workload policy (NAME-wp), the
                  accelfleet.io/pool node label, the accelfleet-pool resource label, a tag
    team name     the accelfleet.io/team node label, the accelfleet-team resource label (GKE
                  nodes, TPU VMs), the accelfleet.io/team tag (EKS)
    cluster name  a GKE or EKS cluster, and the VPC, subnet, router, NAT and firewall names
                  derived from it
    labels, taints, smoke.namespace, a GCE reservation: Kubernetes and Compute Engine rules
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

from fleet.catalog import Catalog, Cloud, NameRule
from fleet.errors import Where
from fleet.labels import CLUSTER_TAG, POOL_LABEL, TEAM_LABEL
from fleet.labels import PREFIX as LABEL_PREFIX
from fleet.rules.problems import RuleProblems as Reporter
from fleet.spec.fields import FleetSpec, NodeTaint, Pool

# Where a value lands, in words for the message.
PLACES = {
    "gke_cluster": "a GKE cluster name",
    "gke_node_pool": "a GKE node pool name",
    "gce_resource": "a Compute Engine resource name",
    "gcp_service_account": "a service account ID",
    "gce_label_value": "a Compute Engine label value",
    "k8s_label_value": "a Kubernetes label value",
    "k8s_label_name": "the name part of a Kubernetes label key",
    "k8s_label_prefix": "the prefix of a Kubernetes label key",
    "k8s_namespace": "a Kubernetes namespace",
    "eks_cluster": "an EKS cluster name",
    "eks_node_group": "an EKS node group name",
    "aws_tag_value": "an AWS tag value",
}
# A pool or cluster name is the same on both clouds: GKE's rule (1-40, lower case) is the
# strictest place either lands, and it keeps every derived Compute Engine name within 63.
POOL_PLACES = {
    "gke_node_pool": "its GKE node pool name (pools are named alike on both clouds)",
    "k8s_label_value": f"the {POOL_LABEL} label value of its nodes",
    "gce_label_value": "the accelfleet-pool label value of its Google Cloud nodes",
    "eks_node_group": "its EKS node group name",
    "aws_tag_value": f"the {POOL_LABEL} tag value of its AWS nodes",
}
CLUSTER_PLACES = {
    "gke_cluster": "a GKE cluster name (clusters are named alike on both clouds)",
    "eks_cluster": "an EKS cluster name",
    "aws_tag_value": f"the {CLUSTER_TAG} tag value",
}
RESERVED_LABEL_PREFIXES = (LABEL_PREFIX, "cloud.google.com/", "kubernetes.io/",
                           "k8s.io/", "eks.amazonaws.com/")
# EKS user guide node-taints-managed-node-groups (awsdocs/amazon-eks-user-guide@4d52b4d):
# "A maximum of 50 taints are allowed per node group."
MAX_TAINTS = 50


# -- the names accelfleet derives ---------------------------------------------------------
# The Cloud TPU VM pools of a fleet share one network and one node identity, named after this
# (components/gcp TpuVms): a GKE cluster of the same name would collide with them.
TPU_VMS_NAME = "tpu-vms"


def node_account_id(name: str) -> str:
    """The node service account id (6-30 chars, letters, digits and '-') of a GKE cluster or
    of the Cloud TPU VMs: the first 23 characters of `name` and "-nodes"."""
    stem = name[:23].rstrip("-")
    return f"{stem}-nodes" if len(stem) >= 1 else "accelfleet-nodes"


def check_derived_names(r: Reporter, spec: FleetSpec) -> None:
    """Names accelfleet derives are unique per project: the node service-account id is cut
    to 23 characters (two clusters sharing them would get the same id, and IAM refuses the
    second with 409 "already exists"), and the Cloud TPU VMs' network and service account are
    named `tpu-vms` (a cluster of that name would own the same VPC, subnet and account).
    https://cloud.google.com/iam/docs/service-accounts-create#creating (account ids are
    unique per project, 6-30 characters)"""
    owners: dict[str, str] = {}
    for c in spec.clusters:
        if c.cloud != "gcp":
            continue
        where = Where("clusters", name=c.name, field="name")
        if c.name == TPU_VMS_NAME:
            r.add(where, f"cluster name {c.name!r} is the name accelfleet gives the Cloud TPU "
                  f"VMs' network ({TPU_VMS_NAME}-vpc) and node service account "
                  f"({node_account_id(TPU_VMS_NAME)})",
                  "rename the cluster, e.g. tpu-vms-gke")
        account = node_account_id(c.name)
        other = owners.get(account)
        if other is not None:
            r.add(where, f"clusters {other!r} and {c.name!r} share their first 23 characters, "
                  f"so both nodes' service accounts would be {account!r} (a project's "
                  "account ids are unique; the second create fails with 409)",
                  "rename one of them so that the first 23 characters differ")
        else:
            owners[account] = c.name


def system_component_name(cluster: str) -> str:
    """The Pulumi name of a cluster's system pool component (GKE CpuNodePool, EKS
    CpuNodeGroup); a CPU pool's component is named after the pool."""
    return f"{cluster}-system"


def tpu_second_network_names(cluster: str) -> tuple[str, str, str]:
    """(VPC, subnet, firewall rule) of a GKE cluster's TPU second network, or of the Cloud TPU
    VMs' (`cluster` TPU_VMS_NAME) (components/gcp/_tpu_network.py)."""
    return f"{cluster}-tpu-net-1", f"{cluster}-tpu-sub-1", f"{cluster}-tpu-net-1-internal"


def slice_pool_names(pool: str, slices: int) -> list[str]:
    """The GKE node pools of a TPU pool: one per slice, NAME-s0.. when there are several."""
    return [pool] if slices <= 1 else [f"{pool}-s{i}" for i in range(slices)]


def tpu_vm_names(pool: str, slices: int) -> list[str]:
    """The Cloud TPU VM node ids of a tpu-vm pool: NAME, or NAME-0.. for a multislice."""
    return [pool] if slices <= 1 else [f"{pool}-{i}" for i in range(slices)]


def workload_policy_name(pool: str, cluster: str, topology: str) -> str:
    """The Compute Engine workload policy of a multi-host slice that needs one (tpu7x). A
    resource policy's name is unique per project and region, wider than a stack, so the name
    says whose it is: the pool, the slice's topology, and six hex digits of the cluster (a GKE
    cluster's name is unique per project and location; issue 36, class 3). The topology in the
    name makes a topology change a new policy beside the old one, never one replaced under
    the same name (Pulumi creates the replacement first, and Compute Engine refuses a second
    policy of one name), and it changes the node pool's placementPolicy.policyName, which
    replaces the slice: GKE adds no node to a multi-host slice (issue 36, class 4). At most
    40 + 1 + 8 + 1 + 6 = 56 characters, within Compute Engine's 63."""
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:6]
    return f"{pool}-{topology}-{digest}"


# -- checks --------------------------------------------------------------------------------
def first_problem(catalog: Catalog, value: str, places: Iterable[str]
                  ) -> tuple[NameRule, str] | None:
    """The first place `value` does not fit, with why, or None."""
    for place in places:
        rule = catalog.names[place]
        why = rule.problem(value)
        if why:
            return rule, why
    return None


def fixed_name(value: str, rule: NameRule, taken: Collection[str] = ()) -> str | None:
    """A name like `value` that fits `rule` and is not in `taken` (best a set), or None."""
    base = "".join(c if rule.allows(c) else "-" for c in value.lower())
    base = re.sub(r"-{2,}", "-", base).strip("-._")
    if base and not base[0].isalpha() and rule.pattern.pattern.startswith("[a-z]"):
        base = f"x-{base}"
    for n in range(1, 100):
        suffix = "" if n == 1 else f"-{n}"
        candidate = base[:rule.max - len(suffix)].rstrip("-") + suffix
        if candidate and candidate not in taken and not rule.problem(candidate):
            return candidate
    return None


def check_name(r: Reporter, where: Where, what: str, value: str,
               places: Sequence[str] | Mapping[str, str], taken: Collection[str] = ()) -> bool:
    """Report `value` where it does not fit one of `places` (a mapping gives each place the
    words saying where the value lands); True when it fits them all."""
    found = first_problem(r.catalog, value, places)
    if found is None:
        return True
    rule, why = found
    lands = places.get(rule.place, "") if isinstance(places, Mapping) else ""
    example = fixed_name(value, rule, taken) or \
        (rule.example if rule.example not in taken else None)
    verb = "rename it" if what.endswith("name") else "use a value that fits"
    r.add(where, f"{what} {value!r} {why}; it becomes {lands or PLACES[rule.place]}, which "
          f"takes {rule.words}",
          f"{verb}, e.g. {example!r}" if example else verb)
    return False


def check_unique(r: Reporter, section: str, names: Sequence[str]) -> None:
    """Names used twice; the fix proposes a free name, never a taken one."""
    taken = frozenset(names)
    for name, count in Counter(names).items():
        if count > 1:
            free = next(f"{name}-{n}" for n in range(2, 10_000) if f"{name}-{n}" not in taken)
            r.add(Where(section, name=name), f"the name {name!r} is used {count} times",
                  f"give each a unique name (e.g. rename the second to {free!r})")


def check_pool_name(r: Reporter, pool: Pool, at: Where, taken: Collection[str], *,
                    tpu_slices: int | None, runtime: str) -> None:
    """The pool name, and the names derived from it on GKE (slice node pools) and as Cloud
    TPU VMs."""
    if not check_name(r, at.dot("name"), "pool name", pool.name, POOL_PLACES, taken):
        return
    if tpu_slices is None or tpu_slices <= 1:
        return
    if runtime == "tpu-vm":
        derived, place = tpu_vm_names(pool.name, tpu_slices)[-1], "gce_resource"
    else:
        derived, place = slice_pool_names(pool.name, tpu_slices)[-1], "gke_node_pool"
    rule = r.catalog.names[place]
    if rule.problem(derived):
        room = rule.max - (len(derived) - len(pool.name))
        r.add(at.dot("name"),
              f"with multislice {tpu_slices}, the pool's slices are named {derived!r} and "
              f"alike ({len(derived)} characters), over the {rule.max} of {PLACES[place]}",
              f"shorten the pool name to {room} characters or fewer (e.g. "
              f"{pool.name[:room].rstrip('-')!r})")


def check_team_names(r: Reporter, spec: FleetSpec, clouds: Mapping[str, set[Cloud]]) -> None:
    """A team name is a node label everywhere, a Compute Engine label where the team has
    Google Cloud pools and a tag where it has AWS pools."""
    names = [t.name for t in spec.teams]
    taken = frozenset(names)
    check_unique(r, "teams", names)
    for team in spec.teams:
        places = {"k8s_label_value": f"the {TEAM_LABEL} label value of its nodes"}
        if "gcp" in clouds.get(team.name, set()):
            places["gce_label_value"] = ("the accelfleet-team label value of its Google Cloud "
                                         "nodes")
        if "aws" in clouds.get(team.name, set()):
            places["aws_tag_value"] = f"the {TEAM_LABEL} tag value of its AWS nodes"
        check_name(r, Where("teams", name=team.name, field="name"), "team name", team.name,
                   places, taken)


def check_cluster_names(r: Reporter, spec: FleetSpec) -> None:
    names = [c.name for c in spec.clusters]
    taken = frozenset(names)
    check_unique(r, "clusters", names)
    for c in spec.clusters:
        check_name(r, Where("clusters", name=c.name, field="name"), "cluster name", c.name,
                   CLUSTER_PLACES,
                   taken)


def check_labels(r: Reporter, pool: Pool, at: Where) -> None:
    for key, value in pool.labels.items():
        _label_key(r, at.dot("labels"), key, "label key")
        if any(key.startswith(p) for p in RESERVED_LABEL_PREFIXES):
            r.add(at.dot("labels"), f"label key {key!r} uses a prefix that accelfleet or the "
                  "clouds set on nodes themselves",
                  "use a prefix of your own, e.g. example.com/owner", RESERVED_LABEL_PREFIXES)
        check_name(r, at.dot(f"labels.{key}"), "label value", value, ("k8s_label_value",))
    if len(pool.taints) > MAX_TAINTS:
        r.add(at.dot("taints"), f"{len(pool.taints)} taints; an EKS node group takes at most "
              f"{MAX_TAINTS}", "keep the taints the pool's workloads need")
    for i, taint in enumerate(pool.taints):
        _taint(r, at.dot(f"taints[{i}]"), taint)


def _taint(r: Reporter, at: Where, taint: NodeTaint) -> None:
    _label_key(r, at.dot("key"), taint.key, "taint key")
    check_name(r, at.dot("value"), "taint value", taint.value, ("k8s_label_value",))


def _label_key(r: Reporter, where: Where, key: str, what: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        r.add(where, f"{what} {key!r} has an empty prefix before '/'",
              "write prefix/name, e.g. example.com/owner, or just a name")
        return
    if slash:
        check_name(r, where, f"the prefix of {what} {key!r}:", prefix, ("k8s_label_prefix",))
        check_name(r, where, f"the name part of {what} {key!r}:", name, ("k8s_label_name",))
    else:
        check_name(r, where, what, key, {"k8s_label_name": f"a Kubernetes {what}"})


# The namespace the Kueue release is installed in (components/k8s/_charts.py KUEUE).
KUEUE_NAMESPACE = "kueue-system"
# Namespaces Kueue's configuration may not select: its validateManagedJobsNamespaceSelector
# (and validateNamespaceSelectorForPodIntegration) refuse a managedJobsNamespaceSelector that
# matches `kube-system` (metav1.NamespaceSystem) or Kueue's own namespace ("should not match
# the %q namespace"): kubernetes-sigs/kueue pkg/config/validation.go (stored copy at
# 01e571bb38620f078d84f038cf4b29a9c480052f, read 2026-11-28). The smoke namespace is in that
# selector wherever a queued pool routes smoke runs (components/k8s/_kueue.py
# managed_namespaces_selector), and Kueue, refusing its configuration, never starts.
KUEUE_REFUSED_NAMESPACES = ("kube-system", KUEUE_NAMESPACE)
KUEUE_CONFIG_SOURCE = ("kubernetes-sigs/kueue pkg/config/validation.go "
                       "validateManagedJobsNamespaceSelector, read 2026-11-28")


def check_namespace(r: Reporter, spec: FleetSpec) -> None:
    at = Where("smoke", field="namespace")
    fits = check_name(r, at, "namespace", spec.smoke.namespace, ("k8s_namespace",))
    if fits and spec.smoke.namespace in KUEUE_REFUSED_NAMESPACES:
        r.add(at, f"{spec.smoke.namespace!r} is a namespace Kueue refuses to manage: its "
              "configuration may not select kube-system or its own namespace, and the smoke "
              "namespace is in it wherever smoke runs are queued, so Kueue would not start "
              f"({KUEUE_CONFIG_SOURCE})",
              "give smoke runs a namespace of their own, e.g. `smoke: {namespace: "
              "accelfleet-smoke}`")


def check_gce_reservation(r: Reporter, pool: Pool, at: Where) -> None:
    res = pool.capacity.reservation
    if res is not None:
        check_name(r, at.dot("capacity.reservation"), "reservation name", res,
                   {"gce_resource": "a Compute Engine reservation name"})
