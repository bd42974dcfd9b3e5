"""The node calls quarantine and release share (smoke.cluster.quarantine,
smoke.cluster.release): an answer read as JSON, the nodes labelled quarantined, the guarded
node patch and the node Event (smoke.cluster.nodeapi's) with their wording, an API error in
words."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from smoke.cluster._quarantine_records import COMPONENT, KEY, VALUE
from smoke.cluster.access import with_retries
from smoke.cluster.nodeapi import REQUEST_TIMEOUT_S, node_event, patch_node

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api


def _now() -> datetime:
    return datetime.now(UTC)


def _json(resp: Any) -> dict[str, Any]:
    """An API answer's JSON object; a SetupError (exit 2) for an answer that is no JSON (a
    proxy's HTML page, a cut connection): the API server is not one accelfleet can use."""
    from fleet.errors import SetupError

    data = getattr(resp, "data", None)
    if data is None and hasattr(resp, "read"):
        data = resp.read()
    try:
        out = json.loads(data if isinstance(data, bytes | str) else b"{}")
    except (ValueError, RecursionError):
        raise SetupError("the Kubernetes API answered with something that is not JSON",
                         hint="check that the kubeconfig's server is the cluster's API server "
                         "(not a proxy or a login page), then run again") from None
    return out if isinstance(out, dict) else {}


def _is_node(item: object) -> bool:
    """An item of a node list as the API defines one (`smoke.cluster.objects.node_problem`:
    its metadata, taints, conditions of the API's types). Anything else tells of no node."""
    from smoke.cluster.objects import node_problem

    return not node_problem(item)


def _labelled(api: CoreV1Api, *, named: bool = False) -> list[dict[str, Any]]:
    """The nodes labelled quarantined that read as Nodes; `named`: also those that do not
    but carry a name (`smoke status` lists them, saying what is malformed)."""
    resp = with_retries(api.list_node, label_selector=f"{KEY}={VALUE}", _preload_content=False,
                        _request_timeout=REQUEST_TIMEOUT_S)
    items = _json(resp).get("items")
    if not isinstance(items, list):
        return []
    return [n for n in items if _is_node(n) or (named and _named(n))]


def _named(item: object) -> bool:
    """An object with a name (metadata.name a string), however malformed the rest."""
    meta = item.get("metadata") if isinstance(item, dict) else None
    return isinstance(meta, dict) and isinstance(meta.get("name"), str) and bool(meta["name"])


def _patch(api: CoreV1Api, name: str, change: Any) -> dict[str, Any]:
    """Read the node, patch it with `change(node)` guarded by its resourceVersion; a conflict
    (somebody changed it in between) is read again and re-applied. Returns the node."""
    return patch_node(api, name, change, _json)


def _event(api: CoreV1Api, node: dict[str, Any], reason: str, message: str) -> str:
    """A Warning (quarantine) or Normal (release) Event on the node; '' or what went wrong."""
    from kubernetes.client.exceptions import ApiException

    try:
        node_event(api, node, reason, message, warning=reason == "SmokeQuarantined",
                   component=COMPONENT)
    except ApiException as exc:
        return f"its Event was not recorded: {_api_problem(exc, 'create events')}"
    return ""


def _api_problem(exc: Any, verb: str) -> str:
    """An API error in words; `verb` is what was refused, e.g. `patch nodes`."""
    if exc.status in (401, 403):
        return (f"{exc.status} {exc.reason}: the credential may not {verb} (check `kubectl "
                f"auth can-i {verb}`)")
    if exc.status == 404:
        return "the node no longer exists"
    return f"{exc.status} {exc.reason}"
