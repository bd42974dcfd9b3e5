"""The pods bound to nodes, as the gate's idle check reads them (issue 35, the gate at 5,000
nodes): one list, then a watch from the list's resourceVersion, into a store indexed by
`spec.nodeName`, so "is this node idle?" is a lookup, never an API call per node per loop.

The informer idea is client-go's (kubernetes/client-go v0.35.7, read 2026-11-28):
- `tools/cache/reflector.go`: list, then watch from the list's resourceVersion; a watch
  answered 410 Expired (`isExpiredError`) lists again; every retry waits on the reflector's
  backoff. That loop is `smoke.gate._watch.Reflector`, the node watch's own, reused here;
- `tools/cache/shared_informer.go` `SetTransform`: each object is transformed before it is
  stored, "to strip unused metadata fields out of objects to save on RAM cost": a pod is kept
  as a `PodRecord` (its node, phase and whether a DaemonSet owns it), never whole;
- `tools/cache/index.go` (`IndexFunc`: an object's index values) and
  `tools/cache/thread_safe_store.go` (`updateIndices` on each add, update and delete,
  `Replace` rebuilding every index on a re-list, `deleteKeyFromIndex` dropping an emptied set,
  kubernetes/kubernetes issue 84959): the index here is `by_node`, node -> the keys of the
  pods that count against its idleness.

Only what idleness needs is stored: a pod bound to a node (`spec.nodeName`) that is Pending
or Running (a Succeeded or Failed pod, or one not yet scheduled, never makes a node busy: it
leaves the store as a field selector's watch would drop it). The selection is made here, not
by a server-side field selector, so a pod that turns Succeeded is seen leaving on any API
server (the tests' fake included). A pod that does not read as one
(`smoke.cluster.objects.pod_problem`) but names its node keeps that node busy (the node may
be running it), as the per-node list did; it is reported once per resourceVersion to
`rejected`. The list is paged (500 a page) and bounded: Kubernetes is built for at most
150,000 pods a cluster (https://kubernetes.io/docs/setup/best-practices/cluster-large/, v1.35,
read 2026-11-28), 300 pages; twice that is allowed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smoke.cluster import objects
from smoke.cluster.access import with_retries
from smoke.gate._kube import REQUEST_TIMEOUT_S, raw
from smoke.gate._watch import PAGE, Reflector

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

POD_MAX_PAGES = 600  # 2 x 150,000 pods / 500 a page (the module's docstring)
ACTIVE_PHASES = ("Pending", "Running")  # the phases that make a node busy


@dataclass(frozen=True)
class PodRecord:
    """A pod as the idle check needs it (client-go's transform: never the whole pod)."""

    node: str
    phase: str
    daemonset: bool  # owned by a DaemonSet: it runs on every node, idle or not
    problem: str = ""  # a pod that does not read as one: its node may be busy

    @property
    def busy(self) -> bool:
        """Whether it keeps its node from being idle."""
        return bool(self.problem) or not self.daemonset


def pod_key(obj: Any) -> str:
    """namespace/name (client-go's MetaNamespaceKeyFunc); '' when the name does not read."""
    name = objects.name_of(obj)
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return f"{ns if isinstance(ns, str) else ''}/{name}" if name else ""


def record_of(pod: dict[str, Any]) -> PodRecord | None:
    """The transform: what is stored of a pod that reads as one; None when it does not count
    for idleness (not bound to a node, or no longer Pending or Running)."""
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    phase = str((pod.get("status") or {}).get("phase") or "")
    if not node or phase not in ACTIVE_PHASES:
        return None
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return PodRecord(node, phase, any(o.get("kind") == "DaemonSet" for o in owners))


def node_of(obj: Any) -> str:
    """The node a pod (readable or not) names, '' when none reads."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    node = spec.get("nodeName") if isinstance(spec, dict) else None
    return node if isinstance(node, str) else ""


class PodInformer(Reflector):
    """Every Pending or Running pod bound to a node, indexed by node; `idle(node)` and
    `busy(node)` read it. `changed(key)` (optional) is called after each change."""

    kind, plural = "pod", "pods"

    def __init__(self, core: CoreV1Api, stop: threading.Event, *,
                 changed: Callable[[str | None], None] | None = None, **kw: Any) -> None:
        kw.setdefault("max_pages", POD_MAX_PAGES)
        super().__init__(changed, stop, **kw)
        self.core = core
        self.pods: dict[str, PodRecord] = {}  # key -> record (the store)
        self.by_node: dict[str, set[str]] = {}  # node -> keys of its pods (the index)

    # -- what the controller reads -------------------------------------------------------------
    def busy(self, node: str) -> list[PodRecord]:
        """The pods that keep `node` from being idle (none: idle)."""
        with self.lock:
            return [r for k in self.by_node.get(node, ()) if (r := self.pods[k]).busy]

    def idle(self, node: str) -> bool:
        """No pod but DaemonSet pods is running or starting on the node (False until the
        first list: a node is never taken for idle on a guess)."""
        return self.synced.is_set() and not self.busy(node)

    def __len__(self) -> int:
        with self.lock:
            return len(self.pods)

    # -- the reflector's hooks -----------------------------------------------------------------
    def _list_page(self, token: str | None) -> dict[str, Any]:
        return raw(with_retries(self.core.list_pod_for_all_namespaces, limit=PAGE,
                                _continue=token, _preload_content=False,
                                _request_timeout=REQUEST_TIMEOUT_S))

    def _open_watch(self, rv: str) -> Any:
        return self.core.list_pod_for_all_namespaces(
            watch=True, resource_version=rv, allow_watch_bookmarks=True,
            timeout_seconds=self.watch_timeout_s, _preload_content=False,
            _request_timeout=(5.0, self.watch_timeout_s + 30.0))

    def _problem(self, obj: Any) -> str:
        return objects.pod_problem(obj)

    def _key(self, obj: Any) -> str:
        return pod_key(obj)

    def _replace(self, good: dict[str, Any]) -> None:
        """A whole list: the store and its index rebuilt (client-go's `Replace`)."""
        self.pods, self.by_node = {}, {}
        for key, pod in good.items():
            record = record_of(pod)
            if record is not None:
                self._index(key, record)

    def _put(self, key: str, obj: Any) -> bool:
        record = record_of(obj)
        if record is None:
            return self._drop(key)
        if self.pods.get(key) == record:
            return False
        self._unindex(key)
        self._index(key, record)
        return True

    def _drop(self, key: str) -> bool:
        return self._unindex(key)

    def _malformed(self, key: str, obj: Any) -> bool:
        """A pod that does not read as one keeps the node it names busy (it may run there)."""
        node = node_of(obj)
        if not node:
            return self._drop(key)
        self._unindex(key)
        self._index(key, PodRecord(node, "", False, self.malformed.get(key, ("", "?"))[1]))
        return True

    # -- the index (under self.lock) -----------------------------------------------------------
    def _index(self, key: str, record: PodRecord) -> None:
        self.pods[key] = record
        self.by_node.setdefault(record.node, set()).add(key)

    def _unindex(self, key: str) -> bool:
        old = self.pods.pop(key, None)
        if old is None:
            return False
        keys = self.by_node.get(old.node)
        if keys is not None:
            keys.discard(key)
            if not keys:  # an emptied set goes (client-go: kubernetes/kubernetes#84959)
                del self.by_node[old.node]
        return True
