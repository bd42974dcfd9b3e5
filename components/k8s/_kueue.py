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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s._addons import pinned_release, release_opts
from components.k8s._charts import KUEUE, KUEUE_IMAGE_REPOSITORY, KUEUE_IMAGE_TAG
from components.k8s._jobset import JobSetController, JobSetControllerArgs
from fleet.catalog import Catalog
from fleet.model import POOL_LABEL, SYSTEM_POOL, TEAM_LABEL, Fleet
from fleet.routing import ClusterRouting, Flavor, TeamQueue, fleet_routing, quantity

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
def kueue_controller_values(image_repository: str, image_tag: str,
                            node_selector: Mapping[str, str]) -> dict[str, Any]:
    """Kueue's Helm values: the pinned image, and the system pool's nodes.

    The chart takes a nodeSelector and tolerations, no affinity: no tolerations keeps the
    controller off every tainted accelerator node, and the selector (the system pool's
    `accelfleet.io/pool` label, when the cluster has one) off untainted CPU pools too.
    Resources and the manager's configuration stay the chart's (requests 500m CPU / 512Mi;
    every job framework with `manageJobsWithoutQueueName: false`, so only jobs that name a
    queue are queued: accelfleet's smoke jobs are not).
    """
    manager: dict[str, Any] = {
        "image": {"repository": image_repository, "tag": image_tag,
                  "pullPolicy": "IfNotPresent"}}
    controller: dict[str, Any] = {"manager": manager}
    if node_selector:
        controller["nodeSelector"] = dict(node_selector)
    return {"controllerManager": controller}


@dataclass(frozen=True)
class KueueControllerArgs:
    """node_selector: the nodes the controller runs on (the system pool's label), or none."""

    node_selector: Mapping[str, str] = field(default_factory=dict)


class KueueController(pulumi.ComponentResource):
    """The Kueue Helm release; pass the cluster's Kubernetes provider in `opts`, and in its
    `depends_on` the system pool's nodes (an atomic release with no node rolls back)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KueueControllerArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CONTROLLER_TYPE, name, None, opts)
        values = kueue_controller_values(KUEUE_IMAGE_REPOSITORY, KUEUE_IMAGE_TAG,
                                         args.node_selector)
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


def cluster_queue(q: TeamQueue) -> dict[str, Any]:
    """A team's ClusterQueue: one resource group covering every resource of its flavors, the
    flavors in routing order, only the team's namespace may point a LocalQueue at it."""
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
    spec = {
        "cohortName": q.cohort,
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: q.name}},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": dict(FUNGIBILITY),
        "preemption": dict(PREEMPTION),
        "resourceGroups": [{"coveredResources": list(q.resources), "flavors": flavors}],
    }
    return _object("ClusterQueue", q.name, spec, {TEAM_LABEL: q.team})


def local_queue(q: TeamQueue) -> dict[str, Any]:
    return _object("LocalQueue", q.name, {"clusterQueue": q.name}, {TEAM_LABEL: q.team},
                   namespace=q.name)


def namespace(q: TeamQueue) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": q.name, "labels": {**MANAGED, TEAM_LABEL: q.team}}}


def kueue_objects(routing: ClusterRouting) -> list[dict[str, Any]]:
    """Every object of a cluster's routing, in the order they are created."""
    objs = [cohort(routing), *(resource_flavor(f) for f in routing.flavors)]
    for q in routing.queues:
        objs += [namespace(q), cluster_queue(q), local_queue(q)]
    return objs


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

        # the queues wait for the cohort and the flavors they name
        shared = [apply(cohort(routing), after),
                  *(apply(resource_flavor(f), after) for f in routing.flavors)]
        for q in routing.queues:
            ns_obj = namespace(q)
            ns = k8s.core.v1.Namespace(f"{name}-namespace-{q.name}",
                                       metadata=ns_obj["metadata"],
                                       opts=pulumi.ResourceOptions(parent=self))
            queue = apply(cluster_queue(q), [*after, *shared])
            apply(local_queue(q), [*after, ns, queue])
        self.register_outputs({"cohort": routing.cohort,
                               "flavors": [f.name for f in routing.flavors],
                               "queues": [q.name for q in routing.queues]})


def install_queueing(parent: pulumi.Resource, cluster: str, routing: ClusterRouting | None,
                     provider: pulumi.ProviderResource, addon_nodes: list[pulumi.Resource],
                     *, system_pool: bool) -> None:
    """JobSet and Kueue on a cluster, each waiting for the system pool's nodes, then the
    cluster's routing once Kueue (its CRDs and webhook) is up.

    Every cluster gets both, GPU-only ones too, as the references do: Cluster Toolkit installs
    JobSet on its GPU clusters (examples/gke-a3-megagpu, gke-a3-ultragpu, gke-a4: `jobset:
    install: true`), xpk on every cluster it makes, and Kueue queues JobSets (a multi-node GPU
    job is one JobSet just as a multi-host TPU slice is). Kueue v0.19.2 needs no order between
    the two: it starts its JobSet integration once the JobSet API appears
    (pkg/controller/jobframework/setup.go, WaitForAPI).
    """
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=addon_nodes)
    JobSetController(cluster, JobSetControllerArgs(), opts)
    selector = {POOL_LABEL: SYSTEM_POOL} if system_pool else {}
    kueue = KueueController(cluster, KueueControllerArgs(node_selector=selector), opts)
    if routing is not None and (routing.flavors or routing.queues):
        KueueQueues(f"{cluster}-queues", KueueQueuesArgs(routing), pulumi.ResourceOptions(
            parent=parent, provider=provider, depends_on=[kueue.release]))


def cluster_routing(fleet: Fleet, catalog: Catalog, cluster: str) -> ClusterRouting | None:
    """One cluster's routing, for callers that build a cluster alone (`Fleet` decides every
    cluster's once and passes it in `ClusterArgs.routing`)."""
    return next((r for r in fleet_routing(fleet, catalog) if r.cluster == cluster), None)
