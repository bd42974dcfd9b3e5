"""Kueue on a cluster: the controller as a pinned Helm release (`KueueController`), and the
routing the fleet decided (`fleet.routing`) as Kueue objects (`KueueQueues`).

The objects are plain dicts built by pure functions (tests check them against Kueue's
published CRD schemas), applied as `k8s.apiextensions.CustomResource` in
`kueue.x-k8s.io/v1beta2`, the version Kueue v0.19.2 stores (v1beta1 is served, deprecated):

    Cohort          one per cluster, named after it: the team queues lend and borrow in it
    ResourceFlavor  one per pool: its node labels (TPU topology included) and tolerations
    ClusterQueue    one per team: its flavors in routing order, each with its nominal quota
                    (and lending / borrowing limits), trying the next flavor rather than
                    borrowing or preempting (flavorFungibility), reclaiming lent quota
    Namespace, LocalQueue   one per team, both named after it: jobs labelled
                    `kueue.x-k8s.io/queue-name: <team>` in that namespace go to its queue
    AdmissionCheck, ProvisioningRequestConfig   one each per GKE queued pool: Kueue asks
                    GKE for the pool's nodes by ProvisioningRequest before it admits a job
                    there (the queues carry the check on that flavor)
    accelfleet-smoke   Namespace (the smoke namespace), LocalQueue and ClusterQueue where the
                    cluster has queued pools: the queue smoke runs on those pools use
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s._addons import pinned_release, release_opts
from components.k8s._charts import KUEUE, KUEUE_IMAGE_REPOSITORY, KUEUE_IMAGE_TAG
from components.k8s._jobset import JobSetController, JobSetControllerArgs
from fleet.catalog import Catalog
from fleet.model import POOL_LABEL, SYSTEM_POOL, TEAM_LABEL, Fleet
from fleet.pods import kueue_requests
from fleet.routing import ClusterRouting, Flavor, TeamQueue, quantity

CONTROLLER_TYPE = "accelfleet:k8s:KueueController"
QUEUES_TYPE = "accelfleet:k8s:KueueQueues"
API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"  # what a job sets to use a LocalQueue
MANAGED = {"app.kubernetes.io/managed-by": "accelfleet"}
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by Kubernetes on every namespace
FUNGIBILITY = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
# Lent quota comes back: a team's workload that fits its nominal quota preempts what other
# teams borrowed from it (any priority); inside a queue, lower priority yields first.
PREEMPTION = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


# -- the controller ---------------------------------------------------------------------------
# Kueue v0.19.2's charts/kueue/values.yaml `managerConfig.controllerManagerConfigYaml`, as
# data (kubernetes-sigs/kueue@8eab68778fc1b52affe165fdf5af29d1e9b4f3cb). The chart reads the
# webhooks' namespaceSelector from its `managedJobsNamespaceSelector`
# (charts/kueue/templates/webhook/manifests.yaml: `mpod.kb.io` fails closed, and without the
# key selects every namespace but kube-system and kueue-system), so accelfleet sets it; the
# rest is the chart's default, unchanged.
MANAGER_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {"groupKindConcurrency": {
        "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10,
        "LocalQueue.kueue.x-k8s.io": 5, "ClusterQueue.kueue.x-k8s.io": 5,
        "ResourceFlavor.kueue.x-k8s.io": 1}},
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {"frameworks": [
        "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/rayservice",
        "ray.io/raycluster", "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper",
        "trainer.kubeflow.org/trainjob", "pod", "deployment", "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset"]},
}
def controller_resources(nodes: int) -> dict[str, Any]:
    """Requests = limits, sized by the cluster's largest node count, as xpk does: the figures
    are fleet.pods.kueue_requests, which the fit check (fleet.rules.fit) places too."""
    cpu, memory = kueue_requests(nodes)
    amount = {"cpu": str(cpu // 1000), "memory": f"{memory}Mi"}
    return {"requests": dict(amount), "limits": dict(amount)}


def managed_namespaces_selector(namespaces: Sequence[str]) -> dict[str, Any]:
    """The namespaces Kueue manages (its webhooks see): the team queues' and the smoke
    namespace where a queued pool needs it; with none, only namespaces labelled as a team's."""
    if namespaces:
        return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In",
                                      "values": sorted(set(namespaces))}]}
    return {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}


def kueue_controller_values(image_repository: str, image_tag: str,
                            node_selector: Mapping[str, str], *, nodes: int = 0,
                            namespaces: Sequence[str] = ()) -> dict[str, Any]:
    """Kueue's Helm values: the pinned image, the system pool's nodes, resources sized by the
    cluster's `nodes` (xpk's rule), and its webhooks scoped to the `namespaces` it manages.

    The chart takes a nodeSelector and tolerations, no affinity: no tolerations keeps the
    controller off every tainted accelerator node, and the selector (the system pool's
    `accelfleet.io/pool` label, when the cluster has one) off untainted CPU pools too.
    The manager's configuration is the chart's (every job framework with
    `manageJobsWithoutQueueName: false`, so only jobs that name a queue are queued) plus
    `managedJobsNamespaceSelector`: the pod webhook fails closed, and in every namespace
    while Kueue is down no pod (device plugins on new GPU nodes, smoke pods) could be made.
    """
    manager: dict[str, Any] = {
        "image": {"repository": image_repository, "tag": image_tag,
                  "pullPolicy": "IfNotPresent"},
        "resources": controller_resources(nodes)}
    controller: dict[str, Any] = {"manager": manager}
    if node_selector:
        controller["nodeSelector"] = dict(node_selector)
    config = {**MANAGER_CONFIG,
              "managedJobsNamespaceSelector": managed_namespaces_selector(namespaces)}
    return {"controllerManager": controller,
            "managerConfig": {"controllerManagerConfigYaml": json.dumps(config, indent=2)}}


@dataclass(frozen=True)
class KueueControllerArgs:
    """node_selector: the nodes the controller runs on (the system pool's label), or none;
    nodes: the cluster's nodes at their most; namespaces: those Kueue manages."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    nodes: int = 0
    namespaces: tuple[str, ...] = ()


class KueueController(pulumi.ComponentResource):
    """The Kueue Helm release; pass the cluster's Kubernetes provider in `opts`, and in its
    `depends_on` the system pool's nodes (an atomic release with no node rolls back)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KueueControllerArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CONTROLLER_TYPE, name, None, opts)
        values = kueue_controller_values(KUEUE_IMAGE_REPOSITORY, KUEUE_IMAGE_TAG,
                                         args.node_selector, nodes=args.nodes,
                                         namespaces=args.namespaces)
        self.release = pinned_release(f"{name}-{KUEUE.chart}", KUEUE, values,
                                      release_opts(self, opts))
        self.register_outputs({"version": self.release.version,
                               "namespace": self.release.namespace})


# -- the objects --------------------------------------------------------------------------------
def _object(kind: str, name: str, spec: dict[str, Any], labels: Mapping[str, str],
            namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {**MANAGED, **labels}}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def cohort(routing: ClusterRouting) -> dict[str, Any]:
    """The cluster's cohort. It holds no quota of its own: its queues lend to each other."""
    return _object("Cohort", routing.cohort, {}, {})


def resource_flavor(f: Flavor) -> dict[str, Any]:
    """A pool's flavor: Kueue adds its node labels (as a node selector) and its tolerations to
    the pods it admits on it, so a team's job needs to know neither."""
    spec: dict[str, Any] = {"nodeLabels": dict(f.node_labels)}
    if f.tolerations:
        spec["tolerations"] = [dict(t) for t in f.tolerations]
    return _object("ResourceFlavor", f.name, spec, {POOL_LABEL: f.pool, TEAM_LABEL: f.team})


# Kueue's ProvisioningRequest admission check, the only way a GKE queued-provisioning pool
# gets nodes (https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest).
# As GoogleCloudPlatform/cluster-toolkit@1047080375afbb44da4b596be314634e7486af4a:
# examples/gke-consumption-options/dws-flex-start-queued-provisioning/dws-queues.yaml.tftpl
# (GPU: managedResources nvidia.com/gpu) and tpu-dws-queues.yaml.tftpl (TPU: managedResources
# google.com/tpu, parameters `tpu-topology`), and AI-Hypercomputer/xpk@367c838253bea41e7d77
# 16145ad6513f44c1a21e:src/xpk/templates/kueue_config.yaml.j2 (podSetUpdates: the admitted
# pods select the nodes of their own request by `autoscaling.gke.io/provisioning-request`,
# the label the real nodes carry). v1beta2 has no `spec.admissionChecks` on a ClusterQueue
# (Cluster Toolkit's template sets it; the v0.19.2 CRD prunes it): the check goes in
# `admissionChecksStrategy`, on the queued flavors only.
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"
PROVISIONING_REQUEST_LABEL = "autoscaling.gke.io/provisioning-request"


def provisioning_check_name(f: Flavor) -> str:
    return f"{f.name}-dws"


def provisioning_request_config(f: Flavor) -> dict[str, Any]:
    """A queued flavor's ProvisioningRequestConfig: GKE's queued-provisioning class, the
    device resource it provisions for, the slice topology of a TPU pool."""
    spec: dict[str, Any] = {
        "provisioningClassName": QUEUED_PROVISIONING_CLASS,
        "managedResources": [f.device_resource] if f.device_resource else [],
        "podSetUpdates": {"nodeSelector": [{
            "key": PROVISIONING_REQUEST_LABEL,
            "valueFromProvisioningClassDetail": "ResizeRequestName"}]},
    }
    if f.topology is not None and f.device_resource == "google.com/tpu":
        spec["parameters"] = {"tpu-topology": f.topology}
    return _object("ProvisioningRequestConfig", provisioning_check_name(f), spec,
                   {POOL_LABEL: f.pool, TEAM_LABEL: f.team})


def admission_check(f: Flavor) -> dict[str, Any]:
    spec = {"controllerName": PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                           "name": provisioning_check_name(f)}}
    return _object("AdmissionCheck", provisioning_check_name(f), spec,
                   {POOL_LABEL: f.pool, TEAM_LABEL: f.team})


def cluster_queue(q: TeamQueue, queued: Sequence[Flavor] = ()) -> dict[str, Any]:
    """A team's ClusterQueue: one resource group covering every resource of its flavors, the
    flavors in routing order, only the team's namespace may point a LocalQueue at it; on each
    `queued` flavor it holds, Kueue's ProvisioningRequest admission check."""
    flavors = []
    for f in q.flavors:
        resources = []
        for r in q.resources:
            item = {"name": r, "nominalQuota": quantity(r, f.nominal[r])}
            if f.borrowing_limit is not None:
                item["borrowingLimit"] = quantity(r, f.borrowing_limit[r])
            if f.lending_limit is not None:
                item["lendingLimit"] = quantity(r, f.lending_limit[r])
            resources.append(item)
        flavors.append({"name": f.flavor, "resources": resources})
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: q.namespace or q.name}},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": dict(FUNGIBILITY),
        "preemption": dict(PREEMPTION),
        "resourceGroups": [{"coveredResources": list(q.resources), "flavors": flavors}],
    }
    if q.cohort:
        spec = {"cohortName": q.cohort, **spec}
    else:  # outside a cohort nothing is lent or reclaimed
        spec["preemption"] = {"withinClusterQueue": PREEMPTION["withinClusterQueue"]}
    mine = {f.flavor for f in q.flavors}
    checks = [{"name": provisioning_check_name(f), "onFlavors": [f.name]}
              for f in queued if f.name in mine]
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return _object("ClusterQueue", q.name, spec, {TEAM_LABEL: q.team})


def local_queue(q: TeamQueue) -> dict[str, Any]:
    return _object("LocalQueue", q.name, {"clusterQueue": q.name}, {TEAM_LABEL: q.team},
                   namespace=q.namespace or q.name)


def namespace(q: TeamQueue) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": q.namespace or q.name,
                         "labels": {**MANAGED, TEAM_LABEL: q.team}}}


def kueue_objects(routing: ClusterRouting) -> list[dict[str, Any]]:
    """Every object of a cluster's routing, in the order they are created."""
    objs = [cohort(routing), *(resource_flavor(f) for f in routing.flavors)]
    for f in routing.queued:
        objs += [provisioning_request_config(f), admission_check(f)]
    for q in all_queues(routing):
        objs += [namespace(q), cluster_queue(q, routing.queued), local_queue(q)]
    return objs


def all_queues(routing: ClusterRouting) -> tuple[TeamQueue, ...]:
    """The team queues, and the smoke queue where the cluster has queued pools."""
    return (*routing.queues, *((routing.smoke,) if routing.smoke is not None else ()))


def managed_namespaces(routing: ClusterRouting | None) -> tuple[str, ...]:
    """The namespaces Kueue manages on a cluster: every queue's."""
    if routing is None:
        return ()
    return tuple(q.namespace or q.name for q in all_queues(routing))


@dataclass(frozen=True)
class KueueQueuesArgs:
    routing: ClusterRouting


class KueueQueues(pulumi.ComponentResource):
    """A cluster's cohort, flavors and team queues. Pass the cluster's provider in `opts` and
    the Kueue release in its `depends_on`: the CRDs and the admission webhook come with it."""

    def __init__(self, name: str, args: KueueQueuesArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(QUEUES_TYPE, name, None, opts)
        after: list[pulumi.Resource] = (list(opts.depends_on) if opts is not None and
                                        isinstance(opts.depends_on, list) else [])
        routing = args.routing

        def apply(obj: dict[str, Any], wait: list[pulumi.Resource]
                  ) -> k8s.apiextensions.CustomResource:
            return k8s.apiextensions.CustomResource(
                f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}",
                api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj["metadata"],
                spec=obj["spec"], opts=pulumi.ResourceOptions(parent=self, depends_on=wait))

        # the queues wait for the cohort, the flavors and the admission checks they name
        shared = [apply(cohort(routing), after),
                  *(apply(resource_flavor(f), after) for f in routing.flavors)]
        for f in routing.queued:
            config = apply(provisioning_request_config(f), after)
            shared.append(apply(admission_check(f), [*after, config]))
        for q in all_queues(routing):
            ns_obj = namespace(q)
            ns = k8s.core.v1.Namespace(f"{name}-namespace-{q.name}",
                                       metadata=ns_obj["metadata"],
                                       opts=pulumi.ResourceOptions(parent=self))
            queue = apply(cluster_queue(q, routing.queued), [*after, *shared])
            apply(local_queue(q), [*after, ns, queue])
        self.register_outputs({"cohort": routing.cohort,
                               "flavors": [f.name for f in routing.flavors],
                               "queues": [q.name for q in routing.queues]})


def install_queueing(parent: pulumi.Resource, cluster: str, routing: ClusterRouting | None,
                     provider: pulumi.ProviderResource, addon_nodes: list[pulumi.Resource],
                     *, system_pool: bool) -> list[pulumi.Resource]:
    """JobSet and Kueue on a cluster, each waiting for the system pool's nodes, then the
    cluster's routing once Kueue (its CRDs and webhook) is up; returns the routing's component
    (it makes the team and smoke namespaces), if any.

    Every cluster gets both, GPU-only ones too, as the references do: Cluster Toolkit installs
    JobSet on its GPU clusters (examples/gke-a3-megagpu, gke-a3-ultragpu, gke-a4: `jobset:
    install: true`), xpk on every cluster it makes, and Kueue queues JobSets (a multi-node GPU
    job is one JobSet just as a multi-host TPU slice is). Kueue v0.19.2 needs no order between
    the two: it starts its JobSet integration once the JobSet API appears
    (pkg/controller/jobframework/setup.go, WaitForAPI).
    """
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=addon_nodes)
    selector = {POOL_LABEL: SYSTEM_POOL} if system_pool else {}
    JobSetController(cluster, JobSetControllerArgs(node_selector=selector), opts)
    nodes = sum(f.nodes for f in routing.flavors) if routing is not None else 0
    kueue = KueueController(cluster, KueueControllerArgs(
        node_selector=selector, nodes=nodes, namespaces=managed_namespaces(routing)), opts)
    if routing is not None and (routing.flavors or routing.queues):
        return [KueueQueues(f"{cluster}-queues", KueueQueuesArgs(routing),
                            pulumi.ResourceOptions(parent=parent, provider=provider,
                                                   depends_on=[kueue.release]))]
    return []


def cluster_routing(fleet: Fleet, catalog: Catalog, cluster: str) -> ClusterRouting | None:
    """One cluster's routing, for callers that build a cluster alone (`Fleet` decides every
    cluster's once and passes it in `ClusterArgs.routing`): the validated fleet's own
    (`Fleet.routing`); `catalog` is unused, kept for callers that pass one."""
    del catalog
    return fleet.cluster_routing(cluster)
