"""The gate, deployed (issue 26 items 2 and 3, docs/gate.md), through Pulumi's mocks: the
startup taint in each API's spelling on GKE GPU node pools, every host of a multi-host TPU
slice and EKS managed node groups, the device plugins tolerating it; and the gate controller
per cluster with a gated pool: its objects valid against the Kubernetes schemas (strict),
least-privilege RBAC with no wildcard, the Deployment on the system pool with its probes,
ports, requests and limits, non-root and read-only, the cluster's inventory in its ConfigMap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from components.engine.plan import Plan, PlannedResource, run_plan
from components.k8s import GateControllerArgs, gate_objects
from fleet import gate as G
from fleet.inventory import Inventory
from fleet.labels import GATE_TAINT_KEY, POOL_LABEL
from tests.stacks import ONE_GKE_CLUSTER

K8S_VERSION = "1.33"
GATE_TYPE = "accelfleet:k8s:GateController"
IMAGE = "ghcr.io/acme/accelfleet-gate@sha256:" + "0123456789abcdef" * 4
STACK = """\
config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-test, region: us-central1}
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: c1, cloud: gcp}
      - {name: e1, cloud: aws, network: {cidr: 10.20.0.0/16}}
    teams:
      - {name: research}
    gate: {image: "IMAGE", replicas: 3}
    pools:
      - {name: h100, cluster: c1, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a}
      - {name: v5p, cluster: c1, team: research, accelerator: v5p, topology: 2x2x2,
         zone: us-central1-a}
      - {name: l4-q, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 2,
         zone: us-central1-a, capacity: queued, placement: none}
      - {name: l4-open, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a, gate: {enabled: false, reason: "inference canaries prove it"}}
      - {name: p5, cluster: e1, team: research, accelerator: p5.48xlarge, nodes: 2,
         zone: us-east-1a}
""".replace("IMAGE", IMAGE)
UNGATED = ONE_GKE_CLUSTER + """\
    pools:
      - {name: l4, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a, gate: {enabled: false, reason: "a test cluster"}}
"""
GKE_GATE = {"key": GATE_TAINT_KEY, "value": "unproven", "effect": "NO_SCHEDULE"}


def _plan(tmp: Path, name: str, text: str) -> Plan:
    path = tmp / f"Pulumi.{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return run_plan(path)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    return _plan(tmp_path_factory.mktemp("gate"), "gate", STACK)


def _controller(plan: Plan, cluster: str) -> list[PlannedResource]:
    return [r for r in plan.resources if f"{GATE_TYPE}$" in r.urn
            and r.urn.endswith(tuple(f"::{cluster}-gate-{k}" for k in (
                "namespace", "serviceaccount", "clusterrole", "clusterrolebinding", "role",
                "rolebinding", "configmap", "deployment")))]


def _manifest(r: PlannedResource) -> dict[str, Any]:
    return {k: r.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec", "rules",
                                     "roleRef", "subjects", "data") if k in r.inputs}


def _by_kind(plan: Plan, cluster: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["kind"]: _manifest(r) for r in _controller(plan, cluster)}


# -- the startup taint ----------------------------------------------------------------------
def test_gke_gpu_pools_and_every_tpu_host_carry_the_gate_taint(plan: Plan) -> None:
    pools = {r.inputs["name"]: r.inputs for r in
             plan.of_type("gcp:container/nodePool:NodePool")}
    for name in ("h100", "l4-q"):
        assert GKE_GATE in pools[name]["nodeConfig"]["taints"], name
    # the multi-host slice is one node pool: every host is created with the taint
    [v5p] = [p for n, p in pools.items() if n.startswith("v5p")]
    assert GKE_GATE in v5p["nodeConfig"]["taints"]
    assert GKE_GATE not in pools["l4-open"]["nodeConfig"]["taints"]  # opted out
    assert all(GKE_GATE not in p["nodeConfig"].get("taints", []) for n, p in pools.items()
               if n.startswith("system") or "system" in n)


def test_eks_node_groups_carry_it_and_the_device_plugins_tolerate_it(plan: Plan) -> None:
    groups = {r.name: r.inputs for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")}
    [p5] = [g for n, g in groups.items() if n.startswith("p5")]
    assert GKE_GATE in p5["taints"]  # the EKS API spells NO_SCHEDULE as GKE does
    assert all(GKE_GATE not in (g.get("taints") or []) for n, g in groups.items()
               if "system" in n)
    toleration = G.gate_toleration()
    releases = [r.inputs for r in plan.of_type("kubernetes:helm.sh/v3:Release")
                if r.inputs.get("chart") in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin")]
    assert len(releases) == 2
    for values in (r["values"] for r in releases):
        assert toleration in values["tolerations"]


# -- the controller -------------------------------------------------------------------------
def test_every_gated_cluster_gets_a_controller_of_valid_objects(plan: Plan) -> None:
    for cluster in ("c1", "e1"):
        objs = _by_kind(plan, cluster)
        assert set(objs) >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                             "RoleBinding", "ConfigMap", "Deployment"}, cluster
        for obj in objs.values():
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_a_cluster_without_a_gated_pool_has_no_controller(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    plan = _plan(tmp_path_factory.mktemp("ungated"), "ungated", UNGATED)
    assert not [r for r in plan.resources if GATE_TYPE in r.urn]


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def test_rbac_is_least_privilege_with_no_wildcard(plan: Plan) -> None:
    objs = _by_kind(plan, "c1")
    for kind in ("ClusterRole", "Role"):
        assert "*" not in _strings(objs[kind]["rules"]), kind
        assert all(len(r["apiGroups"]) == 1 and len(r["resources"]) == 1
                   for r in objs[kind]["rules"])
    cluster = {(r["apiGroups"][0], r["resources"][0]): r["verbs"]
               for r in objs["ClusterRole"]["rules"]}
    namespace = objs["Role"]["metadata"]["namespace"]
    assert cluster == {("", "nodes"): ["get", "list", "watch", "patch"],
                       ("", "nodes/status"): ["patch"], ("", "events"): ["create"],
                       ("", "pods"): ["list", "watch"], ("", "namespaces"): ["get"]}
    own = next(r for r in objs["ClusterRole"]["rules"] if r["resources"] == ["namespaces"])
    # its own namespace, and that of the queue its re-proofs go through (team research's)
    assert own["resourceNames"] == [namespace, "research"]
    ns = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in objs["Role"]["rules"]}
    # the calls a proof makes (tests/controlplane/test_gate_rbac_real.py: each one used)
    crud = ["create", "get", "deletecollection"]
    assert ns == {("batch", "jobs"): crud, ("jobset.x-k8s.io", "jobsets"): crud,
                  # a TPU slice's pods told it started; deleted by label (listed: the
                  # ClusterRole's pods list covers every namespace)
                  ("", "pods"): ["patch", "deletecollection"],
                  ("", "pods/log"): ["get"], ("", "configmaps"): crud,
                  ("", "services"): crud, ("", "events"): ["list"],
                  ("autoscaling.x-k8s.io", "provisioningrequests"): ["list"],
                  ("coordination.k8s.io", "leases"): ["get", "create", "update"]}
    # and no less: tests/smoke/test_gate_rbac.py runs the controller under these rules
    assert namespace == "accelfleet-smoke"  # the smoke namespace: proof pods are smoke pods
    for binding in ("RoleBinding", "ClusterRoleBinding"):
        assert objs[binding]["subjects"] == [{"kind": "ServiceAccount",
                                              "name": G.CONTROLLER_NAME,
                                              "namespace": namespace}]


def _queue_roles(plan: Plan, cluster: str) -> dict[str, dict[str, Any]]:
    """The gate's Roles and RoleBindings outside its namespace, by kind."""
    return {r.inputs["kind"]: _manifest(r) for r in plan.resources
            if f"{GATE_TYPE}$" in r.urn and r.urn.endswith((f"::{cluster}-gate-role-research",
                                                            f"::{cluster}-gate-rolebinding-"
                                                            "research"))}


def test_reproofs_through_a_teams_queue_get_only_a_proofs_rights_in_its_namespace(
        plan: Plan) -> None:
    """A re-proof on a pool Kueue routes is a Job in the owner team's namespace (its
    LocalQueue's): there the controller may do what one proof does, no Lease, no wildcard."""
    for cluster in ("c1", "e1"):
        objs = _queue_roles(plan, cluster)
        assert set(objs) == {"Role", "RoleBinding"}, cluster
        for obj in objs.values():
            assert obj["metadata"]["namespace"] == "research"
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"]
                 for r in objs["Role"]["rules"]}
        crud = ["create", "get", "deletecollection"]
        assert rules == {("batch", "jobs"): crud, ("jobset.x-k8s.io", "jobsets"): crud,
                         # patch: a TPU slice's re-proof there (issue 35: refused before)
                         ("", "pods"): ["patch", "deletecollection"],
                         ("", "pods/log"): ["get"],
                         ("", "configmaps"): crud, ("", "services"): crud,
                         ("", "events"): ["list"]}
        assert objs["RoleBinding"]["subjects"] == [{
            "kind": "ServiceAccount", "name": G.CONTROLLER_NAME,
            "namespace": "accelfleet-smoke"}]


def test_the_reproof_priority_class_is_kueues_lowest_and_valid_against_its_crd(
        plan: Plan) -> None:
    import jsonschema

    from tests.schemas import strict

    data = json.loads((Path(__file__).parent / "data" /
                       "kueue.x-k8s.io_workloadpriorityclasses-v0.19.2.json").read_text())
    assert "v0.19.2" in data["source"] and "v1beta2" in data["source"]
    check = jsonschema.Draft7Validator(strict(data["openAPIV3Schema"]),
                                       format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    classes = plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass")
    assert sorted(r.name for r in classes) == ["c1-gate-workloadpriorityclass",
                                               "e1-gate-workloadpriorityclass"]
    for r in classes:
        assert list(check.iter_errors(r.inputs)) == []
        assert r.inputs["metadata"]["name"] == G.REPROOF_PRIORITY_CLASS
        assert r.inputs["value"] == -(2**31)  # int32's least: below every workload
        assert "spec" not in r.inputs  # its fields are top-level; a spec would be pruned
    bad = {**classes[0].inputs, "spec": {"value": 1}}
    assert list(check.iter_errors(bad))  # the schema check can fail


def test_a_queued_pool_and_an_ungated_one_route_no_reproof_through_kueue(plan: Plan) -> None:
    """A queued-provisioning pool's queue asks GKE for new nodes, never the idle one: its
    re-proof stays out of Kueue; an opted-out pool has no gate to route."""
    [cm] = [r for r in _controller(plan, "c1") if r.inputs["kind"] == "ConfigMap"]
    pools = {p["name"]: p for p in json.loads(cm.inputs["data"][G.INVENTORY_FILE])["pools"]}
    assert (pools["h100"]["gate"]["queue"], pools["h100"]["gate"]["queue_namespace"]) == (
        "research", "research")
    assert pools["l4-q"]["gate"]["queue"] is None and pools["l4-q"]["kueue_queue"]
    assert pools["l4-open"]["gate"]["queue"] is None


def test_a_cluster_with_no_routed_gated_pool_has_no_priority_class() -> None:
    objs = gate_objects(GateControllerArgs(cluster="c", namespace="n", inventory={
        "pools": [{"name": "p", "gate": {"enabled": True, "queue": None}}]}))
    assert "WorkloadPriorityClass" not in {o["kind"] for o in objs}
    assert [o["metadata"]["namespace"] for o in objs if o["kind"] == "Role"] == ["n"]


def test_a_wildcard_anywhere_fails_the_check() -> None:
    """The check above fails on a `*` (the test that guards the RBAC can fail)."""
    objs = gate_objects(GateControllerArgs(cluster="c", namespace="n", inventory={}))
    role = next(o for o in objs if o["kind"] == "Role")
    role["rules"][0]["verbs"] = ["*"]
    assert "*" in _strings(role["rules"])


def test_the_deployment_runs_the_controller_on_the_system_pool(plan: Plan) -> None:
    deploy = _by_kind(plan, "c1")["Deployment"]
    spec = deploy["spec"]
    pod = spec["template"]["spec"]
    [c] = pod["containers"]
    assert spec["replicas"] == 3 and c["image"] == IMAGE  # the stack's gate:
    assert pod["nodeSelector"] == {POOL_LABEL: "system"}
    assert "tolerations" not in pod  # the system pool is untainted
    assert [c["command"][0], *c["args"]] == [
        "accelfleet", "gate", "run", "--in-cluster", "--inventory",
        "/etc/accelfleet/inventory.json", "--cluster", "c1", "--namespace", "accelfleet-smoke",
        "--health-port", "8080", "--metrics-port", "9090"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"health": 8080, "metrics": 9090}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    req, lim = c["resources"]["requests"], c["resources"]["limits"]
    want = G.controller_requests()
    assert want == {"cpu_m": 100, "memory_mib": 256}  # system_pods.yaml's accelfleet-gate
    assert req == {"cpu": f"{want['cpu_m']}m", "memory": f"{want['memory_mib']}Mi"}
    assert lim == {"cpu": f"{G.CONTROLLER_LIMITS['cpu_m']}m",
                   "memory": f"{G.CONTROLLER_LIMITS['memory_mib']}Mi"}
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"]
    assert not sc["allowPrivilegeEscalation"] and sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] != 0
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/etc/accelfleet"]["readOnly"]


def test_the_configmap_holds_the_clusters_part_of_the_inventory(plan: Plan) -> None:
    for cluster, pools in (("c1", {"h100", "v5p", "l4-q", "l4-open"}), ("e1", {"p5"})):
        cm = _by_kind(plan, cluster)["ConfigMap"]
        assert cm["metadata"]["name"] == "accelfleet-gate-inventory"
        inv = Inventory.from_dict(json.loads(cm["data"]["inventory.json"]))
        assert {p.name for p in inv.pools} == pools
        assert inv.stack == "gate"
        by = {p.name: p for p in inv.pools}
        assert all(by[n].gated for n in pools - {"l4-open"})
        if cluster == "c1":  # the opted-out pool is listed, ungated, with its reason
            assert not by["l4-open"].gated
            assert by["l4-open"].gate.reason == "inference canaries prove it"


def test_the_controller_rolls_when_its_inventory_changes(plan: Plan) -> None:
    """The ConfigMap is updated in place (the clusters' provider sets enableConfigMapMutable,
    tests/components/test_change_locality.py); the controller reads its inventory at start,
    so the pod template carries the file's digest and a changed inventory rolls it."""
    import hashlib

    from fleet.labels import GATE_INVENTORY_DIGEST_ANNOTATION

    digests = {}
    for cluster in ("c1", "e1"):
        objs = _by_kind(plan, cluster)
        text = objs["ConfigMap"]["data"]["inventory.json"]
        note = objs["Deployment"]["spec"]["template"]["metadata"]["annotations"]
        assert note[GATE_INVENTORY_DIGEST_ANNOTATION] == hashlib.sha256(text.encode()).hexdigest()
        digests[cluster] = note[GATE_INVENTORY_DIGEST_ANNOTATION]
    assert digests["c1"] != digests["e1"]  # each cluster's own part of the inventory


def test_the_namespace_is_made_once(plan: Plan) -> None:
    """c1 has a queued pool: Kueue's routing makes the smoke namespace (its LocalQueue lives
    there), and the gate does not make it again; e1 has none, and the gate makes it."""
    assert "Namespace" not in _by_kind(plan, "c1")
    assert _by_kind(plan, "e1")["Namespace"]["metadata"]["name"] == "accelfleet-smoke"
    smoke_ns = [r for r in plan.resources if r.type == "kubernetes:core/v1:Namespace"
                and r.inputs["metadata"]["name"] == "accelfleet-smoke"]
    assert len(smoke_ns) == 2  # one per cluster
    assert len({r.provider for r in smoke_ns}) == 2


def test_the_controller_waits_for_the_system_pool_and_its_namespace(plan: Plan) -> None:
    """Its objects wait for the system pool's nodes (the Deployment's pods run there) and, on
    a cluster whose Kueue routing makes the smoke namespace, for that routing."""
    by_kind = {r.inputs["kind"]: r for r in _controller(plan, "c1")}
    system = [r.urn for r in plan.of_type("gcp:container/nodePool:NodePool")
              if r.inputs["name"] == "system"]
    assert len(system) == 1
    # the smoke namespace the routing makes (a dependency on a component is on its children)
    namespace = [r.urn for r in plan.resources if r.type == "kubernetes:core/v1:Namespace"
                 and r.name == "c1-queues-namespace-accelfleet-smoke"]
    assert len(namespace) == 1
    for kind in ("Role", "RoleBinding", "ConfigMap", "ServiceAccount", "Deployment"):
        deps = by_kind[kind].dependencies
        assert system[0] in deps and namespace[0] in deps, kind
    # and the Deployment waits for its own RBAC and ConfigMap
    own = {r.urn for r in _controller(plan, "c1") if r.inputs["kind"] != "Deployment"}
    assert own <= set(by_kind["Deployment"].dependencies)


def test_turning_the_gate_on_updates_pools_in_place() -> None:
    """docs/gate.md: adding the taint to a running pool is an update, never a replacement
    (components/engine/data/replacements.yaml lists no taint field as ForceNew)."""
    from components.engine.diff import rule_for

    before = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    after = [*before, GKE_GATE]
    assert rule_for("gcp:container/nodePool:NodePool", "nodeConfig.taints", before,
                    after) is None
    assert rule_for("gcp:container/nodePool:NodePool", "nodeConfig.taints[1]", None,
                    GKE_GATE) is None
    assert rule_for("aws:eks/nodeGroup:NodeGroup", "taints", before, after) is None


def test_a_shadow_pool_is_created_without_the_taint_and_still_gets_its_controller(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """`gate.mode: shadow` (issue 35): the pool's nodes join untainted (GKE node pool and EKS
    node group alike), and the controller that proves and reports them is deployed."""
    text = STACK.replace('''zone: us-central1-a}
      - {name: v5p''', '''zone: us-central1-a, gate: {mode: shadow}}
      - {name: v5p''').replace('''zone: us-east-1a}''', '''zone: us-east-1a,
         gate: {mode: shadow, on_fail: replace}}''')
    plan = _plan(tmp_path_factory.mktemp("shadow"), "shadow", text)
    pools = {r.inputs["name"]: r.inputs for r in
             plan.of_type("gcp:container/nodePool:NodePool")}
    assert GKE_GATE not in pools["h100"]["nodeConfig"].get("taints", [])
    assert GKE_GATE in pools["l4-q"]["nodeConfig"]["taints"]  # enforcing, beside it
    groups = {r.name: r.inputs for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")}
    [p5] = [g for n, g in groups.items() if n.startswith("p5")]
    assert GKE_GATE not in (p5.get("taints") or [])
    objs = _by_kind(plan, "e1")  # the only pool of e1 is shadowed: its controller still runs
    assert "Deployment" in objs
    mounted = json.loads(objs["ConfigMap"]["data"]["inventory.json"])
    gate = mounted["pools"][0]["gate"]
    assert (gate["mode"], gate["on_fail"]) == ("shadow", "replace")
