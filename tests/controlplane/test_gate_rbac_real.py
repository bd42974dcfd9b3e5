"""The gate controller as its ServiceAccount, with exactly the RBAC objects the component
renders (components/k8s/_gate.py `gate_objects`), on a real API server that authorizes with
RBAC and writes an audit log (issue 34 item 3; issue 35 "RBAC covers every call"):

- a scale-up with a passing and a failing node (proof, untaint, condition, Events,
  quarantine) and a re-proof of the idle node run with no request refused;
- the audit log says which (group, resource, verb) the controller really used; each one is
  granted, and each rendered permission is used, except those of paths this plane cannot run
  (no JobSet or Kueue controller: a multi-host TPU slice's JobSet and Service, a queued
  re-proof's ProvisioningRequest), named in NOT_RUN_HERE;
- each used permission removed in turn: the controller is refused (403 in the audit log) and
  says so where an operator looks (the node stays gated, or an error in its summary).

The controller authenticates with a token of its ServiceAccount (the TokenRequest API), as
in its pod: no impersonation, the API server's own authentication and authorization.
The audit policy (audit.k8s.io/v1 Policy, Metadata level for that user alone) follows
https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/ (read 2026-11-28)."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from components.k8s._gate import NAME, GateControllerArgs, gate_objects
from fleet.inventory import InventoryGate
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import KINDS, RestError, path_of
from tests.controlplane.cluster import RealCluster
from tests.controlplane.fixtures import AUDITED_NAMESPACE, audit_log
from tests.controlplane.test_gate_real import proof, proven, state, wait_for
from tests.smoke.gate_cluster import (
    NAMESPACE,
    controller,
    gated_inventory,
    gke_gated_node,
    h100_report,
)

pytestmark = pytest.mark.controlplane
USER = f"system:serviceaccount:{NAMESPACE}:{NAME}"
POOL = "h100-train"
Perm = tuple[str, str, str, str]  # (scope: "cluster" or "namespace", group, resource, verb)

# what the controller calls in the scenario below, as the audit log shows it
USED: frozenset[Perm] = frozenset({
    ("cluster", "", "nodes", "list"), ("cluster", "", "nodes", "watch"),
    ("cluster", "", "nodes", "get"), ("cluster", "", "nodes", "patch"),
    ("cluster", "", "nodes/status", "patch"),
    ("cluster", "", "events", "create"),
    ("cluster", "", "pods", "list"), ("cluster", "", "pods", "watch"),  # the idle check's
    # pod cache (smoke.gate._informer), listed then watched
    ("cluster", "", "namespaces", "get"),
    ("namespace", "coordination.k8s.io", "leases", "get"),
    ("namespace", "coordination.k8s.io", "leases", "create"),
    ("namespace", "coordination.k8s.io", "leases", "update"),
    ("namespace", "batch", "jobs", "create"), ("namespace", "batch", "jobs", "deletecollection"),
    ("namespace", "", "pods", "deletecollection"),
    ("namespace", "", "pods/log", "get"),
    ("namespace", "", "configmaps", "create"), ("namespace", "", "configmaps", "get"),
    ("namespace", "", "configmaps", "deletecollection"),
    ("namespace", "", "services", "create"), ("namespace", "", "services", "deletecollection"),
})
# rendered, not used here: each a call on a path this plane cannot run, with where it is made
NOT_RUN_HERE: dict[Perm, str] = {
    ("namespace", "batch", "jobs", "get"):
        "smoke.cluster._submit: a Job read back after a 409 on create; _reads: while Kueue "
        "holds it",
    ("namespace", "", "services", "get"): "smoke.cluster._submit: read back after a 409",
    ("namespace", "jobset.x-k8s.io", "jobsets", "create"):
        "a multi-host TPU slice's proof (no JobSet controller here: it would never run)",
    ("namespace", "jobset.x-k8s.io", "jobsets", "get"): "as above: its status",
    ("namespace", "jobset.x-k8s.io", "jobsets", "deletecollection"):
        "smoke.gate._kube.delete_run: an adopted or failed proof's cleanup",
    ("namespace", "", "pods", "patch"):
        "a TPU slice's pods told the last host started (smoke.cluster.launcher)",
    ("namespace", "", "events", "list"):
        "smoke.cluster._reads._scheduler_event: why a proof pod stays Pending",
    ("namespace", "autoscaling.x-k8s.io", "provisioningrequests", "list"):
        "smoke.cluster._reads._held_by_kueue: a queued pool's proof (no Kueue here)",
}


@pytest.fixture
def audited(control_plane: ControlPlane) -> tuple[ControlPlane, Path]:
    """The run's control plane and its audit log of the gate namespace's service accounts
    (tests.controlplane.fixtures.audit_args): a test reads the events since it began."""
    assert USER.startswith(f"system:serviceaccount:{AUDITED_NAMESPACE}:")
    return control_plane, audit_log(control_plane)


@pytest.fixture
def akube(kube: RealCluster) -> RealCluster:
    return kube


def rendered() -> list[dict[str, Any]]:
    return gate_objects(GateControllerArgs(cluster="ml-gke", namespace=NAMESPACE,
                                           inventory={}))


def perms(objs: list[dict[str, Any]]) -> set[Perm]:
    out = set()
    for o in objs:
        if o["kind"] not in ("ClusterRole", "Role"):
            continue
        scope = "cluster" if o["kind"] == "ClusterRole" else "namespace"
        for rule in o["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    for v in rule["verbs"]:
                        out.add((scope, g, r, v))
    return out


def without(objs: list[dict[str, Any]], perm: Perm) -> list[dict[str, Any]]:
    """The rendered objects less one verb of one rule."""
    scope, group, resource, verb = perm
    out = []
    for o in objs:
        kind = "ClusterRole" if scope == "cluster" else "Role"
        if o["kind"] == kind:
            rules = []
            for rule in o["rules"]:
                if group in rule["apiGroups"] and resource in rule["resources"]:
                    rule = {**rule, "verbs": [v for v in rule["verbs"] if v != verb]}
                    if not rule["verbs"]:
                        continue
                rules.append(rule)
            o = {**o, "rules": rules}
        out.append(o)
    return out


def deploy_rbac(kube: RealCluster, objs: list[dict[str, Any]]) -> Any:
    """The rendered Namespace, ServiceAccount, ClusterRole(+Binding), Role(+Binding) applied
    (ClusterRole and binding replaced where a test before left them); the controller's API
    client, with a token of that ServiceAccount."""
    from kubernetes import client

    plurals = {"Namespace": "namespaces", **{k: v for k, v in KINDS.items()}}
    for o in objs:
        if o["kind"] not in ("Namespace", "ServiceAccount", "ClusterRole",
                             "ClusterRoleBinding", "Role", "RoleBinding"):
            continue
        plural = plurals[o["kind"]]
        ns = o["metadata"].get("namespace", "")
        body = {k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
        if o["kind"] == "Namespace":
            kube.ensure_namespace(o["metadata"]["name"])
            continue
        with contextlib.suppress(RestError):
            kube.rest.delete(plural, ns, o["metadata"]["name"])
        wait_for(lambda p=plural, n=ns, m=o["metadata"]["name"]: kube.get(p, n, m) is None)
        kube.rest.create(plural, ns, body)
    token = kube.rest.call("POST", path_of("serviceaccounts", NAMESPACE, NAME, "token"), body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]
    admin = kube.rest.api.configuration
    conf = client.Configuration()
    conf.host, conf.ssl_ca_cert = admin.host, admin.ssl_ca_cert
    conf.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(conf)


def audit(log: Path, since: float) -> list[dict[str, Any]]:
    """The controller's requests since `since` (wall clock), as the audit log has them."""
    from datetime import datetime

    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") != USER or event.get("stage") == "Panic":
            continue
        when = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if when.timestamp() >= since:
            out.append(event)
    return out


def used(events: list[dict[str, Any]]) -> tuple[set[Perm], list[str]]:
    """(what was granted and used, what was refused) in audit events."""
    ok, refused = set(), []
    granted = perms(rendered())
    for e in events:
        ref = e.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}"
                                              if ref.get("subresource") else "")
        group, verb = ref.get("apiGroup", ""), e["verb"]
        # a call in a namespace is the Role's where the Role grants it, else the
        # ClusterRole's (its Events in `default`, its pods listed, its Namespace read)
        scope = "namespace" if ref.get("namespace") and resource != "namespaces" and \
            ("namespace", group, resource, verb) in granted else "cluster"
        perm = (scope, group, resource, verb)
        code = (e.get("responseStatus") or {}).get("code", 0)
        if code == 403:
            refused.append(f"{perm} {e.get('requestURI', '')}")
        else:
            ok.add(perm)
    return ok, refused


def _scenario(kube: RealCluster, tmp_path: Path, api: Any, *, until_refused: Path | None = None,
              since: float = 0.0) -> Any:
    """A passing node and a failing one join; the idle one is re-proven. With
    `until_refused` (the audit log), it ends at the first refusal once it shows."""
    inventory = gated_inventory({POOL: InventoryGate(reprove_interval_s=2, quarantine_cap="1")})
    good, bad = "gke-h100-train-0", "gke-h100-train-1"
    kube.set_node_output(good, h100_report(good, 800.0))
    kube.set_node_output(bad, h100_report(bad, 100.0))
    with controller(kube, tmp_path, inventory, "ml-gke", client=api) as running:
        for n in (good, bad):
            kube.add_node_object(gke_gated_node(POOL, n))

        def done() -> bool:
            if until_refused is not None and used(audit(until_refused, since))[1]:
                return True
            first = proof(kube, good).get("run")
            return bool(first) and state(kube, bad) == "failed" and \
                bool(running.gate.summary.results.get(good)) and \
                running.gate.summary.results[good].run_id != first

        wait_for(done, timeout_s=180)
        if until_refused is not None:  # the controller says the refusal (else the test
            # asserts the proof was stopped by it)
            with contextlib.suppress(AssertionError):
                wait_for(lambda: said_forbidden(refusal_shown(kube, running)[1]),
                         timeout_s=10)
    return running


def refusal_shown(kube: RealCluster, running: Any) -> tuple[bool, list[str]]:
    """Whether a refused call shows: the passing node is not proven, or the controller says
    403 / Forbidden in its errors or a node's reason; and what it says."""
    summary = running.gate.summary
    shown = summary.errors + [r.reason for r in list(summary.results.values())
                              if r.verdict != "pass"]
    return not proven(kube, "gke-h100-train-0") or said_forbidden(shown), shown


def said_forbidden(shown: list[str]) -> bool:
    return any("403" in s or "Forbidden" in s or "forbidden" in s for s in shown)


def test_the_rendered_rbac_is_all_the_controller_needs_and_all_of_it_is_used(
        akube: RealCluster, audited: tuple[ControlPlane, Path], tmp_path: Path) -> None:
    since = time.time()
    api = deploy_rbac(akube, rendered())
    running = _scenario(akube, tmp_path, api)
    assert proven(akube, "gke-h100-train-0") and state(akube, "gke-h100-train-1") == "failed"
    assert running.gate.summary.errors == []
    granted, refused = used(audit(audited[1], since))
    assert refused == []
    assert granted == USED, (sorted(granted - USED), sorted(USED - granted))
    assert USED <= perms(rendered())
    assert perms(rendered()) - USED == set(NOT_RUN_HERE), sorted(perms(rendered()) - USED)


@pytest.mark.parametrize("perm", sorted(USED), ids=lambda p: f"{p[0]}-{p[2]}-{p[3]}")
def test_each_permission_removed_is_refused_and_the_refusal_shows(
        akube: RealCluster, audited: tuple[ControlPlane, Path], tmp_path: Path,
        perm: Perm) -> None:
    since = time.time()
    api = deploy_rbac(akube, without(rendered(), perm))
    running = _scenario(akube, tmp_path, api, until_refused=audited[1], since=since)
    _, refused = used(audit(audited[1], since))
    assert any(r.startswith(str(perm)) for r in refused), (perm, refused)
    ok, shown = refusal_shown(akube, running)
    assert ok, (perm, shown)
