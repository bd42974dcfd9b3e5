"""`GateController`: the gate controller in its cluster (docs/gate.md), on the system pool.

The objects are plain dicts built by `gate_objects` (tests check them against the Kubernetes
schemas, strict), applied through the cluster's provider:

    Namespace           the smoke namespace (`smoke.namespace`): the proof pods are smoke pods,
                        and on a cluster with queued pools the smoke LocalQueue is there (the
                        Kueue routing creates the namespace then, and this component does not)
    ServiceAccount      accelfleet-gate, in that namespace
    ClusterRole(+Binding)  nodes get/list/watch/patch, nodes/status patch (the proof's node
                        condition), events create (Events about Nodes live in `default`),
                        pods list (a re-proof takes only an idle node: its pods are read)
    Role(+Binding)      in the namespace only: Jobs, JobSets, ConfigMaps, Services
                        create/get/deletecollection, pods patch/deletecollection,
                        pods/log get, Leases get/create/update (leader election): the calls
                        the controller makes, never a wildcard
    Role(+Binding)      in each namespace whose Kueue LocalQueue a gated pool's re-proofs go
                        through (the owner team's): what one proof does there, no Lease
    Role(+Binding)      in the DCGM exporter's namespace, where `exporter_namespace` is set:
                        pods/proxy get (the exporter of a proven node read between proofs)
    WorkloadPriorityClass  accelfleet-gate-reproof (kueue.x-k8s.io/v1beta2), the lowest value,
                        where some gated pool is routed through Kueue: its re-proofs carry it
    PriorityClass       accelfleet-gate (scheduling.k8s.io/v1, `fleet.gate.CONTROLLER_PRIORITY`):
                        the controller's pods, above team workloads (fleet/gate.py says why
                        not system-cluster-critical)
    ConfigMap           accelfleet-gate-inventory: the cluster's pools of the inventory
                        (`Inventory.to_dict()`), mounted at /etc/accelfleet
    Deployment          `accelfleet gate run --in-cluster ...` on the system pool, replicas
                        from `gate.replicas` (one leads through a Lease), non-root, read-only
                        root filesystem, requests and limits from `fleet.gate`, /healthz and
                        /readyz on 8080, /metrics on 9090; `gate.image_pull_secrets` as its
                        imagePullSecrets and passed on to every proof pod
                        (`--image-pull-secret`)
    PodDisruptionBudget accelfleet-gate (policy/v1): a drain evicts one replica at a time
                        (`maxUnavailable: 1`), never blocked by a replica that is not ready
                        (`unhealthyPodEvictionPolicy: AlwaysAllow`); see `pod_disruption_budget`
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.outputs import ClusterOutputs
from fleet import gate as G
from fleet.labels import GATE_INVENTORY_DIGEST_ANNOTATION
from fleet.model import POOL_LABEL, SYSTEM_POOL, Fleet

TYPE = "accelfleet:k8s:GateController"
NAME = G.CONTROLLER_NAME
APP_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "accelfleet"}
USER_ID = 65532  # the image's non-root user (docker/gate.Dockerfile)
# What a proof does to its own objects (smoke.cluster.launcher): create them, read one back
# (an idempotent create that met 409 Conflict; a Job's or JobSet's status while Kueue holds
# it) and delete a run's objects by label, as collections. It never deletes one object by
# name, never lists or watches them (its pods it lists, below). Every rule here is a call the
# controller makes: tests/controlplane/test_gate_rbac_real.py reads the real API server's
# audit log of a proof and fails on a rule no call uses, and on a call no rule grants.
VERBS_OBJECTS = ["create", "get", "deletecollection"]
# the proof's pods: the launcher patches a multi-host TPU slice's pods when the last host
# started (the slice-started annotation, read by the agents through a downward API file:
# issue 28) and deletes them by label; it lists them too, which the ClusterRole grants in
# every namespace already (the re-proof's idle check), so no Role repeats it
VERBS_PODS = ["patch", "deletecollection"]
# Every permission the controller holds: (apiGroup, resource, verbs). Nothing else, no "*".
CLUSTER_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "nodes", ("get", "list", "watch", "patch")),
    ("", "nodes/status", ("patch",)),
    ("", "events", ("create",)),  # Events about Nodes (in `default`), each one new
    # a re-proof takes only an idle node: every pod bound to a node, listed then watched (the
    # idle check's cache, smoke.gate._informer, issue 35), and a just-claimed node's pods
    # listed; a proof's own pods, followed
    ("", "pods", ("list", "watch")),
)
NAMESPACE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("batch", "jobs", tuple(VERBS_OBJECTS)),
    ("jobset.x-k8s.io", "jobsets", tuple(VERBS_OBJECTS)),
    ("", "pods", tuple(VERBS_PODS)),
    ("", "pods/log", ("get",)),  # the one verb the log subresource serves
    ("", "configmaps", tuple(VERBS_OBJECTS)),
    ("", "services", tuple(VERBS_OBJECTS)),  # a proof's headless Service (its pods' DNS)
    ("", "events", ("list",)),  # the scheduler's reason a proof pod waits
    ("autoscaling.x-k8s.io", "provisioningrequests", ("list",)),  # why Kueue holds a proof
    ("coordination.k8s.io", "leases", ("get", "create", "update")),
)
# In each namespace whose Kueue LocalQueue a pool's re-proofs go through (the owner team's,
# `InventoryGate.queue_namespace`): what one proof does there, nothing else (no Lease, no
# ProvisioningRequest: a queued-provisioning pool's re-proof does not go through Kueue). A
# TPU slice's re-proof patches its pods there too (issue 35: refused before).
QUEUE_NAMESPACE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("batch", "jobs", tuple(VERBS_OBJECTS)),
    ("jobset.x-k8s.io", "jobsets", tuple(VERBS_OBJECTS)),
    ("", "pods", tuple(VERBS_PODS)),
    ("", "pods/log", ("get",)),
    ("", "configmaps", tuple(VERBS_OBJECTS)),
    ("", "services", tuple(VERBS_OBJECTS)),
    ("", "events", ("list",)),
)
# In the DCGM exporter's namespace (`GateControllerArgs.exporter_namespace`): the exporter pod
# of a proven node read through the API server's proxy (smoke.gate._exporter; the pods are
# found with the ClusterRole's pods list). A Role, not the ClusterRole: pods/proxy reaches any
# port of a pod, so it is granted where the exporter runs and nowhere else.
EXPORTER_NAMESPACE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "pods/proxy", ("get",)),
)
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"  # as components/k8s/_kueue.py (v0.19.2 stores it)


@dataclass(frozen=True)
class GateControllerArgs:
    """cluster: its name (the controller's `--cluster`); namespace: the smoke namespace;
    inventory: the cluster's pools of the inventory (`Inventory.to_dict()` filtered);
    image, replicas, image_pull_secrets: the stack's `gate:`; node_selector: the system
    pool's label (none without a system pool); create_namespace: False where the Kueue
    routing creates it."""

    cluster: str
    namespace: str
    inventory: Mapping[str, Any]
    image: str = G.CONTROLLER_IMAGE
    replicas: int = G.CONTROLLER_REPLICAS
    image_pull_secrets: tuple[str, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    create_namespace: bool = True
    # where the cluster's DCGM exporter runs (fleet.gate.DCGM_EXPORTER_NAMESPACE where the
    # GpuAddons deploy it): the controller may read its pods there (pods/proxy); None: no
    # exporter, no such Role
    exporter_namespace: str | None = None


def _own_namespace(ns: str, more: list[str] | None = None) -> list[dict[str, Any]]:
    """Reading its own Namespace (the launcher reads it before creating it) and those its
    re-proofs' queues are in: a Namespace is cluster-scoped, so a Role cannot grant it; the
    ClusterRole does, for those names alone."""
    return [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"],
             "resourceNames": [ns, *(more or [])]}]


def queue_namespaces(inventory: Mapping[str, Any], namespace: str) -> list[str]:
    """The namespaces of the Kueue queues the gated pools' re-proofs go through (sorted; the
    controller's own left out)."""
    out = set()
    for p in inventory.get("pools", []):
        gate = p.get("gate") or {}
        if gate.get("enabled", True) and gate.get("queue"):
            out.add(str(gate.get("queue_namespace") or gate["queue"]))
    return sorted(out - {namespace})


def uses_kueue(inventory: Mapping[str, Any]) -> bool:
    """Whether a gated pool's re-proofs go through a Kueue queue (then the gate's
    WorkloadPriorityClass is made)."""
    return any((p.get("gate") or {}).get("enabled", True) and (p.get("gate") or {}).get("queue")
               for p in inventory.get("pools", []))


def priority_class(labels: Mapping[str, str]) -> dict[str, Any]:
    """The lowest Kueue priority, for re-proofs (fleet.gate.REPROOF_PRIORITY_CLASS). A
    WorkloadPriorityClass has `value` and `description` at the top level, no spec (kueue
    v0.19.2 config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml)."""
    return {"apiVersion": KUEUE_API_VERSION, "kind": "WorkloadPriorityClass",
            "metadata": {"name": G.REPROOF_PRIORITY_CLASS, "labels": dict(labels)},
            "value": G.REPROOF_PRIORITY,
            "description": "accelfleet gate re-proofs of idle nodes: below every workload, "
                           "preempted first (docs/gate.md)"}


def _rules(rules: tuple[tuple[str, str, tuple[str, ...]], ...]) -> list[dict[str, Any]]:
    return [{"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}
            for group, resource, verbs in rules]


def _quantity(figures: Mapping[str, int]) -> dict[str, str]:
    return {"cpu": f"{figures['cpu_m']}m", "memory": f"{figures['memory_mib']}Mi"}


def controller_args(cluster: str, namespace: str, pull_secrets: tuple[str, ...] = ()
                    ) -> list[str]:
    """The controller's command line (smoke/gate implements it; one spelling, here)."""
    return ["gate", "run", "--in-cluster",
            "--inventory", f"{G.INVENTORY_DIR}/{G.INVENTORY_FILE}",
            "--cluster", cluster, "--namespace", namespace,
            "--health-port", str(G.HEALTH_PORT), "--metrics-port", str(G.METRICS_PORT),
            *(arg for name in pull_secrets for arg in ("--image-pull-secret", name))]


def controller_priority_class(labels: Mapping[str, str]) -> dict[str, Any]:
    """The controller pods' PriorityClass (fleet.gate.CONTROLLER_PRIORITY says why this value
    and not system-cluster-critical). `preemptionPolicy` left to its default,
    PreemptLowerPriority: on a full system pool the scheduler makes room for the controller."""
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": G.CONTROLLER_PRIORITY_CLASS, "labels": dict(labels)},
            "value": G.CONTROLLER_PRIORITY, "globalDefault": False,
            "description": "accelfleet gate controller: while it is down no new accelerator "
                           "node is proven (docs/gate.md)"}


def pod_disruption_budget(namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The controller's PodDisruptionBudget. A leader-elected controller of `gate.replicas`
    (2 by default) acts through one replica; the other waits. `maxUnavailable: 1`: a drain
    or an upgrade evicts one replica at a time, so the standby takes over while the other
    moves, and it never blocks a drain (`minAvailable: 1` with one replica, or
    `maxUnavailable: 0`, would: "If you try to drain a Node where an unevictable Pod is
    running, the drain never completes"; `maxUnavailable` follows the replica count:
    kubernetes/website 0189ae0f6bf2a79ff2e4bfd5f9ec0da98d64c5d2
    content/en/docs/tasks/run-application/configure-pdb.md, read 2026-11-28).
    `unhealthyPodEvictionPolicy: AlwaysAllow`: a replica that is not ready (crash-looping, its
    node list refused) may always be evicted, never holding a drain (policy/v1
    PodDisruptionBudgetSpec, the field's doc in k8s.io/api; on by default since Kubernetes
    1.27, GA in 1.31)."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(labels)},
            "spec": {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
                     "selector": {"matchLabels": dict(APP_LABELS)}}}


def _deployment(args: GateControllerArgs) -> dict[str, Any]:
    meta = {"name": NAME, "namespace": args.namespace, "labels": dict(APP_LABELS)}
    probe = {"periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 3}
    container = {
        "name": "controller", "image": args.image, "imagePullPolicy": "IfNotPresent",
        "command": ["accelfleet"],
        "args": controller_args(args.cluster, args.namespace, args.image_pull_secrets),
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE",
             "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "ports": [{"name": "health", "containerPort": G.HEALTH_PORT, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": G.METRICS_PORT, "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"},
                          "initialDelaySeconds": 10, **probe},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"},
                           "initialDelaySeconds": 5, **probe},
        "resources": {"requests": _quantity(G.controller_requests()),
                      "limits": _quantity(G.CONTROLLER_LIMITS)},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "runAsUser": USER_ID, "runAsGroup": USER_ID,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "inventory", "mountPath": G.INVENTORY_DIR, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    pod: dict[str, Any] = {
        "serviceAccountName": NAME,
        "priorityClassName": G.CONTROLLER_PRIORITY_CLASS,
        "securityContext": {"runAsNonRoot": True, "runAsUser": USER_ID,
                            "runAsGroup": USER_ID, "fsGroup": USER_ID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        # two replicas on two nodes where the system pool has them: one node lost, one leads
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchLabels": dict(APP_LABELS)},
                "topologyKey": "kubernetes.io/hostname"}}]}},
        "containers": [container],
        "volumes": [{"name": "inventory", "configMap": {"name": G.INVENTORY_CONFIGMAP}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
    }
    if args.node_selector:
        pod["nodeSelector"] = dict(args.node_selector)
    if args.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": n} for n in args.image_pull_secrets]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": args.replicas,
                     "selector": {"matchLabels": dict(APP_LABELS)},
                     "template": {"metadata": {
                         "labels": dict(APP_LABELS),
                         "annotations": {GATE_INVENTORY_DIGEST_ANNOTATION: hashlib.sha256(
                             _inventory_text(args).encode()).hexdigest()}},
                         "spec": pod}}}


def _inventory_text(args: GateControllerArgs) -> str:
    """The mounted inventory file's text (its digest is on the pod template)."""
    return json.dumps(args.inventory, indent=1, sort_keys=True)


def gate_objects(args: GateControllerArgs) -> list[dict[str, Any]]:
    """Every object of the gate controller, in the order they are created."""
    ns = args.namespace
    labels = dict(APP_LABELS)
    subject = [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}]
    objs: list[dict[str, Any]] = []
    if args.create_namespace:
        objs.append({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": ns, "labels": labels}})
    queued = queue_namespaces(args.inventory, ns)
    objs += [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": NAME, "namespace": ns, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": NAME, "labels": labels},
         "rules": [*_rules(CLUSTER_RULES), *_own_namespace(ns, queued)]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": NAME, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": NAME}, "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": NAME, "namespace": ns, "labels": labels},
         "rules": _rules(NAMESPACE_RULES)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": NAME, "namespace": ns, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
         "subjects": subject},
    ]
    for q in queued:  # where re-proofs go through a team's queue
        objs += [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": NAME, "namespace": q, "labels": labels},
             "rules": _rules(QUEUE_NAMESPACE_RULES)},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": NAME, "namespace": q, "labels": labels},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                         "name": NAME}, "subjects": subject}]
    if args.exporter_namespace:  # the DCGM exporter's pods, read through the API's proxy
        objs += [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": NAME, "namespace": args.exporter_namespace,
                          "labels": labels}, "rules": _rules(EXPORTER_NAMESPACE_RULES)},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": NAME, "namespace": args.exporter_namespace,
                          "labels": labels},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                         "name": NAME}, "subjects": subject}]
    if uses_kueue(args.inventory):
        objs.append(priority_class(labels))
    objs += [
        controller_priority_class(labels),
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": G.INVENTORY_CONFIGMAP, "namespace": ns, "labels": labels},
         "data": {G.INVENTORY_FILE: _inventory_text(args)}},
        _deployment(args),
        pod_disruption_budget(ns, labels),
    ]
    return objs


class GateController(pulumi.ComponentResource):
    """The gate controller on one cluster; pass the cluster's provider in `opts`, and in its
    `depends_on` the system pool's nodes (and the smoke namespace where Kueue makes it)."""

    def __init__(self, name: str, args: GateControllerArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        after: list[pulumi.Resource] = (list(opts.depends_on) if opts is not None and
                                        isinstance(opts.depends_on, list) else [])
        made: list[pulumi.Resource] = []
        names: list[str] = []
        for obj in gate_objects(args):
            rname = f"{name}-{obj['kind'].lower()}"
            if obj["metadata"].get("namespace", args.namespace) != args.namespace:
                rname = f"{rname}-{obj['metadata']['namespace']}"  # a queue's namespace
            names.append(rname)
            child = pulumi.ResourceOptions(parent=self, depends_on=[*after, *made[:1]])
            meta = obj["metadata"]
            kind = obj["kind"]
            res: pulumi.Resource
            if kind == "Namespace":
                res = k8s.core.v1.Namespace(rname, metadata=meta, opts=child)
            elif kind == "ServiceAccount":
                res = k8s.core.v1.ServiceAccount(rname, metadata=meta, opts=child)
            elif kind == "ClusterRole":
                res = k8s.rbac.v1.ClusterRole(rname, metadata=meta, rules=obj["rules"],
                                              opts=child)
            elif kind == "ClusterRoleBinding":
                res = k8s.rbac.v1.ClusterRoleBinding(rname, metadata=meta,
                                                     role_ref=obj["roleRef"],
                                                     subjects=obj["subjects"], opts=child)
            elif kind == "Role":
                res = k8s.rbac.v1.Role(rname, metadata=meta, rules=obj["rules"], opts=child)
            elif kind == "RoleBinding":
                res = k8s.rbac.v1.RoleBinding(rname, metadata=meta, role_ref=obj["roleRef"],
                                              subjects=obj["subjects"], opts=child)
            elif kind == "WorkloadPriorityClass":
                res = _TopLevelCustomResource(rname, obj, child)
            elif kind == "ConfigMap":
                res = k8s.core.v1.ConfigMap(rname, metadata=meta, data=obj["data"],
                                            opts=child)
            elif kind == "PriorityClass":
                res = k8s.scheduling.v1.PriorityClass(
                    rname, metadata=meta, value=obj["value"],
                    global_default=obj["globalDefault"], description=obj["description"],
                    # the API server refuses to change these in place (replacements.yaml)
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                        replace_on_changes=["value", "preemptionPolicy"])))
            elif kind == "PodDisruptionBudget":
                res = k8s.policy.v1.PodDisruptionBudget(rname, metadata=meta, spec=obj["spec"],
                                                        opts=child)
            elif kind == "Deployment":
                res = k8s.apps.v1.Deployment(rname, metadata=meta, spec=obj["spec"],
                                             opts=pulumi.ResourceOptions(
                                                 parent=self, depends_on=[*after, *made]))
            else:
                raise AssertionError(f"gate_objects made a {kind} GateController cannot create")
            made.append(res)
        self.register_outputs({"namespace": args.namespace, "objects": names,
                               "image": args.image, "replicas": args.replicas})


class _TopLevelCustomResource(pulumi.CustomResource):
    """A custom resource whose fields sit beside `metadata`, not in a `spec` (a Kueue
    WorkloadPriorityClass): `k8s.apiextensions.CustomResource` takes only `spec` in Python,
    while the Kubernetes provider sends every input of a `kubernetes:<group>/<version>:<Kind>`
    resource as the object."""

    def __init__(self, name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions
                 ) -> None:
        from importlib.metadata import version

        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            version=version("pulumi_kubernetes")))  # the plugin the SDK's own resources ask
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", name, dict(obj),
                         opts)


def wants_dcgm_exporter(fleet: Fleet, cluster: str) -> bool:
    """Whether `cluster` gets NVIDIA's DCGM exporter (components.k8s.GpuAddons on EKS,
    components.gcp on GKE) and the gate its Role to read it: a gated GPU pool there, and the
    stack's `gate.dcgm_exporter` (on by default)."""
    return fleet.spec.gate.dcgm_exporter and any(
        p.gated and p.shape.kind == "gpu" for p in fleet.pools_in(cluster))


def install_gate(fleet: Fleet, cluster: str, built: ClusterOutputs,
                 inventory: Mapping[str, Any], parent: pulumi.ResourceOptions
                 ) -> GateController | None:
    """The gate controller on `cluster` when one of its pools is gated (None otherwise), with
    the stack's `gate:` settings and the cluster's part of `inventory` (Inventory.to_dict())."""
    if not any(p.gated for p in fleet.pools_in(cluster)):
        return None
    routing = fleet.cluster_routing(cluster)
    settings = fleet.spec.gate
    mine = {**inventory, "pools": [p for p in inventory.get("pools", [])
                                   if p.get("cluster") == cluster]}
    return GateController(f"{cluster}-gate", GateControllerArgs(
        cluster=cluster, namespace=fleet.spec.smoke.namespace, inventory=mine,
        image=settings.image or G.CONTROLLER_IMAGE, replicas=settings.replicas,
        image_pull_secrets=tuple(settings.image_pull_secrets),
        node_selector={POOL_LABEL: SYSTEM_POOL} if fleet.system_pool(cluster) else {},
        create_namespace=routing is None or routing.smoke is None,
        exporter_namespace=G.DCGM_EXPORTER_NAMESPACE if wants_dcgm_exporter(fleet, cluster)
        else None),
        pulumi.ResourceOptions.merge(parent, pulumi.ResourceOptions(
            provider=built.provider, depends_on=list(built.ready))))
