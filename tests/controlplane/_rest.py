"""Plain JSON calls to the real API server by plural (`rest.get("nodes", "", "n1")`), through
the `kubernetes` client's ApiClient: what the tests and the node stand-in read and write, as
dicts, the way the fake's test hooks take them."""

from __future__ import annotations

import json
from typing import Any

# plural -> (apiVersion, namespaced); the kinds the project and its tests touch
RESOURCES: dict[str, tuple[str, bool]] = {
    "namespaces": ("v1", False), "nodes": ("v1", False), "configmaps": ("v1", True),
    "services": ("v1", True), "pods": ("v1", True), "events": ("v1", True),
    "serviceaccounts": ("v1", True), "secrets": ("v1", True), "podtemplates": ("v1", True),
    "jobs": ("batch/v1", True), "deployments": ("apps/v1", True),
    "daemonsets": ("apps/v1", True),
    "leases": ("coordination.k8s.io/v1", True),
    "roles": ("rbac.authorization.k8s.io/v1", True),
    "rolebindings": ("rbac.authorization.k8s.io/v1", True),
    "clusterroles": ("rbac.authorization.k8s.io/v1", False),
    "clusterrolebindings": ("rbac.authorization.k8s.io/v1", False),
    "priorityclasses": ("scheduling.k8s.io/v1", False),
    "poddisruptionbudgets": ("policy/v1", True),
    "networkpolicies": ("networking.k8s.io/v1", True),
    "customresourcedefinitions": ("apiextensions.k8s.io/v1", False),
    "jobsets": ("jobset.x-k8s.io/v1alpha2", True),
    "resourceflavors": ("kueue.x-k8s.io/v1beta2", False),
    "clusterqueues": ("kueue.x-k8s.io/v1beta2", False),
    "localqueues": ("kueue.x-k8s.io/v1beta2", True),
    "admissionchecks": ("kueue.x-k8s.io/v1beta2", False),
    "provisioningrequestconfigs": ("kueue.x-k8s.io/v1beta2", False),
    "cohorts": ("kueue.x-k8s.io/v1beta2", False),
    "topologies": ("kueue.x-k8s.io/v1beta2", False),
    "workloadpriorityclasses": ("kueue.x-k8s.io/v1beta2", False),
    "workloads": ("kueue.x-k8s.io/v1beta2", True),
}
KINDS = {"Namespace": "namespaces", "Node": "nodes", "ConfigMap": "configmaps",
         "Service": "services", "Pod": "pods", "Event": "events",
         "ServiceAccount": "serviceaccounts", "Secret": "secrets", "PodTemplate": "podtemplates",
         "Job": "jobs", "Deployment": "deployments", "DaemonSet": "daemonsets",
         "Lease": "leases", "Role": "roles",
         "RoleBinding": "rolebindings", "ClusterRole": "clusterroles",
         "ClusterRoleBinding": "clusterrolebindings", "PriorityClass": "priorityclasses",
         "PodDisruptionBudget": "poddisruptionbudgets", "NetworkPolicy": "networkpolicies",
         "CustomResourceDefinition": "customresourcedefinitions", "JobSet": "jobsets",
         "ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
         "LocalQueue": "localqueues", "AdmissionCheck": "admissionchecks",
         "ProvisioningRequestConfig": "provisioningrequestconfigs", "Cohort": "cohorts",
         "Topology": "topologies", "WorkloadPriorityClass": "workloadpriorityclasses",
         "Workload": "workloads"}


class RestError(Exception):
    """The API server's refusal: `status` (HTTP), `reason` and `message` of its Status."""

    def __init__(self, status: int, body: str) -> None:
        try:
            parsed = json.loads(body) if body else {}
        except ValueError:
            parsed = {}
        parsed = parsed if isinstance(parsed, dict) else {}
        self.status, self.body = status, body
        self.reason = str(parsed.get("reason", ""))
        self.message = str(parsed.get("message", body[:300]))
        super().__init__(f"{status} {self.reason}: {self.message}")


def path_of(plural: str, namespace: str | None, name: str = "", subresource: str = "") -> str:
    try:
        version, namespaced = RESOURCES[plural]
    except KeyError:
        raise KeyError(f"no such resource {plural!r} in tests.controlplane._rest.RESOURCES; "
                       f"add it with its apiVersion") from None
    base = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    if namespaced and namespace:
        base += f"/namespaces/{namespace}"
    out = f"{base}/{plural}"
    if name:
        out += f"/{name}"
    if subresource:
        out += f"/{subresource}"
    return out


class Rest:
    def __init__(self, api: Any) -> None:
        self.api = api

    def call(self, method: str, path: str, *, query: dict[str, Any] | None = None,
             body: Any = None, content_type: str = "application/json",
             timeout_s: float = 30.0) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        method_, url, headers_, body_, post = self.api.param_serialize(
            method, path, query_params=list((query or {}).items()), header_params=headers,
            body=body, auth_settings=["BearerToken"])
        resp = self.api.call_api(method_, url, header_params=headers_, body=body_,
                                 post_params=post, _request_timeout=timeout_s)
        resp.read()
        if not 200 <= resp.status < 300:
            raise RestError(int(resp.status), (resp.data or b"").decode("utf-8", "replace"))
        data = resp.data
        if not data:
            return None
        text = data.decode("utf-8")
        try:
            return json.loads(text)
        except ValueError:
            return text

    def get(self, plural: str, namespace: str, name: str,
            subresource: str = "") -> dict[str, Any] | None:
        try:
            out = self.call("GET", path_of(plural, namespace, name, subresource))
        except RestError as exc:
            if exc.status == 404:
                return None
            raise
        return dict(out)

    def list(self, plural: str, namespace: str | None, label_selector: str = "",
             field_selector: str = "") -> dict[str, Any]:
        query = {k: v for k, v in (("labelSelector", label_selector),
                                   ("fieldSelector", field_selector)) if v}
        return dict(self.call("GET", path_of(plural, namespace), query=query))

    def create(self, plural: str, namespace: str, body: dict[str, Any], *,
               dry_run: bool = False) -> dict[str, Any]:
        version, _ = RESOURCES[plural]
        kind = next(k for k, p in KINDS.items() if p == plural)
        body = {"apiVersion": version, "kind": kind, **body}
        ns = namespace or (body.get("metadata") or {}).get("namespace") or ""
        query = {"dryRun": "All", "fieldValidation": "Strict"} if dry_run else None
        return dict(self.call("POST", path_of(plural, ns), body=body, query=query))

    def replace(self, plural: str, namespace: str, name: str, body: dict[str, Any],
                subresource: str = "") -> dict[str, Any]:
        return dict(self.call("PUT", path_of(plural, namespace, name, subresource), body=body))

    def patch(self, plural: str, namespace: str, name: str, patch: Any, *,
              subresource: str = "",
              kind: str = "application/strategic-merge-patch+json") -> dict[str, Any]:
        if kind.startswith("application/strategic") and RESOURCES[plural][0].count(".") and \
                "k8s.io" not in RESOURCES[plural][0]:
            kind = "application/merge-patch+json"  # custom resources take no strategic patch
        return dict(self.call("PATCH", path_of(plural, namespace, name, subresource),
                              body=patch, content_type=kind))

    def delete(self, plural: str, namespace: str, name: str, *,
               propagation: str | None = None, grace_period_s: int | None = None,
               uid: str | None = None) -> None:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        if grace_period_s is not None:
            body["gracePeriodSeconds"] = grace_period_s
        if uid:
            body["preconditions"] = {"uid": uid}
        self.call("DELETE", path_of(plural, namespace, name), body=body)

    def delete_collection(self, plural: str, namespace: str | None, *,
                          label_selector: str = "", grace_period_s: int | None = None,
                          propagation: str | None = None) -> None:
        query: dict[str, Any] = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if grace_period_s is not None:
            query["gracePeriodSeconds"] = grace_period_s
        if propagation:
            query["propagationPolicy"] = propagation
        self.call("DELETE", path_of(plural, namespace), query=query)
