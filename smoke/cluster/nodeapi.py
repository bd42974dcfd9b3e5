"""The node calls that smoke's quarantine and release and the gate controller share, on the
API's raw JSON: a patch guarded by the node's resourceVersion (a conflict, somebody changed the
node in between, is read again and re-applied) and an Event about a node (what `kubectl
describe node` shows). Each call is retried on transient errors (`with_retries`) and bounded by
REQUEST_TIMEOUT_S; each caller reads the answers its own way and words its own failures."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from smoke.cluster.access import with_retries

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

REQUEST_TIMEOUT_S = (5.0, 30.0)  # (connect, read)
CONFLICT_RETRIES = 5
EVENT_NAMESPACE = "default"  # where events about cluster-scoped objects (nodes) live

Answer = Callable[[Any], dict[str, Any]]  # an API answer (_preload_content=False) -> its JSON
Change = Callable[[dict[str, Any]], dict[str, Any] | None]  # the node -> a patch, or None


def taints_of(node: Any) -> tuple[list[dict[str, Any]], str]:
    """A node's taints as the API defines them (`spec.taints`: a list of objects), and what was
    wrong with them in words ('' when nothing was): a spec or a taints field of another type,
    an entry that is no object. What is malformed is left out, never guessed at, so that a
    reader says so instead of failing on it."""
    spec = node.get("spec") if isinstance(node, dict) else None
    if spec is None:
        return [], ""
    if not isinstance(spec, dict):
        return [], f"spec is {type(spec).__name__}, not an object (a malformed node)"
    raw = spec.get("taints")
    if raw is None:
        return [], ""
    if not isinstance(raw, list):
        return [], (f"spec.taints is {type(raw).__name__}, not a list: its taints cannot be "
                    "read (a malformed node)")
    kept = [t for t in raw if isinstance(t, dict)]
    bad = len(raw) - len(kept)
    return kept, (f"{bad} entr{'y' if bad == 1 else 'ies'} of spec.taints not an object "
                  "(a malformed node)" if bad else "")


def patch_node(api: CoreV1Api, name: str, change: Change, answer: Answer) -> dict[str, Any]:
    """Read the node and patch it with `change(node)`, guarded by the resourceVersion the patch
    carries; on a conflict, read again and re-apply. Returns the patched node, or the node as
    read where `change` said no (None). API errors (a 404: the node is gone) are raised."""
    from kubernetes.client.exceptions import ApiException

    for attempt in range(CONFLICT_RETRIES):
        node = answer(with_retries(api.read_node, name, _preload_content=False,
                                   _request_timeout=REQUEST_TIMEOUT_S))
        body = change(node)
        if body is None:
            return node
        try:
            return answer(with_retries(api.patch_node, name, body, _preload_content=False,
                                       _request_timeout=REQUEST_TIMEOUT_S))
        except ApiException as exc:
            if exc.status != 409 or attempt == CONFLICT_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def node_event(api: CoreV1Api, node: dict[str, Any], reason: str, message: str, *,
               warning: bool, component: str) -> None:
    """Record an Event about the node (a Warning, or Normal), from `component`; API errors are
    raised for the caller to word."""
    meta = node.get("metadata") or {}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name')}.", "namespace": EVENT_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": meta.get("name"),
                               "uid": meta.get("uid", meta.get("name"))},
            "reason": reason, "message": message,
            "type": "Warning" if warning else "Normal", "count": 1, "firstTimestamp": now,
            "lastTimestamp": now, "source": {"component": component},
            "reportingComponent": component}
    with_retries(api.create_namespaced_event, EVENT_NAMESPACE, body, _preload_content=False,
                 _request_timeout=REQUEST_TIMEOUT_S)


# Shared with the gate (smoke.gate), which reads the same objects and reports: public here.
from smoke.cluster._podtime import aware_time as aware_time  # noqa: E402
from smoke.cluster._rejudge import COVERAGE as COVERAGE  # noqa: E402
