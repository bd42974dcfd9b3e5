"""The few API calls the gate makes, on raw JSON (no model objects: the node cache stays the
API's own dicts), each retried on transient errors (`smoke.cluster.access.with_retries`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fleet.labels import RUN_LABEL
from smoke.cluster import nodeapi
from smoke.cluster.access import with_retries
from smoke.cluster.nodeapi import REQUEST_TIMEOUT_S as REQUEST_TIMEOUT_S

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

COMPONENT = "accelfleet-gate"


def raw(resp: Any) -> dict[str, Any]:
    data = getattr(resp, "data", None)
    if data is None and hasattr(resp, "read"):
        data = resp.read()
    out = json.loads(data or b"{}")
    return out if isinstance(out, dict) else {}


def status_of(exc: BaseException) -> int | None:
    from kubernetes.client.exceptions import ApiException

    return exc.status if isinstance(exc, ApiException) else None


def refused(exc: BaseException, what: str) -> str:
    """'' unless the API server refused the call (401, 403: the controller's RBAC or its
    credentials lack it), then a line that names the call and the fix. A refusal never
    passes by itself: the gate would keep every node gated (or never re-prove) in silence."""
    status = status_of(exc)
    if status not in (401, 403):
        return ""
    return (f"{what} was refused ({status}): the controller's ServiceAccount lacks the "
            "permission; deploy the RBAC the GateController component renders "
            "(docs/gate.md, the controller's permissions)")


def read_node(core: CoreV1Api, name: str) -> dict[str, Any] | None:
    """The node, or None when it no longer exists."""
    try:
        return raw(with_retries(core.read_node, name, _preload_content=False,
                                _request_timeout=REQUEST_TIMEOUT_S))
    except Exception as exc:
        if status_of(exc) == 404:
            return None
        raise


def patch_node(core: CoreV1Api, name: str,
               change: Callable[[dict[str, Any]], dict[str, Any] | None]
               ) -> dict[str, Any] | None:
    """Read the node and patch it with `change(node)` (guarded by its resourceVersion); a
    conflict is read again and re-applied. None: the node is gone, or `change` said no."""
    declined = False

    def guarded(node: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal declined
        body = change(node)
        declined = body is None
        return body

    try:
        patched = nodeapi.patch_node(core, name, guarded, raw)
    except Exception as exc:
        if status_of(exc) == 404:
            return None
        raise
    return None if declined else patched


def set_condition(core: CoreV1Api, name: str, condition: dict[str, Any]) -> None:
    """The node condition, through nodes/status (a strategic merge patch merges conditions
    by type); a node gone meanwhile is no error."""
    try:
        with_retries(core.patch_node_status, name, {"status": {"conditions": [condition]}},
                     _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
    except Exception as exc:
        if status_of(exc) != 404:
            raise


def node_event(core: CoreV1Api, node: dict[str, Any], reason: str, message: str, *,
               warning: bool) -> str:
    """An Event about the node (what `kubectl describe node` shows); '' or what went wrong."""
    try:
        nodeapi.node_event(core, node, reason, message[:1000], warning=warning,
                           component=COMPONENT)
    except Exception as exc:
        return refused(exc, f"recording the Event {reason}") or \
            f"its Event was not recorded ({status_of(exc) or type(exc).__name__})"
    return ""


def delete_run(core: CoreV1Api, batch: Any, custom: Any, namespace: str, run_id: str) -> list[str]:
    """Delete every object of one proof run (by its run label); what could not be."""
    sel = f"{RUN_LABEL}={run_id}"
    t = REQUEST_TIMEOUT_S
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("jobsets", lambda: custom.delete_collection_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", label_selector=sel,
            propagation_policy="Foreground", _request_timeout=t)),
        ("jobs", lambda: batch.delete_collection_namespaced_job(
            namespace, label_selector=sel, propagation_policy="Foreground",
            _request_timeout=t)),
        ("pods", lambda: core.delete_collection_namespaced_pod(
            namespace, label_selector=sel, grace_period_seconds=0, _request_timeout=t)),
        ("services", lambda: core.delete_collection_namespaced_service(
            namespace, label_selector=sel, _request_timeout=t)),
        ("configmaps", lambda: core.delete_collection_namespaced_config_map(
            namespace, label_selector=sel, _request_timeout=t)),
    ]
    errors = []
    for what, call in steps:
        try:
            with_retries(call, attempts=4)
        except Exception as exc:
            if status_of(exc) == 404:  # no JobSet API (or no namespace): nothing to delete
                continue
            errors.append(f"deleting the proof {run_id}'s {what} failed "
                          f"({status_of(exc) or type(exc).__name__})")
    return errors


class RawReads:
    """The few reads `gate status` makes (the nodes, the pools' ConfigMap, the Lease), on
    the ApiClient's own transport and auth, without the generated `CoreV1Api` and
    `CoordinationV1Api`: in kubernetes 37 (pydantic `validate_call` on each of CoreV1Api's
    methods) the core API's module and class took 1.5-6 s to import and build in a fresh
    process here, more than the rest of `gate status` at 5,000 nodes (issue 35, profiled
    with cProfile). Each method answers as the generated one does with
    `_preload_content=False`: the urllib3 response, or ApiException on a non-2xx answer."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client  # `smoke.cluster.access` tracks calls by it

    def _get(self, path: str, query: list[tuple[str, Any]], timeout: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        client = self.api_client
        method, url, headers, body, post = client.param_serialize(
            "GET", path, query_params=[(k, v) for k, v in query if v is not None],
            header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        resp = client.call_api(method, url, header_params=headers, body=body,
                               post_params=post, _request_timeout=timeout)
        if not 200 <= resp.status <= 299:
            resp.read()
            raise ApiException.from_response(http_resp=resp, body=None, data=None)
        return resp.response

    def list_node(self, *, label_selector: str | None = None, limit: int | None = None,
                  _continue: str | None = None, _preload_content: bool = False,
                  _request_timeout: Any = None) -> Any:
        return self._get("/api/v1/nodes", [("labelSelector", label_selector),
                                           ("limit", limit), ("continue", _continue)],
                         _request_timeout)

    def read_namespaced_config_map(self, name: str, namespace: str, *,
                                   _preload_content: bool = False,
                                   _request_timeout: Any = None) -> Any:
        return self._get(f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps/"
                         f"{quote(name, safe='')}", [], _request_timeout)

    def read_namespaced_lease(self, name: str, namespace: str, *,
                              _preload_content: bool = False,
                              _request_timeout: Any = None) -> Any:
        return self._get(f"/apis/coordination.k8s.io/v1/namespaces/"
                         f"{quote(namespace, safe='')}/leases/{quote(name, safe='')}", [],
                         _request_timeout)
