"""A small stateful fake Kubernetes API server on loopback, owned by the tests (stdlib only).

The real `kubernetes` client talks to it over HTTP. It keeps Namespaces, Nodes, ConfigMaps,
Services, Events, Pods, batch/v1 Jobs and jobset.x-k8s.io/v1alpha2 JobSets, and runs the
controllers a smoke run relies on, the way the real ones behave where it matters here:

- JobSet controller: one Job per replicated job and replica (`<jobset>-<rjob>-<i>`).
- Job controller: one pod per index of an Indexed Job (labels `job-name`,
  `batch.kubernetes.io/job-completion-index`, hostname `<job>-<i>`, the JOB_COMPLETION_INDEX
  env); `activeDeadlineSeconds`, `backoffLimit` and `backoffLimitPerIndex` end the Job and
  delete its active pods as the real controller does.
- Scheduler: nodeSelector, taints against tolerations, resource requests against allocatable,
  cordoned nodes, required pod anti-affinity on the hostname; a pod that fits nowhere gets the
  `PodScheduled=False/Unschedulable` condition and a `FailedScheduling` Event with the real
  scheduler's wording (`0/4 nodes are available: 4 node(s) didn't match Pod's node
  affinity/selector.`).
- Kubelet: each bound pod's container command runs as a local subprocess on this machine
  (`python` is this interpreter); ConfigMap volumes are written to a directory per pod and
  the container's paths under a mount are rewritten to it; env `valueFrom.fieldRef` is
  resolved; a pod DNS name (`<hostname>.<subdomain>`, backed by a headless Service) resolves to
  127.0.0.1. Its combined stdout and stderr is the pod log.
- Deletion honours `propagationPolicy` (Orphan, the API's default for Jobs, leaves the pods).
- PATCH takes a JSON merge patch or a strategic merge patch (the same here: exact for maps and
  for atomic lists such as a Node's `spec.taints`; a JSON patch is refused with 415), and a
  patch that carries `metadata.resourceVersion` is refused with 409 Conflict when the object
  has changed since, as the real server's optimistic concurrency does.

Test hooks: `add_node`, `set_node_command` (run this argv instead on a node), `set_node_output`
(no process at all: the pod prints this and exits; for benchmarks), `fail_next` (answer the
next N matching requests with an error), `objects` (everything left, by label selector).
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

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
}
GROUPS = {"batch/v1": {"jobs"}, "jobset.x-k8s.io/v1alpha2": {"jobsets"}}
OWNS = {"jobsets": ("jobs", "services"), "jobs": ("pods",)}  # kind -> kinds it may own
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


# -- the store -------------------------------------------------------------------------------------
@dataclass
class _Proc:
    popen: subprocess.Popen[bytes] | None
    log: Path
    workdir: Path


@dataclass
class _Failure:
    remaining: int
    status: int
    path_contains: str


@dataclass
class FakeCluster:
    """The fake API server and its controllers. Start it with `start()`, stop with `stop()`."""

    root: Path
    tick_s: float = 0.05
    base_env: dict[str, str] = field(default_factory=lambda: {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    store: dict[Key, dict[str, Any]] = field(default_factory=dict, repr=False)
    requests: list[tuple[str, str]] = field(default_factory=list, repr=False)  # (method, path)

    def __post_init__(self) -> None:
        self.lock = threading.RLock()
        self._procs: dict[Key, _Proc] = {}
        self._commands: dict[str, list[str]] = {}
        self._outputs: dict[str, tuple[str, int]] = {}
        self._failures: list[_Failure] = []
        self._stop = threading.Event()
        self._rv = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._expanded: set[str] = set()  # JobSets whose Jobs were created

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake cluster first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        handler = type("Handler", (_Handler,), {"cluster": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._threads = [threading.Thread(target=self._server.serve_forever, daemon=True),
                         threading.Thread(target=self._control_loop, daemon=True)]
        for t in self._threads:
            t.start()
        self.create("namespaces", "", {"metadata": {"name": "default"}})
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for t in self._threads:
            t.join(5)
        with self.lock:
            for key in list(self._procs):
                self._kill(key)

    def kubeconfig(self, path: Path, *, context: str = "fake") -> Path:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [{"name": context, "context": {"cluster": "fake", "user": "fake"}}],
        }), encoding="utf-8")
        return path

    # -- test hooks -------------------------------------------------------------------------
    def add_node(self, name: str, *, labels: dict[str, str] | None = None,
                 taints: list[dict[str, str]] | None = None,
                 allocatable: dict[str, str] | None = None) -> dict[str, Any]:
        alloc = {"cpu": "8", "memory": "32Gi", "pods": "110", **(allocatable or {})}
        return self.create("nodes", "", {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  **(labels or {})}},
            "spec": {"taints": list(taints or [])},
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True"}]}})

    def set_node_command(self, node: str, argv: list[str]) -> None:
        """Pods on `node` run `argv` (`python` is this interpreter) instead of their command."""
        self._commands[node] = list(argv)

    def set_node_output(self, node: str, text: str, exit_code: int = 0) -> None:
        """Pods on `node` start no process: they print `text` and exit. `node` '*' is every
        node without a command of its own."""
        self._outputs[node] = (text, exit_code)

    def fail_next(self, count: int, *, status: int = 500, path_contains: str = "") -> None:
        """Answer the next `count` requests whose path contains `path_contains` with `status`
        (0: close the connection without an answer, as a dropped connection does)."""
        with self.lock:
            self._failures.append(_Failure(count, status, path_contains))

    def failures_left(self) -> int:
        """Injected failures not yet served."""
        with self.lock:
            return sum(f.remaining for f in self._failures)

    def objects(self, selector: str = "") -> list[dict[str, Any]]:
        """Every object left (Nodes, Namespaces and Events aside) matching a label selector."""
        with self.lock:
            return [copy.deepcopy(o) for (plural, _, _), o in sorted(self.store.items())
                    if plural not in ("nodes", "namespaces", "events")
                    and selector_matches(selector, o["metadata"].get("labels") or {})]

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self.store.get((plural, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    # -- API operations ---------------------------------------------------------------------
    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        kind, api_version, namespaced = RESOURCES[plural]
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = meta["generateName"] + secrets.token_hex(3)[:5]
        if not name:
            raise ApiError(422, "Invalid", f"{kind}: metadata.name: Required value")
        with self.lock:
            if namespaced and ("namespaces", "", namespace) not in self.store:
                raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
            key = (plural, namespace if namespaced else "", name)
            if key in self.store:
                raise ApiError(409, "AlreadyExists", f'{plural} "{name}" already exists')
            meta.update(name=name, uid=secrets.token_hex(16), creationTimestamp=_now(),
                        resourceVersion=str(next(self._rv)))
            if namespaced:
                meta["namespace"] = namespace
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", api_version)
            if kind == "Pod":
                obj.setdefault("status", {"phase": "Pending"})
            self.store[key] = obj
            return copy.deepcopy(obj)

    def read(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        obj = self.get(plural, namespace, name)
        if obj is None:
            raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
        return obj

    def list(self, plural: str, namespace: str | None, label_selector: str = "",
             field_selector: str = "", limit: int = 0, cont: str = "") -> dict[str, Any]:
        """A list, a page of `limit` items at a time when asked (`continue` is the offset)."""
        kind, api_version, _ = RESOURCES[plural]
        with self.lock:
            matches = [o for (p, ns, _), o in sorted(self.store.items())
                       if p == plural and (namespace is None or ns == namespace)
                       and selector_matches(label_selector, o["metadata"].get("labels") or {})
                       and _field_matches(field_selector, o)]
            start = int(cont or 0)
            end = start + limit if limit > 0 else len(matches)
            items = [copy.deepcopy(o) for o in matches[start:end]]
        meta = {"resourceVersion": str(next(self._rv))}
        if end < len(matches):
            meta["continue"] = str(end)
        return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta,
                "items": items}

    def delete(self, plural: str, namespace: str, name: str, propagation: str | None) -> None:
        with self.lock:
            key = (plural, namespace, name)
            obj = self.store.pop(key, None)
            if obj is None:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            if plural == "pods":
                self._kill(key)
            default = "Orphan" if plural == "jobs" else "Background"  # the API's own defaults
            if (propagation or default) == "Orphan":
                return
            uid = obj["metadata"]["uid"]
            for child in OWNS.get(plural, ()):  # the garbage collector, for what can own
                for child_key, o in self._of_kind(child):
                    owners = o["metadata"].get("ownerReferences") or []
                    if any(r.get("uid") == uid for r in owners) and child_key in self.store:
                        self.delete(*child_key, propagation="Background")

    def delete_collection(self, plural: str, namespace: str, label_selector: str,
                          propagation: str | None) -> None:
        with self.lock:
            for (p, ns, name), o in list(self.store.items()):
                if p == plural and ns == namespace and (p, ns, name) in self.store and \
                        selector_matches(label_selector, o["metadata"].get("labels") or {}):
                    self.delete(p, ns, name, propagation)

    def patch(self, plural: str, namespace: str, name: str, patch: Any) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386); a strategic merge patch is treated the same, which is
        exact for maps and for the atomic lists patched here (a Node's `spec.taints` has no
        merge key: a strategic merge patch replaces it whole). A `metadata.resourceVersion`
        in the patch is a precondition: 409 Conflict when the object has changed since."""
        def merge(target: Any, change: Any) -> Any:
            if not isinstance(change, dict):
                return copy.deepcopy(change)
            out = dict(target) if isinstance(target, dict) else {}
            for k, v in change.items():
                if v is None:
                    out.pop(k, None)
                else:
                    out[k] = merge(out.get(k), v)
            return out

        with self.lock:
            key = (plural, namespace, name)
            if key not in self.store:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            want = ((patch or {}).get("metadata") or {}).get("resourceVersion")
            if want is not None and want != self.store[key]["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {plural} '
                               f'"{name}": the object has been modified; please apply your '
                               "changes to the latest version and try again")
            obj = merge(self.store[key], patch)
            obj["metadata"]["resourceVersion"] = str(next(self._rv))
            self.store[key] = obj
            return copy.deepcopy(obj)

    def pod_log(self, namespace: str, name: str, tail_lines: int | None) -> str:
        with self.lock:
            if ("pods", namespace, name) not in self.store:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            proc = self._procs.get(("pods", namespace, name))
        if proc is None or not proc.log.exists():
            return ""
        text = proc.log.read_text(encoding="utf-8", errors="replace")
        if tail_lines is not None:
            text = "".join(text.splitlines(keepends=True)[-tail_lines:]) if tail_lines else ""
        return text

    def take_failure(self, path: str) -> int | None:
        with self.lock:
            for f in self._failures:
                if f.remaining > 0 and f.path_contains in path:
                    f.remaining -= 1
                    return f.status
        return None

    # -- controllers ------------------------------------------------------------------------
    def _control_loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            with self.lock:
                self._jobsets()
                self._jobs()
                self._schedule()
                self._kubelet()

    def _of_kind(self, plural: str) -> list[tuple[Key, dict[str, Any]]]:
        return [(k, o) for k, o in self.store.items() if k[0] == plural]

    def _pods_by_owner(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for _, pod in self._of_kind("pods"):
            for ref in pod["metadata"].get("ownerReferences") or []:
                out.setdefault(ref.get("uid", ""), []).append(pod)
        return out

    @staticmethod
    def _owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
        m = obj["metadata"]
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": m["name"],
                "uid": m["uid"], "controller": True, "blockOwnerDeletion": True}

    def _jobsets(self) -> None:
        for (_, ns, name), js in self._of_kind("jobsets"):
            if js["metadata"]["uid"] in self._expanded:
                continue
            self._expanded.add(js["metadata"]["uid"])
            for rjob in js["spec"]["replicatedJobs"]:
                for i in range(int(rjob.get("replicas", 1))):
                    tmpl = copy.deepcopy(rjob["template"])
                    meta = tmpl.setdefault("metadata", {})
                    meta["name"] = f"{name}-{rjob['name']}-{i}"
                    meta["labels"] = {**(meta.get("labels") or {}),
                                      "jobset.sigs.k8s.io/jobset-name": name,
                                      "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                                      "jobset.sigs.k8s.io/job-index": str(i)}
                    meta["ownerReferences"] = [self._owner_ref(js)]
                    pod_meta = tmpl["spec"]["template"].setdefault("metadata", {})
                    pod_meta["labels"] = {**(pod_meta.get("labels") or {}),  # as the real one
                                          **{k: v for k, v in meta["labels"].items()
                                             if k.startswith("jobset.sigs.k8s.io/")}}
                    if js["spec"].get("network", {}).get("enableDNSHostnames", True):
                        tmpl["spec"]["template"]["spec"].setdefault("subdomain", name)
                    self.create("jobs", ns, tmpl)

    def _jobs(self) -> None:
        now = time.time()
        jobs = [(k, j) for k, j in self._of_kind("jobs")
                if not (j.get("status") or {}).get("conditions")]
        for (_, ns, _), job in jobs:
            if "startTime" not in job.setdefault("status", {}):
                job["status"].update(startTime=_now(), started=now)
                self._create_job_pods(ns, job)
        owned = self._pods_by_owner() if jobs else {}
        for (_, ns, _), job in jobs:
            spec, status = job["spec"], job["status"]
            pods = owned.get(job["metadata"]["uid"], [])
            failed = [q for q in pods if q["status"].get("phase") == "Failed"]
            done = [q for q in pods if q["status"].get("phase") == "Succeeded"]
            status.update(active=len(pods) - len(failed) - len(done), failed=len(failed),
                          succeeded=len(done))
            why = None
            # backoffLimit defaults to 6, or to 2147483647 with backoffLimitPerIndex (JobSpec)
            per_index = spec.get("backoffLimitPerIndex") is not None
            limit = 2147483647 if per_index else 6
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and now - status["started"] >= deadline:
                why = ("DeadlineExceeded", "Job was active longer than specified deadline")
            elif len(failed) > int(spec.get("backoffLimit", limit)):
                why = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
            elif per_index and spec.get("maxFailedIndexes") is not None and \
                    len(failed) > int(spec["maxFailedIndexes"]):
                why = ("MaxFailedIndexesExceeded", "Job has exceeded maxFailedIndexes")
            elif per_index and failed and len(failed) + len(done) == len(pods):
                why = ("FailedIndexes", "Job has failed indexes")
            if why is not None:
                status["conditions"] = [{"type": "Failed", "status": "True", "reason": why[0],
                                         "message": why[1]}]
                for q in pods:  # the controller deletes the failed Job's active pods
                    if q["status"].get("phase") not in TERMINAL:
                        self.delete("pods", ns, q["metadata"]["name"], None)
            elif pods and len(done) == len(pods):
                status["conditions"] = [{"type": "Complete", "status": "True"}]

    def _create_job_pods(self, ns: str, job: dict[str, Any]) -> None:
        spec = job["spec"]
        name = job["metadata"]["name"]
        indexed = spec.get("completionMode") == "Indexed"
        for i in range(int(spec.get("completions", 1))):
            tmpl = copy.deepcopy(spec["template"])
            meta = tmpl.setdefault("metadata", {})
            labels = {**(meta.get("labels") or {}), "job-name": name,
                      "batch.kubernetes.io/job-name": name,
                      "controller-uid": job["metadata"]["uid"]}
            pod_spec = tmpl["spec"]
            if indexed:
                labels[INDEX] = str(i)
                meta["annotations"] = {**(meta.get("annotations") or {}), INDEX: str(i)}
                if pod_spec.get("subdomain"):
                    pod_spec.setdefault("hostname", f"{name}-{i}")
                for c in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
                    c["env"] = [*(c.get("env") or []), {"name": "JOB_COMPLETION_INDEX",
                                "valueFrom": {"fieldRef": {
                                    "fieldPath": f"metadata.annotations['{INDEX}']"}}}]
            meta.update(labels=labels, name=f"{name}-{i}-{secrets.token_hex(3)[:5]}",
                        ownerReferences=[self._owner_ref(job)])
            self.create("pods", ns, tmpl)

    def _schedule(self) -> None:
        pods = self._of_kind("pods")
        pending = [(k, o) for k, o in pods if not o["spec"].get("nodeName")]
        if not pending:
            return
        nodes = [o for _, o in sorted(self._of_kind("nodes"))]
        on_node: dict[str, list[dict[str, Any]]] = {}
        for _, o in pods:
            if o["spec"].get("nodeName") and o["status"].get("phase") not in TERMINAL:
                on_node.setdefault(o["spec"]["nodeName"], []).append(o)
        by_label: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for node in nodes:
            for kv in (node["metadata"].get("labels") or {}).items():
                by_label.setdefault(kv, []).append(node)
        for (_, ns, _), pod in pending:
            # Only nodes with the pod's first selector label can fit: the same placement as
            # trying every node, in far fewer checks on a large fake cluster.
            first = list((pod["spec"].get("nodeSelector") or {}).items())[:1]
            for node in by_label.get(first[0], []) if first else nodes:
                here = on_node.setdefault(node["metadata"]["name"], [])
                if self._unfit(pod, node, here) is None:
                    here.append(pod)
                    pod["spec"]["nodeName"] = node["metadata"]["name"]
                    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
                    break
            else:
                reasons: dict[str, int] = {}
                for node in nodes:
                    why = self._unfit(pod, node, on_node.get(node["metadata"]["name"], []))
                    reasons[str(why)] = reasons.get(str(why), 0) + 1
                detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
                message = (f"0/{len(nodes)} nodes are available: {detail}. preemption: "
                           f"0/{len(nodes)} nodes are available: {len(nodes)} Preemption is "
                           "not helpful for scheduling.")
                old = (pod["status"].get("conditions") or [{}])[0].get("message")
                pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable", "message": message}]
                if old != message:
                    self._event(ns, pod, "FailedScheduling", message, "Warning")

    def _event(self, ns: str, obj: dict[str, Any], reason: str, message: str,
               type_: str = "Normal") -> None:
        m = obj["metadata"]
        self.create("events", ns, {
            "metadata": {"name": f"{m['name']}.{secrets.token_hex(8)}"},
            "involvedObject": {"kind": obj["kind"], "name": m["name"], "namespace": ns,
                               "uid": m["uid"]},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "firstTimestamp": _now(), "lastTimestamp": _now(),
            "source": {"component": "default-scheduler"}})

    @staticmethod
    def _unfit(pod: dict[str, Any], node: dict[str, Any],
               here: list[dict[str, Any]]) -> str | None:
        """Why `pod` cannot go on `node` (where the pods `here` run), or None."""
        spec, labels = pod["spec"], node["metadata"].get("labels") or {}
        if node.get("spec", {}).get("unschedulable"):
            return "node(s) were unschedulable"
        if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
            return "node(s) didn't match Pod's node affinity/selector"
        for taint in node.get("spec", {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
                    _tolerates(t, taint) for t in spec.get("tolerations") or []):
                return f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"
        alloc = node.get("status", {}).get("allocatable") or {}
        for resource, want in _requests(pod).items():
            used = sum(_requests(o).get(resource, 0.0) for o in here)
            if resource not in alloc or _quantity(alloc[resource]) - used < want:
                return f"Insufficient {resource}"
        anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or []
        for term in anti:
            if term.get("topologyKey") != "kubernetes.io/hostname":
                continue
            match = (term.get("labelSelector") or {}).get("matchLabels") or {}
            if any(all((o["metadata"].get("labels") or {}).get(k) == v
                       for k, v in match.items()) for o in here):
                return "node(s) didn't match pod anti-affinity rules"
        return None

    def _kubelet(self) -> None:
        for key, pod in self._of_kind("pods"):
            if not pod["spec"].get("nodeName"):
                continue
            phase = pod["status"].get("phase")
            if phase == "Pending" and key not in self._procs:
                self._start(key, pod)
            elif phase == "Running":
                proc = self._procs[key]
                code = proc.popen.poll() if proc.popen is not None else 0
                if code is not None:
                    self._terminated(pod, code)

    def _start(self, key: Key, pod: dict[str, Any]) -> None:
        node = pod["spec"]["nodeName"]
        workdir = self.root / "pods" / key[1] / key[2]
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "log"
        container = pod["spec"]["containers"][0]
        canned = self._outputs.get(node) if node not in self._commands else None
        if canned is None and node not in self._commands:
            canned = self._outputs.get("*")
        if canned is not None:
            log.write_text(canned[0] if canned[0].endswith("\n") else canned[0] + "\n",
                           encoding="utf-8")
            self._procs[key] = _Proc(None, log, workdir)
            self._running(pod)
            self._terminated(pod, canned[1])
            return
        mounts = self._volumes(key, pod, container, workdir)
        argv = self._commands.get(node) or [*(container.get("command") or []),
                                            *(container.get("args") or [])]
        argv = [_remap(a, mounts) for a in argv]
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        env = {**self.base_env, "HOME": str(workdir), "TMPDIR": str(workdir),
               "HOSTNAME": pod["spec"].get("hostname") or pod["metadata"]["name"]}
        for var in container.get("env") or []:
            value = var.get("value")
            if value is None and "valueFrom" in var:
                value = _field_ref(pod, var["valueFrom"].get("fieldRef", {}).get("fieldPath"))
            env[var["name"]] = self._resolve(key[1], _remap(value or "", mounts))
        with log.open("wb") as out:
            try:
                popen = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
            except OSError as exc:
                out.write(f"failed to start {argv[:1]}: {exc}\n".encode())
                self._procs[key] = _Proc(None, log, workdir)
                self._running(pod)
                self._terminated(pod, 128)
                return
        self._procs[key] = _Proc(popen, log, workdir)
        self._running(pod)

    def _volumes(self, key: Key, pod: dict[str, Any], container: dict[str, Any],
                 workdir: Path) -> dict[str, Path]:
        """Each volume the container mounts as a local directory: mountPath -> directory."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        mounts: dict[str, Path] = {}
        for m in container.get("volumeMounts") or []:
            vol = volumes.get(m["name"], {})
            target = workdir / "volumes" / m["name"]
            target.mkdir(parents=True, exist_ok=True)
            if "configMap" in vol:
                cm = self.store.get(("configmaps", key[1], vol["configMap"]["name"]))
                data = (cm or {}).get("data") or {}
                items = vol["configMap"].get("items") or [{"key": k, "path": k} for k in data]
                for item in items:
                    dest = target / item["path"]
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_text(data.get(item["key"], ""), encoding="utf-8")
            mounts[m["mountPath"]] = target
        return mounts

    def _resolve(self, ns: str, value: str) -> str:
        """Cluster DNS for a pod name `<hostname>.<subdomain>[.<ns>.svc[.cluster.local]]`:
        loopback, when a Service named like the subdomain exists and such a pod does."""
        parts = value.split(".")
        if len(parts) < 2 or ("services", ns, parts[1]) not in self.store:
            return value
        if parts[2:] not in ([], [ns, "svc"], [ns, "svc", "cluster", "local"]):
            return value
        for (p, pns, _), o in self.store.items():
            if p == "pods" and pns == ns and o["spec"].get("hostname") == parts[0] and \
                    o["spec"].get("subdomain") == parts[1]:
                return "127.0.0.1"
        return value

    def _running(self, pod: dict[str, Any]) -> None:
        pod["status"].update(phase="Running", podIP="127.0.0.1", startTime=_now(),
                             containerStatuses=[{"name": c["name"], "ready": True,
                                                 "restartCount": 0, "state": {
                                                     "running": {"startedAt": _now()}}}
                                                for c in pod["spec"]["containers"]])

    @staticmethod
    def _terminated(pod: dict[str, Any], code: int) -> None:
        if code < 0:  # killed by a signal, as the kubelet reports it
            code = 128 - code
        pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
        for cs in pod["status"].get("containerStatuses") or []:
            cs["ready"] = False
            cs["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0
                                          else "Error", "finishedAt": _now()}}

    def _kill(self, key: Key) -> None:
        proc = self._procs.pop(key, None)
        if proc is None:
            return
        if proc.popen is not None and proc.popen.poll() is None:
            try:
                os.killpg(proc.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.popen.wait(10)
        shutil.rmtree(proc.workdir, ignore_errors=True)


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


# -- HTTP --------------------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    cluster: FakeCluster
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each keep-alive answer waits ~40 ms for a delayed ACK

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else None

    def _send(self, code: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        c = self.cluster
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = self._body()
        with c.lock:
            c.requests.append((method, url.path))
        try:
            code = c.take_failure(url.path)
            if code == 0:  # a dropped connection: no answer at all
                self.close_connection = True
                return
            if code is not None:
                raise ApiError(code, "InternalError" if code >= 500 else "TooManyRequests",
                               "injected failure")
            result = self._route(method, url.path.rstrip("/").split("/")[1:], query, body)
        except ApiError as exc:
            self._send(exc.code, exc.status())
            return
        if isinstance(result, str):
            self._send(200, result, "text/plain")
        else:
            self._send(201 if method == "POST" else 200, result)

    def _route(self, method: str, parts: list[str], q: dict[str, str], body: Any) -> Any:
        c = self.cluster
        if parts == ["version"]:
            return {"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake",
                    "gitCommit": "fake", "gitTreeState": "clean", "buildDate": _now(),
                    "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis" and f"{parts[1]}/{parts[2]}" in GROUPS:
            rest = parts[3:]
            allowed = GROUPS[f"{parts[1]}/{parts[2]}"]
            plural = rest[2] if len(rest) > 2 and rest[0] == "namespaces" else rest[0]
            if plural not in allowed:
                raise ApiError(404, "NotFound", "the server could not find the resource")
        else:
            raise ApiError(404, "NotFound", f"no route for /{'/'.join(parts)}")
        namespace = ""
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        plural, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2:]
        namespaced = RESOURCES[plural][2]
        ns = namespace if namespaced else ""
        propagation = q.get("propagationPolicy") or (body or {}).get("propagationPolicy")
        if sub == ["log"] and plural == "pods" and method == "GET":
            tail = q.get("tailLines")
            return c.pod_log(ns, name, int(tail) if tail is not None else None)
        if sub:
            raise ApiError(404, "NotFound", f"no subresource {'/'.join(sub)}")
        if method == "GET" and name:
            return c.read(plural, ns, name)
        if method == "GET":
            return c.list(plural, ns if namespace or not namespaced else None,
                          q.get("labelSelector", ""), q.get("fieldSelector", ""),
                          int(q.get("limit") or 0), q.get("continue", ""))
        if method == "POST" and not name:
            return c.create(plural, ns, body or {})
        if method == "DELETE" and name:
            obj = c.read(plural, ns, name)
            c.delete(plural, ns, name, propagation)
            return obj
        if method == "DELETE":
            c.delete_collection(plural, ns, q.get("labelSelector", ""), propagation)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        if method == "PATCH" and name:
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if kind not in ("application/merge-patch+json",
                            "application/strategic-merge-patch+json"):
                raise ApiError(415, "UnsupportedMediaType", f"the fake server takes merge and "
                               f"strategic merge patches, not {kind or 'no content type'}")
            return c.patch(plural, ns, name, body)
        raise ApiError(405, "MethodNotAllowed", f"{method} not supported here")
