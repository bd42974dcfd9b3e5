"""The fake cluster's store, its API operations and its test hooks."""

from __future__ import annotations

import copy
import itertools
import json
import os
import secrets
import threading
from collections.abc import Callable
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
    selector_matches,
)
from tests.smoke.fakekube._controllers import _Proc
from tests.smoke.fakekube._http import _Handler
from tests.smoke.fakekube._kueue import _KueueControllers


# -- the store -------------------------------------------------------------------------------------
@dataclass
class _Failure:
    remaining: int
    status: int
    path_contains: str


@dataclass
class FakeCluster(_KueueControllers):
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
        self._lies: list[list[Any]] = []  # [method, path part, rule, times left]
        self._stop = threading.Event()
        self._rv = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._expanded: set[str] = set()  # JobSets whose Jobs were created
        self._autoscaled = {}  # node pools the autoscaler grows (add_autoscaled_pool)
        self._admitting = {}  # Kueue: job uid -> its admission so far
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

    def add_node_object(self, node: dict[str, Any]) -> dict[str, Any]:
        """A whole Node object, e.g. one built from a recorded real node
        (`tests.smoke.nodes`)."""
        return self.create("nodes", "", node)

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

    def lie(self, method: str, path_contains: str,
            rule: Callable[[Any], Any], *, times: int = -1) -> None:
        """A lying rule in front of the server: the answer to each `method` request whose path
        contains `path_contains` goes through `rule` (which may change it, or raise an
        ApiError), `times` times (-1: every time). What a hostile or broken API server says."""
        with self.lock:
            self._lies.append([method, path_contains, rule, times])

    def rewritten(self, method: str, path: str, result: Any) -> Any:
        """`result` as the lying rules tell it (the HTTP side calls this for every answer)."""
        with self.lock:
            rules = [r for r in self._lies if r[0] == method and r[1] in path and r[3] != 0]
            for r in rules:
                r[3] -= 1 if r[3] > 0 else 0
        for _, _, rule, _ in rules:
            result = rule(result)
        return result

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
