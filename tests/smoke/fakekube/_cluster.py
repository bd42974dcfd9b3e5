"""The fake cluster's store, its API operations and its test hooks (the hostile ones, which
lie, fail and send answers wrong, in _hostile_hooks.py)."""

from __future__ import annotations

import collections
import copy
import itertools
import json
import os
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.smoke.fakekube._api import (
    OWNS,
    RESOURCES,
    ApiError,
    Key,
    _field_matches,
    _now,
    json_patch,
    merge_patch,
    selector_matches,
)
from tests.smoke.fakekube._hostile_hooks import _Failure, _HostileHooks
from tests.smoke.fakekube._http import _Handler
from tests.smoke.fakekube._kubelet import _Proc
from tests.smoke.fakekube._kueue import _KueueControllers

# -- the store -------------------------------------------------------------------------------------
# A node as it registers, before its CNI is up: the condition the kubelet posts and the taint
# the node lifecycle controller sets for it (TaintNodesByCondition). The kubelet's words, as a
# new Karpenter node on EKS reported them: aws/karpenter-provider-aws#1391
# (https://github.com/aws/karpenter-provider-aws/issues/1391, 2022-06-09, read 2026-11-27).
NOT_READY = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
             "message": "container runtime network not ready: NetworkReady=false "
                        "reason:NetworkPluginNotReady message:Network plugin returns error: "
                        "cni plugin not initialized"}
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


class _Server(ThreadingHTTPServer):
    """The HTTP server, keeping what went wrong serving a request in `errors` (a client that
    hung up mid-answer, a bug of the fake) instead of printing it where the command under
    test prints (CliRunner captures every thread's stderr)."""

    errors: list[str]

    def handle_error(self, request: Any, client_address: Any) -> None:
        import traceback

        self.errors.append(traceback.format_exc())


@dataclass
class FakeCluster(_KueueControllers, _HostileHooks):
    """The fake API server and its controllers. Start it with `start()`, stop with `stop()`."""

    root: Path
    tick_s: float = 0.05
    base_env: dict[str, str] = field(default_factory=lambda: {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    store: dict[Key, dict[str, Any]] = field(default_factory=dict, repr=False)
    requests: list[tuple[str, str]] = field(default_factory=list, repr=False)  # (method, path)
    # watch: the changes kept for watchers (older ones are compacted: a watch from before them
    # is answered 410 Expired), and how often a watch that allows them gets a BOOKMARK
    watch_window: int = 100_000
    bookmark_s: float = 1.0

    def __post_init__(self) -> None:
        self.lock = threading.RLock()
        self._procs: dict[Key, _Proc] = {}
        self._commands: dict[str, list[str]] = {}
        self._outputs: dict[str, tuple[str, int]] = {}
        self._pull_s: dict[str, float] = {}
        self._placed: dict[Key, float] = {}
        self._downward: dict[Key, list[tuple[Path, str]]] = {}
        self._registered: dict[str, str] = {}
        self._failures: list[_Failure] = []
        self._lies: list[list[Any]] = []  # [method, path part, rule, times left]
        self._hostile: list[list[Any]] = []  # [method, path part, Hostile, times left]
        self.proxied: dict[tuple[str, str], str] = {}  # (namespace, "pod:port") -> its text
        self._hostile_watches: list[list[Any]] = []  # [plural, how, times left]
        self.denials: list[str] = []  # requests RBAC refused (enforce_rbac), as answered
        self.server_errors: list[str] = []  # exceptions while serving a request (tracebacks)
        self._stop = threading.Event()
        self._rv = itertools.count(1)
        self._last_rv = 0
        self._log: collections.deque[tuple[int, str, Key, dict[str, Any]]] = collections.deque()
        self._compacted = 0  # a watch from before this resourceVersion is Expired (410)
        self.changed = threading.Condition(self.lock)
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._expanded: set[str] = set()  # JobSets whose Jobs were created
        self._autoscaled = {}  # node pools the autoscaler grows (add_autoscaled_pool)
        self._admitting = {}  # Kueue: job uid -> its admission so far
        self.controller_errors = []  # what a controller tick raised (the loop goes on)
        self.accepted = []  # the ProvisioningRequests the autoscaler accepted
        self.accept_requests = True  # False: the autoscaler leaves every request waiting

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake cluster first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        handler = type("Handler", (_Handler,), {"cluster": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.errors = self.server_errors
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

    # -- resource versions and the watch log -------------------------------------------------
    def _next_rv(self) -> str:
        self._last_rv = next(self._rv)
        return str(self._last_rv)

    def _record(self, type_: str, key: Key, obj: dict[str, Any]) -> None:
        """A change for watchers (under the lock); the oldest is compacted past the window."""
        self._log.append((int(obj["metadata"]["resourceVersion"]), type_, key,
                          copy.deepcopy(obj)))
        while len(self._log) > self.watch_window:
            self._compacted = self._log.popleft()[0] + 1
        self.changed.notify_all()

    def _touched(self, plural: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        meta["resourceVersion"] = self._next_rv()
        key = (plural, meta.get("namespace", ""), meta["name"])
        if self.store.get(key) is obj:
            self._record("MODIFIED", key, obj)

    def changes(self) -> list[tuple[int, str, Key, dict[str, Any]]]:
        """Every change kept for watchers, oldest first: (resourceVersion, ADDED / MODIFIED
        / DELETED, (plural, namespace, name), the object then)."""
        with self.lock:
            return [(rv, t, k, copy.deepcopy(o)) for rv, t, k, o in self._log]

    def compact(self) -> None:
        """Forget every change so far, as etcd's compaction does: a watch from any earlier
        resourceVersion is answered 410 Expired."""
        with self.lock:
            self._log.clear()
            self._compacted = int(self._next_rv())

    def watch_from(self, since: int) -> int:
        """Check a watch may start after `since`; ApiError 410 (the real Status) if not."""
        from tests.smoke.fakekube._api import expired_status

        with self.lock:
            if since < self._compacted - 1:
                st = expired_status(since, self._compacted)
                raise ApiError(410, st["reason"], st["message"])
            return since

    def changes_after(self, since: int, wait_s: float
                      ) -> tuple[list[tuple[int, str, Key, dict[str, Any]]], int, bool]:
        """The changes after `since` (waiting up to `wait_s` for one), the resourceVersion
        up to which they are complete, and whether `since` has been compacted meanwhile."""
        with self.lock:
            if not (self._log and self._log[-1][0] > since):
                self.changed.wait(wait_s)
            if since < self._compacted - 1:
                return [], since, True
            out = []
            for e in reversed(self._log):  # newest first, back to `since`
                if e[0] <= since:
                    break
                out.append(e)
            return out[::-1], max(since, self._last_rv), False

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

    def add_node_object(self, node: dict[str, Any], *, ready: bool = True) -> dict[str, Any]:
        """A whole Node object, e.g. one built from a recorded real node
        (`tests.smoke.nodes`). `ready` False: the node as it registers, before its kubelet's
        network is up (`join`)."""
        node = copy.deepcopy(node)
        if not isinstance(node.get("status", {}), dict) or not isinstance(
                node.get("spec", {}), dict) or not isinstance(
                (node.get("spec") or {}).get("taints", []), list):
            return self.create("nodes", "", node)  # a malformed node, stored as sent (hostile)
        # a kubelet registers with its machine's facts; the boot ID changes on every reboot
        # (the real plane's stand-in, tests.controlplane._kubelet, does the same)
        info = node.setdefault("status", {}).setdefault("nodeInfo", {})
        if isinstance(info, dict):
            info.setdefault("bootID", uuid.uuid4().hex)
        # the API server's TaintNodesByCondition admission puts the not-ready taint on every
        # Node it creates; the node lifecycle controller lifts it once the node is Ready (as
        # the real control plane does: tests/controlplane/test_plane.py)
        node.setdefault("spec", {}).setdefault("taints", []).append(dict(NOT_READY_TAINT))
        if not ready:
            node.setdefault("status", {})["conditions"] = [dict(NOT_READY)]
            return self.create("nodes", "", node)
        created = self.create("nodes", "", node)
        taints = [t for t in created["spec"].get("taints") or []
                  if t.get("key") != NOT_READY_TAINT["key"]]
        return self.patch("nodes", "", created["metadata"]["name"], {"spec": {"taints": taints}})

    def set_ready(self, name: str) -> dict[str, Any]:
        """The node's kubelet reports Ready; the node lifecycle controller lifts its
        not-ready taint (two writes, as the two components make them)."""
        node = self.patch("nodes", "", name, {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "kubelet is posting ready status", "lastTransitionTime": _now()}]}},
                          kind="application/strategic-merge-patch+json", subresource="status")
        taints = [t for t in node["spec"].get("taints") or []
                  if t.get("key") != NOT_READY_TAINT["key"]]
        return self.patch("nodes", "", name, {"spec": {"taints": taints}})

    def join(self, nodes: list[dict[str, Any]], *, every_s: float = 0.0,
             ready_after_s: float = 0.0) -> threading.Thread:
        """A scale-up replayed: each node registers NotReady `every_s` after the previous
        one and turns Ready `ready_after_s` later. Returns the (started) thread doing it."""
        def replay() -> None:
            pending: list[tuple[float, str]] = []
            start = time.monotonic()
            for i, node in enumerate(nodes):
                at = start + i * every_s
                while time.monotonic() < at and not self._stop.is_set():
                    self._ready_due(pending)
                    time.sleep(0.01)
                self.add_node_object(node, ready=False)
                pending.append((time.monotonic() + ready_after_s, node["metadata"]["name"]))
            while pending and not self._stop.is_set():
                self._ready_due(pending)
                time.sleep(0.01)

        thread = threading.Thread(target=replay, daemon=True, name="fake-scale-up")
        thread.start()
        return thread

    def _ready_due(self, pending: list[tuple[float, str]]) -> None:
        now = time.monotonic()
        for item in [p for p in pending if p[0] <= now]:
            pending.remove(item)
            if self.get("nodes", "", item[1]) is not None:
                self.set_ready(item[1])

    def set_node_command(self, node: str, argv: list[str]) -> None:
        """Pods on `node` run `argv` (`python` is this interpreter) instead of their command."""
        self._commands[node] = list(argv)

    def set_node_pull_s(self, node: str, seconds: float) -> None:
        """Pods placed on `node` wait `seconds` for their image (Pending, ContainerCreating)
        before their containers start: a multi-GB image pulled on a fresh node."""
        self._pull_s[node] = seconds

    def set_node_output(self, node: str, text: str, exit_code: int = 0) -> None:
        """Pods on `node` start no process: they print `text` and exit. `node` '*' is every
        node without a command of its own."""
        self._outputs[node] = (text, exit_code)

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
                        resourceVersion=self._next_rv())
            if namespaced:
                meta["namespace"] = namespace
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", api_version)
            if kind == "Pod":
                obj.setdefault("status", {"phase": "Pending"})
            self.store[key] = obj
            self._record("ADDED", key, obj)
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
        with self.lock:
            meta = {"resourceVersion": str(self._last_rv)}
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
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self._record("DELETED", key, obj)
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

    def patch(self, plural: str, namespace: str, name: str, patch: Any, *,
              kind: str = "application/merge-patch+json", subresource: str | None = None
              ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386), a strategic merge patch (the same, but the lists
        of `_api.MERGE_KEYS` merge by their key; every other list here is atomic, a Node's
        `spec.taints` among them) or a JSON patch (RFC 6902). A `metadata.resourceVersion`
        in a merge patch (or a JSON patch's `test` of it) is a precondition: 409 Conflict when
        the object has changed since, as the real server's optimistic concurrency does.
        `subresource` "status": only the status changes (the rest of the patch is ignored);
        "": the object itself, as a client's PATCH: a Node's or Pod's status stays (it is
        the status subresource's); None (a test hook playing a controller): all of it."""
        with self.lock:
            key = (plural, namespace, name)
            if key not in self.store:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            current = self.store[key]
            if kind == "application/json-patch+json":
                try:
                    obj = json_patch(current, patch)
                except ApiError as exc:
                    if "resourceVersion" in exc.message:
                        raise self._conflict(plural, name) from None
                    raise
            else:
                want = ((patch or {}).get("metadata") or {}).get("resourceVersion")
                if want is not None and want != current["metadata"]["resourceVersion"]:
                    raise self._conflict(plural, name)
                obj = merge_patch(current, patch, strategic="strategic" in kind)
            if subresource == "status":
                obj = {**copy.deepcopy(current), "status": obj.get("status")}
            elif subresource == "" and "status" in current and plural in ("nodes", "pods"):
                obj["status"] = copy.deepcopy(current["status"])  # status: its subresource
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self.store[key] = obj
            self._record("MODIFIED", key, obj)
            return copy.deepcopy(obj)

    @staticmethod
    def _conflict(plural: str, name: str) -> ApiError:
        group = {"leases": ".coordination.k8s.io"}.get(plural, "")
        return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {plural}{group} '
                        f'"{name}": the object has been modified; please apply your changes '
                        "to the latest version and try again")

    def replace(self, plural: str, namespace: str, name: str, body: dict[str, Any], *,
                subresource: str = "") -> dict[str, Any]:
        """PUT: the whole object; its `metadata.resourceVersion`, when given, must be the
        stored one (409 Conflict otherwise); none given is an unconditional update."""
        with self.lock:
            key = (plural, namespace, name)
            if key not in self.store:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            current = self.store[key]
            want = ((body or {}).get("metadata") or {}).get("resourceVersion")
            if want and want != current["metadata"]["resourceVersion"]:
                raise self._conflict(plural, name)
            obj = copy.deepcopy(body)
            if subresource == "status":
                obj = {**copy.deepcopy(current), "status": obj.get("status")}
            meta = obj.setdefault("metadata", {})
            for k in ("uid", "creationTimestamp", "name", "namespace"):
                if k in current["metadata"]:
                    meta[k] = current["metadata"][k]
            obj.setdefault("kind", current["kind"])
            obj.setdefault("apiVersion", current["apiVersion"])
            meta["resourceVersion"] = self._next_rv()
            self.store[key] = obj
            self._record("MODIFIED", key, obj)
            return copy.deepcopy(obj)

    def set_pod_proxy(self, namespace: str, pod_port: str, text: str) -> None:
        """What GET pods/<pod:port>/proxy/... answers (a pod's own HTTP server)."""
        with self.lock:
            self.proxied[(namespace, pod_port)] = text

    def pod_proxy(self, namespace: str, pod_port: str) -> str:
        with self.lock:
            pod = pod_port.split(":", 1)[0]
            if ("pods", namespace, pod) not in self.store:
                raise ApiError(404, "NotFound", f'pods "{pod}" not found')
            if (namespace, pod_port) not in self.proxied:
                raise ApiError(503, "ServiceUnavailable", "error trying to reach service: "
                               "dial tcp: connect: connection refused")
            return self.proxied[(namespace, pod_port)]

    def pod_log(self, namespace: str, name: str, tail_lines: int | None,
                limit_bytes: int | None = None) -> str:
        with self.lock:
            if ("pods", namespace, name) not in self.store:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            proc = self._procs.get(("pods", namespace, name))
        if proc is None or not proc.log.exists():
            return ""
        text = proc.log.read_text(encoding="utf-8", errors="replace")
        if tail_lines is not None:
            text = "".join(text.splitlines(keepends=True)[-tail_lines:]) if tail_lines else ""
        if limit_bytes is not None:  # the API server's limitBytes: the first bytes of what
            # tailLines kept (kubernetes: "may not display a complete final line")
            text = text.encode()[:limit_bytes].decode("utf-8", "ignore")
        return text

    # -- controllers ------------------------------------------------------------------------
