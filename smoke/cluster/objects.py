"""The shape of the API objects accelfleet reads (Node, Pod, Lease), checked once, where they
come in: an object that is not what the Kubernetes API defines (a hostile or broken API
server, a proxy, an object written around the API's validation) is refused whole, with the
reason in words, and never half-read (issue 35). Only the fields accelfleet reads are
checked, each against its type in the API (k8s.io/api core/v1 and coordination/v1 types):

- metadata: a mapping; `name` text of 1..253 characters (a DNS subdomain, apimachinery
  `pkg/util/validation` DNS1123SubdomainMaxLength); `labels` and `annotations` mappings of
  text to text, the annotations at most 256 KiB together (apimachinery
  `pkg/api/validation/objectmeta.go` TotalAnnotationSizeLimitB = 256 * (1 << 10), read
  2026-11-28); `resourceVersion`, `uid`, `creationTimestamp` text where present;
- a Node's `spec` a mapping, `spec.taints` a list of mappings with text `key` and `effect`,
  `spec.unschedulable` a boolean; `status` a mapping, `status.conditions` a list of mappings
  with text `type` and `status`, their times text; `status.nodeInfo` a mapping;
- a Pod's `ownerReferences` a list of mappings with text `kind`; `spec.nodeName` and
  `status.phase` text;
- a Lease's `spec.holderIdentity` and `renewTime` text, `leaseDurationSeconds` a whole number
  of seconds of at least 1 (coordination/v1 LeaseSpec: int32).

`None` (JSON null) stands for an absent field everywhere, as the API server omits empty
optional fields. Each check returns '' for a good object, else the first problem found."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MAX_NAME_CHARS = 253  # a DNS subdomain: what object names are
MAX_ANNOTATIONS_BYTES = 256 * 2**10  # apimachinery TotalAnnotationSizeLimitB
MAX_LIST_ITEMS = 10_000  # taints, conditions, owners: far past any real object


def _text(value: object, *, optional: bool = True) -> bool:
    return isinstance(value, str) or (optional and value is None)


def _str_map(value: object, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, Mapping):
        return f"metadata.{what} is a {type(value).__name__}, not a mapping"
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            return f"metadata.{what} holds a {type(v).__name__} value for {str(k)[:60]!r}, " \
                "not text"
    return ""


def meta_problem(obj: object) -> str:
    """'' when `obj` is an API object whose metadata reads as the API defines it."""
    if not isinstance(obj, Mapping):
        return f"the object is a {type(obj).__name__}, not a mapping"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "it has no metadata mapping"
    name = meta.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        return f"metadata.name is not a name of 1..{MAX_NAME_CHARS} characters"
    for key in ("resourceVersion", "uid", "creationTimestamp"):
        if not _text(meta.get(key)):
            return f"metadata.{key} is a {type(meta.get(key)).__name__}, not text"
    for key in ("labels", "annotations"):
        problem = _str_map(meta.get(key), key)
        if problem:
            return problem
    size = sum(len(k) + len(v) for k, v in (meta.get("annotations") or {}).items())
    if size > MAX_ANNOTATIONS_BYTES:
        return f"its annotations hold {size} bytes, past the API's {MAX_ANNOTATIONS_BYTES}"
    return ""


def _list_of(value: object, what: str, fields: Mapping[str, bool]) -> str:
    """`value`: None or a list of mappings whose `fields` are text (True: required)."""
    if value is None:
        return ""
    if not isinstance(value, list):
        return f"{what} is a {type(value).__name__}, not a list"
    if len(value) > MAX_LIST_ITEMS:
        return f"{what} holds {len(value)} items, past {MAX_LIST_ITEMS}"
    for item in value:
        if not isinstance(item, Mapping):
            return f"{what} holds a {type(item).__name__}, not a mapping"
        for field, required in fields.items():
            if not _text(item.get(field), optional=not required):
                return f"{what}[].{field} is a {type(item.get(field)).__name__}, not text"
    return ""


def _mapping(value: object, what: str) -> str:
    return "" if value is None or isinstance(value, Mapping) else \
        f"{what} is a {type(value).__name__}, not a mapping"


def node_problem(obj: object) -> str:
    """'' when `obj` reads as a Node (the fields the gate and the quarantine read)."""
    problem = meta_problem(obj)
    if problem:
        return problem
    assert isinstance(obj, Mapping)
    spec, status = obj.get("spec"), obj.get("status")
    problem = _mapping(spec, "spec") or _mapping(status, "status")
    if problem:
        return problem
    spec, status = spec or {}, status or {}
    if spec.get("unschedulable") is not None and not isinstance(spec.get("unschedulable"), bool):
        return "spec.unschedulable is not a boolean"
    return (_list_of(spec.get("taints"), "spec.taints",
                     {"key": True, "effect": True, "value": False})
            or _list_of(status.get("conditions"), "status.conditions",
                        {"type": True, "status": True, "reason": False, "message": False,
                         "lastTransitionTime": False, "lastHeartbeatTime": False})
            or _mapping(status.get("nodeInfo"), "status.nodeInfo"))


def pod_problem(obj: object) -> str:
    """'' when `obj` reads as a Pod (its owners, node and phase)."""
    problem = meta_problem(obj)
    if problem:
        return problem
    assert isinstance(obj, Mapping)
    spec, status = obj.get("spec"), obj.get("status")
    problem = _mapping(spec, "spec") or _mapping(status, "status") or _list_of(
        obj["metadata"].get("ownerReferences"), "metadata.ownerReferences", {"kind": True})
    if problem:
        return problem
    if not _text((spec or {}).get("nodeName")):
        return "spec.nodeName is not text"
    if not _text((status or {}).get("phase")):
        return "status.phase is not text"
    return ""


def lease_problem(obj: object) -> str:
    """'' when `obj` reads as a coordination/v1 Lease."""
    problem = meta_problem(obj)
    if problem:
        return problem
    assert isinstance(obj, Mapping)
    spec = obj.get("spec")
    if _mapping(spec, "spec"):
        return _mapping(spec, "spec")
    spec = spec or {}
    for key in ("holderIdentity", "renewTime", "acquireTime"):
        if not _text(spec.get(key)):
            return f"spec.{key} is a {type(spec.get(key)).__name__}, not text"
    seconds = spec.get("leaseDurationSeconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)
                                or not 1 <= seconds <= 2**31 - 1):
        return "spec.leaseDurationSeconds is not a whole number of seconds of 1 or more"
    return ""


def valid(items: object, problem: Callable[[object], str]
          ) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """A list's items split into the good ones and (name or '?', problem) for the others."""
    good: list[dict[str, Any]] = []
    bad: list[tuple[str, str]] = []
    for item in items if isinstance(items, list) else ():
        why = problem(item)
        if why:
            bad.append((name_of(item), why))
        else:
            good.append(dict(item))
    return good, bad


def name_of(obj: object) -> str:
    """The object's name where it has a readable one, else ''."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS else ""
