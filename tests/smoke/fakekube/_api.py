"""The fake API server's vocabulary: resources, errors, label and field selectors, and the
small pure rules its controllers share (tolerations, quantities, requests, field refs)."""

from __future__ import annotations

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
    "provisioningrequests": ("ProvisioningRequest", "autoscaling.x-k8s.io/v1", True),
}
GROUPS = {"batch/v1": {"jobs"}, "jobset.x-k8s.io/v1alpha2": {"jobsets"},
          "kueue.x-k8s.io/v1beta2": {"resourceflavors", "clusterqueues", "localqueues",
                                     "admissionchecks", "provisioningrequestconfigs",
                                     "cohorts"},
          "autoscaling.x-k8s.io/v1": {"provisioningrequests"}}
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
                 "nodeName", ""), "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1"}
    return str(table.get(path or "", ""))


def _remap(value: str, mounts: dict[str, Path]) -> str:
    for mount_path, local in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
        if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
            return str(local) + value[len(mount_path.rstrip("/")):]
    return value


