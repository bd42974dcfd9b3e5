"""The fake API server's vocabulary: resources, errors, label and field selectors, and the
small pure rules its controllers share (tolerations, quantities, requests, field refs)."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# plural -> (kind, apiVersion, namespaced)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "namespaces": ("Namespace", "v1", False),
    "nodes": ("Node", "v1", False),
    "configmaps": ("ConfigMap", "v1", True),
    "services": ("Service", "v1", True),
    "pods": ("Pod", "v1", True),
    "events": ("Event", "v1", True),
    "jobs": ("Job", "batch/v1", True),
    "jobsets": ("JobSet", "jobset.x-k8s.io/v1alpha2", True),
    "podtemplates": ("PodTemplate", "v1", True),
    "resourceflavors": ("ResourceFlavor", "kueue.x-k8s.io/v1beta2", False),
    "clusterqueues": ("ClusterQueue", "kueue.x-k8s.io/v1beta2", False),
    "localqueues": ("LocalQueue", "kueue.x-k8s.io/v1beta2", True),
    "admissionchecks": ("AdmissionCheck", "kueue.x-k8s.io/v1beta2", False),
    "provisioningrequestconfigs": ("ProvisioningRequestConfig", "kueue.x-k8s.io/v1beta2",
                                   False),
    "cohorts": ("Cohort", "kueue.x-k8s.io/v1beta2", False),
    "workloadpriorityclasses": ("WorkloadPriorityClass", "kueue.x-k8s.io/v1beta2", False),
    "provisioningrequests": ("ProvisioningRequest", "autoscaling.x-k8s.io/v1", True),
    "leases": ("Lease", "coordination.k8s.io/v1", True),
}
GROUPS = {"batch/v1": {"jobs"}, "jobset.x-k8s.io/v1alpha2": {"jobsets"},
          "kueue.x-k8s.io/v1beta2": {"resourceflavors", "clusterqueues", "localqueues",
                                     "admissionchecks", "provisioningrequestconfigs",
                                     "cohorts", "workloadpriorityclasses"},
          "autoscaling.x-k8s.io/v1": {"provisioningrequests"},
          "coordination.k8s.io/v1": {"leases"}}
# kind -> kinds it may own (Kueue's ProvisioningRequest and its PodTemplate go with the job
# they were made for)
OWNS = {"jobsets": ("jobs", "services", "provisioningrequests", "podtemplates"),
        "jobs": ("pods", "provisioningrequests", "podtemplates")}
KIND_PLURALS = {kind: plural for plural, (kind, _, _) in RESOURCES.items()}
INDEX = "batch.kubernetes.io/job-completion-index"
TERMINAL = ("Succeeded", "Failed")
Key = tuple[str, str, str]  # (plural, namespace, name)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# What the API server answers for a watch from a resourceVersion it no longer holds: HTTP 200
# and one ERROR event whose object is this Status, then the end of the stream. The shape as a
# real server wrote it: wso2/apk#571 (https://github.com/wso2/apk/issues/571, 2023-01-27):
# {"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
#  "message":"too old resource version: 657887 (680402)","reason":"Expired","code":410}}
# (the watch cache's message, kubernetes/kubernetes#16628; the 200-then-ERROR form,
# kubernetes/kubernetes#25151; read 2026-11-27).
def expired_status(asked: int, oldest: int) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {asked} ({oldest})", "reason": "Expired",
            "code": 410}


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


# -- label selectors -----------------------------------------------------------------------------
_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_selector(text: str) -> Iterator[str]:
    depth, start = 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    yield text[start:]


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    """The label selector grammar the API server accepts: `k=v`, `k==v`, `k!=v`, `k`, `!k`,
    `k in (a,b)`, `k notin (a,b)`, joined by commas."""
    for term in (t.strip() for t in _split_selector(selector or "")):
        if not term:
            continue
        if m := _SET.match(term):
            values = {v.strip() for v in m.group(3).split(",")}
            present = labels.get(m.group(1)) in values
            if present != (m.group(2) == "in"):
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = re.split(r"==?", term, maxsplit=1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _field_matches(selector: str, obj: dict[str, Any]) -> bool:
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        path, _, want = term.partition("=")
        value: Any = obj
        for part in path.lstrip("=").split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if str(value if value is not None else "") != want.lstrip("="):
            return False
    return True



def _tolerates(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol["key"] == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (
        taint.get("value") or "")


_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9,
           "T": 1e12, "m": 1e-3}


def _quantity(text: str | int | float) -> float:
    s = str(text)
    for suffix, factor in sorted(_SUFFIX.items(), key=lambda kv: -len(kv[0])):
        if s.endswith(suffix):
            return float(s[:-len(suffix)]) * factor
    return float(s)


def _requests(pod: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in pod["spec"].get("containers") or []:
        res = c.get("resources") or {}
        for k, v in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            out[k] = out.get(k, 0.0) + _quantity(v)
    return out


def _field_ref(pod: dict[str, Any], path: str | None) -> str:
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path or "")
    if m:
        return str((pod["metadata"].get(m.group(1)) or {}).get(m.group(2), ""))
    table = {"metadata.name": pod["metadata"]["name"],
             "metadata.namespace": pod["metadata"].get("namespace", ""),
             "metadata.uid": pod["metadata"]["uid"], "spec.nodeName": pod["spec"].get(
                 "nodeName", ""),
             "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
             "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1"}
    return str(table.get(path or "", ""))


def _remap(value: str, mounts: dict[str, Path]) -> str:
    for mount_path, local in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
        if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
            return str(local) + value[len(mount_path.rstrip("/")):]
    return value




# -- patches -------------------------------------------------------------------------------------
# Lists a strategic merge patch merges by a key (the API types' patchMergeKey), where the fake
# meets them; every other list is atomic, replaced whole (a Node's `spec.taints` is: NodeSpec
# declares no patch strategy for it). NodeStatus.conditions: patchStrategy=merge,
# patchMergeKey=type (k8s.io/api core/v1 types.go).
MERGE_KEYS = {("status", "conditions"): "type"}


def merge_patch(target: Any, change: Any, *, strategic: bool,
                path: tuple[str, ...] = ()) -> Any:
    """RFC 7386 JSON merge patch; with `strategic`, the lists of MERGE_KEYS merge by key (a
    `{"$patch": "delete", key: ...}` item removes one) as a strategic merge patch does."""
    key = MERGE_KEYS.get(path) if strategic else None
    if key is not None and isinstance(change, list):
        out = [copy.deepcopy(x) for x in target or []] if isinstance(target, list) else []
        for item in change:
            at = next((i for i, x in enumerate(out) if isinstance(x, dict)
                       and x.get(key) == item.get(key)), None)
            if item.get("$patch") == "delete":
                if at is not None:
                    out.pop(at)
            elif at is None:
                out.append(copy.deepcopy(item))
            else:
                out[at] = merge_patch(out[at], item, strategic=True, path=(*path, "[]"))
        return out
    if not isinstance(change, dict):
        return copy.deepcopy(change)
    out_map = dict(target) if isinstance(target, dict) else {}
    for k, v in change.items():
        if v is None:
            out_map.pop(k, None)
        else:
            out_map[k] = merge_patch(out_map.get(k), v, strategic=strategic, path=(*path, k))
    return out_map


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 JSON patch (add, remove, replace, test), as the API server applies it: a
    failed `test` or a missing path refuses the whole patch (422)."""
    doc = copy.deepcopy(obj)
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "a JSON patch is a list of operations")
    for op in ops:
        parts = _pointer(op.get("path", ""))
        if not parts:
            raise ApiError(422, "Invalid", "the fake cannot patch the whole object")
        parent: Any = doc
        for p in parts[:-1]:
            try:
                parent = parent[int(p)] if isinstance(parent, list) else parent[p]
            except (KeyError, IndexError, ValueError):
                raise ApiError(422, "Invalid", f"doc is missing path: {op.get('path')}") \
                    from None
        last, kind = parts[-1], op.get("op")
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if kind == "add":
                parent.insert(index, copy.deepcopy(op.get("value")))
            elif kind in ("remove", "replace", "test") and not 0 <= index < len(parent):
                raise ApiError(422, "Invalid", f"doc is missing path: {op.get('path')}")
            elif kind == "remove":
                parent.pop(index)
            elif kind == "replace":
                parent[index] = copy.deepcopy(op.get("value"))
            elif kind == "test" and parent[index] != op.get("value"):
                raise ApiError(422, "Invalid", f"the test of {op.get('path')} failed")
        elif isinstance(parent, dict):
            if kind in ("remove", "replace", "test") and last not in parent:
                raise ApiError(422, "Invalid", f"doc is missing path: {op.get('path')}")
            if kind in ("add", "replace"):
                parent[last] = copy.deepcopy(op.get("value"))
            elif kind == "remove":
                parent.pop(last)
            elif kind == "test" and parent[last] != op.get("value"):
                raise ApiError(422, "Invalid", f"the test of {op.get('path')} failed")
        else:
            raise ApiError(422, "Invalid", f"doc is missing path: {op.get('path')}")
        if kind not in ("add", "remove", "replace", "test"):
            raise ApiError(422, "Invalid", f"JSON patch op {kind!r} is not supported here")
    return doc


def node_affinity_matches(pod_spec: dict[str, Any], labels: dict[str, str]) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution: any term whose every expression holds
    (In, NotIn, Exists, DoesNotExist)."""
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if not required:
        return True
    for term in required:
        ok = True
        for expr in term.get("matchExpressions") or []:
            value, values = labels.get(expr["key"]), set(expr.get("values") or [])
            op = expr.get("operator")
            ok = ok and {"In": value in values, "NotIn": value not in values,
                         "Exists": expr["key"] in labels,
                         "DoesNotExist": expr["key"] not in labels}.get(op, False)
        if ok:
            return True
    return False


def pod_volumes(pod: dict[str, Any], container: dict[str, Any], workdir: Any,
                configmap: Any) -> tuple[dict[str, Any], list[tuple[Any, str]]]:
    """Each volume `container` mounts, made a local directory under `workdir` as a kubelet
    would fill it (a ConfigMap's keys, or its `items`; downward-API files from field refs):
    (mountPath -> directory, [(downward file, fieldPath)] to refresh as the pod changes).
    `configmap(name)` reads a ConfigMap of the pod's namespace (None when missing). Both node
    stand-ins use it: the fake cluster's and the real control plane's."""
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    mounts: dict[str, Any] = {}
    downward: list[tuple[Any, str]] = []
    for m in container.get("volumeMounts") or []:
        vol = volumes.get(m["name"], {})
        target = workdir / "volumes" / m["name"]
        target.mkdir(parents=True, exist_ok=True)
        if "configMap" in vol:
            data = (configmap(vol["configMap"]["name"]) or {}).get("data") or {}
            items = vol["configMap"].get("items") or [{"key": k, "path": k} for k in data]
            for item in items:
                dest = target / item["path"]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(data.get(item["key"], ""), encoding="utf-8")
        for item in (vol.get("downwardAPI") or {}).get("items") or []:
            field_path = (item.get("fieldRef") or {}).get("fieldPath", "")
            dest = target / item["path"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(_field_ref(pod, field_path), encoding="utf-8")
            downward.append((dest, field_path))
        mounts[m["mountPath"]] = target
    return mounts, downward
