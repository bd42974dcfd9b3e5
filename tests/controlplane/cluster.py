"""A test's cluster on the real control plane: the API server, scheduler and controller-manager
of the run (`tests.controlplane._plane`), the node stand-in (`tests.controlplane._kubelet`), and
the test hooks the fake cluster's tests use (`add_node_object`, `set_ready`,
`set_node_output`, `set_node_command`, `get`, `list`, `create`, `patch`, `delete`,
`objects`, `kubeconfig`), so one scenario reads the same on both.

What only the fake can do stays with the fake (`tests.smoke.fakekube`): hostile answers
(`lie`, `hostile`, `fail_next`, `endless_pages`) and compaction on demand (`compact`; the real
plane compacts on `--etcd-compaction-interval`).

Between tests the cluster is emptied (`reset`): every Node it registered deleted, and in every
namespace but the system ones the objects a test makes (Jobs with their pods, JobSets, pods,
ConfigMaps, Services, Leases, Events, Roles and RoleBindings, Kueue's objects), so a test
starts with what a new cluster has.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.controlplane._kubelet import Kubelet
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import KINDS, Rest, RestError

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# what a test may leave behind in a namespace, deleted by `reset` (nodes and namespaces aside)
NAMESPACED_LEFTOVERS = ("jobsets", "jobs", "pods", "configmaps", "services", "leases",
                        "events", "roles", "rolebindings", "localqueues", "workloads",
                        "deployments", "serviceaccounts")
CLUSTER_LEFTOVERS = ("clusterqueues", "resourceflavors", "workloadpriorityclasses",
                     "cohorts", "admissionchecks", "provisioningrequestconfigs", "topologies")
TEST_LABEL = "accelfleet.io/test-made"


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    from tests.smoke.fakekube import selector_matches as fake_matches

    return bool(fake_matches(selector, labels))


class RealCluster:
    """One test's view of the run's control plane, with a node stand-in of its own."""

    def __init__(self, plane: ControlPlane, root: Path) -> None:
        self.plane, self.root = plane, root
        self.rest = Rest(plane.client())
        self.kubelet = Kubelet(self.rest, root / "kubelet", plane.pki)
        self.lock = contextlib.nullcontext()  # the real server has no "all at once"
        self._made_namespaces: set[str] = set()

    # -- the fake's test hooks ---------------------------------------------------------------
    @property
    def url(self) -> str:
        """The API server's address (the fake's `url`)."""
        return self.plane.server

    def kubeconfig(self, path: Path, *, context: str = "envtest") -> Path:
        return self.plane.kubeconfig(path, context=context)

    def add_node_object(self, node: dict[str, Any], *, ready: bool = True) -> dict[str, Any]:
        return self.kubelet.register(node, ready=ready)

    def set_ready(self, name: str) -> dict[str, Any]:
        return self.kubelet.set_ready(name)

    def set_node_output(self, node: str, text: str, exit_code: int = 0) -> None:
        self.kubelet.outputs[node] = (text, exit_code)

    def set_node_command(self, node: str, argv: list[str]) -> None:
        self.kubelet.commands[node] = list(argv)

    def join(self, nodes: list[dict[str, Any]], *, every_s: float = 0.0,
             ready_after_s: float = 0.0) -> threading.Thread:
        """A scale-up replayed: each node registers NotReady `every_s` after the previous
        one, and reports Ready `ready_after_s` later."""
        def replay() -> None:
            start = time.monotonic()
            pending: list[tuple[float, str]] = []
            for i, node in enumerate(nodes):
                while time.monotonic() < start + i * every_s:
                    self._ready_due(pending)
                    time.sleep(0.01)
                self.add_node_object(node, ready=False)
                pending.append((time.monotonic() + ready_after_s, node["metadata"]["name"]))
            while pending:
                self._ready_due(pending)
                time.sleep(0.01)

        thread = threading.Thread(target=replay, daemon=True, name="real-scale-up")
        thread.start()
        return thread

    def _ready_due(self, pending: list[tuple[float, str]]) -> None:
        now = time.monotonic()
        for item in [p for p in pending if p[0] <= now]:
            pending.remove(item)
            self.set_ready(item[1])

    def remove_node(self, name: str) -> None:
        """The machine went away and the cloud deleted its Node (scale-down, spot
        reclaim, repair): its stand-in stops, the Node is deleted."""
        self.kubelet.forget(name)
        with contextlib.suppress(RestError):
            self.rest.delete("nodes", "", name)

    # -- the API, as dicts -------------------------------------------------------------------
    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.rest.get(plural, namespace, name)

    def list(self, plural: str, namespace: str | None, label_selector: str = "",
             field_selector: str = "") -> dict[str, Any]:
        return self.rest.list(plural, namespace, label_selector, field_selector)

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        if namespace:
            self.ensure_namespace(namespace)
        return self.rest.create(plural, namespace, body)

    def patch(self, plural: str, namespace: str, name: str, patch: Any, *,
              kind: str = "application/strategic-merge-patch+json",
              subresource: str = "") -> dict[str, Any]:
        return self.rest.patch(plural, namespace, name, patch, kind=kind,
                               subresource=subresource)

    def delete(self, plural: str, namespace: str, name: str,
               propagation: str | None = None) -> None:
        if plural == "nodes":
            self.kubelet.forget(name)
        self.rest.delete(plural, namespace, name, propagation=propagation)

    def ensure_namespace(self, name: str) -> None:
        if name in SYSTEM_NAMESPACES or name in self._made_namespaces:
            return
        try:
            self.rest.create("namespaces", "", {"metadata": {"name": name}})
        except RestError as exc:
            if exc.status != 409:
                raise
        self._made_namespaces.add(name)
        self.wait_service_account(name)

    def wait_service_account(self, namespace: str, name: str = "default",
                             timeout_s: float = 30.0) -> None:
        """The ServiceAccount controller makes each namespace's `default` account; a pod
        naming none is refused until it exists."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.rest.get("serviceaccounts", namespace, name) is not None:
                return
            time.sleep(0.05)
        raise AssertionError(f"no ServiceAccount {namespace}/{name} after {timeout_s} s")

    def objects(self, selector: str = "") -> list[dict[str, Any]]:
        """Every object left of the kinds a run makes (Jobs, JobSets, pods, ConfigMaps,
        Services, PodTemplates), in every namespace, matching a label selector."""
        out = []
        for plural in ("jobsets", "jobs", "pods", "configmaps", "services", "podtemplates"):
            for item in self.rest.list(plural, None, label_selector=selector)["items"]:
                if plural == "pods" and item["metadata"].get("deletionTimestamp") and \
                        item["spec"].get("nodeName") not in self.kubelet.nodes:
                    continue  # being collected
                kind = next(k for k, p in KINDS.items() if p == plural)
                out.append({**item, "kind": kind})
        return out

    def events(self, kind: str, name: str) -> list[dict[str, Any]]:
        items = self.rest.list("events", None, field_selector=(
            f"involvedObject.kind={kind},involvedObject.name={name}"))["items"]
        return sorted(items, key=lambda e: int(e["metadata"]["resourceVersion"]))

    def pod_log(self, namespace: str, name: str) -> str:
        """A pod's log through the API (`pods/log`: the API server asks the node's kubelet)."""
        from kubernetes import client

        return str(client.CoreV1Api(self.rest.api).read_namespaced_pod_log(name, namespace))

    # -- between tests -----------------------------------------------------------------------
    def reset(self, timeout_s: float = 60.0) -> None:
        """Leave the control plane as a new cluster: this test's nodes and objects gone."""
        names = [n["metadata"]["name"] for n in self.rest.list("nodes", None)["items"]]
        for name in names:
            self.kubelet.forget(name)
        namespaces = [n["metadata"]["name"] for n in self.rest.list("namespaces", None)["items"]
                      if n["metadata"]["name"] not in ("kube-system", "kube-public",
                                                       "kube-node-lease")]
        for ns in namespaces:
            for plural in NAMESPACED_LEFTOVERS:
                if plural == "serviceaccounts":
                    continue
                with contextlib.suppress(RestError):
                    self.rest.delete_collection(plural, ns, grace_period_s=0,
                                                propagation="Background")
        for plural in CLUSTER_LEFTOVERS:
            with contextlib.suppress(RestError):
                self.rest.delete_collection(plural, None)
        with contextlib.suppress(RestError):
            self.rest.delete_collection("leases", "kube-node-lease")
        for name in names:
            with contextlib.suppress(RestError):
                self.rest.delete("nodes", "", name, grace_period_s=0)
        self._clear_pod_finalizers()
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            left = [p for p in self.rest.list("pods", None)["items"]
                    if p["metadata"]["namespace"] not in ("kube-system",)]
            if not left and not self.rest.list("nodes", None)["items"]:
                return
            self._clear_pod_finalizers()
            for p in left:
                with contextlib.suppress(RestError):
                    self.rest.delete("pods", p["metadata"]["namespace"], p["metadata"]["name"],
                                     grace_period_s=0)
            time.sleep(0.1)
        raise AssertionError("the control plane did not empty between tests")

    def _clear_pod_finalizers(self) -> None:
        """The Job controller's `batch.kubernetes.io/job-tracking` finalizer on a pod whose
        Job is already gone would hold the pod until the controller gets to it."""
        for p in self.rest.list("pods", None)["items"]:
            if p["metadata"].get("finalizers"):
                with contextlib.suppress(RestError):
                    self.rest.patch("pods", p["metadata"]["namespace"], p["metadata"]["name"],
                                    {"metadata": {"finalizers": None}},
                                    kind="application/merge-patch+json")

    def close(self) -> None:
        self.kubelet.stop()


@contextlib.contextmanager
def real_cluster(plane: ControlPlane, root: Path) -> Iterator[RealCluster]:
    cluster = RealCluster(plane, root)
    try:
        yield cluster
    finally:
        try:
            cluster.reset()
        finally:
            cluster.close()
