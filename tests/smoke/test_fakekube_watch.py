"""The fake API server answers a controller's calls as the real one does (its docstring and
`_api.expired_status` cite the real answers): watch with resource versions and bookmarks, a
too-old version answered 410 Expired inside a 200 stream, Leases with 409 on a stale write,
JSON and strategic merge patches, the status subresource, a scale-up replayed."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.smoke.fakekube import FakeCluster


def _core(cluster: FakeCluster, tmp_path: Path) -> Any:
    from kubernetes import client as k
    from kubernetes import config

    kc = cluster.kubeconfig(tmp_path / "kc", context="fake")
    return config.new_client_from_config(config_file=str(kc), context="fake"), k


def _events(core: Any, rv: str, seconds: int = 2, **kw: Any) -> list[dict[str, Any]]:
    from kubernetes.watch.watch import iter_resp_lines

    resp = core.list_node(watch=True, resource_version=rv, timeout_seconds=seconds,
                          _preload_content=False, **kw)
    return [json.loads(line) for line in iter_resp_lines(resp) if line.strip()]


def test_a_watch_streams_the_changes_after_its_version_with_bookmarks(
        fake_cluster: FakeCluster, tmp_path: Path) -> None:
    api, k = _core(fake_cluster, tmp_path)
    core = k.CoreV1Api(api)
    fake_cluster.add_node("n1")
    rv = json.loads(core.list_node(_preload_content=False).data)["metadata"]["resourceVersion"]

    def later() -> None:
        time.sleep(0.2)
        fake_cluster.add_node("n2")
        core.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
        fake_cluster.delete("nodes", "", "n2", None)

    threading.Thread(target=later, daemon=True).start()
    events = _events(core, rv, 3, allow_watch_bookmarks=True)
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in events]
    assert kinds[:3] == [("ADDED", "n2"), ("MODIFIED", "n1"), ("DELETED", "n2")]
    assert ("BOOKMARK", None) in kinds
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_a_too_old_version_is_answered_410_expired_in_the_stream(
        fake_cluster: FakeCluster, tmp_path: Path) -> None:
    from kubernetes import watch
    from kubernetes.client.exceptions import ApiException

    api, k = _core(fake_cluster, tmp_path)
    core = k.CoreV1Api(api)
    fake_cluster.add_node("n1")
    rv = json.loads(core.list_node(_preload_content=False).data)["metadata"]["resourceVersion"]
    fake_cluster.add_node("n2")
    fake_cluster.compact()
    (event,) = _events(core, rv)
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["status"], status["reason"], status["code"]) == (
        "Status", "Failure", "Expired", 410)
    assert status["message"].startswith(f"too old resource version: {rv} (")
    with pytest.raises(ApiException) as raised:  # the client's own reading of it
        list(watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=2))
    assert raised.value.status == 410 and str(raised.value.reason).startswith("Expired: ")


def test_a_lease_write_with_a_stale_version_is_a_409_conflict(
        fake_cluster: FakeCluster, tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    api, k = _core(fake_cluster, tmp_path)
    co = k.CoordinationV1Api(api)
    lease = co.create_namespaced_lease("default", {"metadata": {"name": "x"},
                                                   "spec": {"holderIdentity": "a"}})
    stale = lease.metadata.resource_version
    co.replace_namespaced_lease("x", "default", {"metadata": {
        "name": "x", "resourceVersion": stale}, "spec": {"holderIdentity": "b"}})
    with pytest.raises(ApiException) as raised:
        co.replace_namespaced_lease("x", "default", {"metadata": {
            "name": "x", "resourceVersion": stale}, "spec": {"holderIdentity": "c"}})
    assert raised.value.status == 409
    body = json.loads(raised.value.body)
    assert body["reason"] == "Conflict" and 'leases.coordination.k8s.io "x"' in body["message"]
    assert co.read_namespaced_lease("x", "default").spec.holder_identity == "b"


def test_patches_and_the_status_subresource(fake_cluster: FakeCluster,
                                            tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    api, k = _core(fake_cluster, tmp_path)
    core = k.CoreV1Api(api)
    fake_cluster.add_node("n1", taints=[{"key": "a", "effect": "NoSchedule"}])
    # strategic merge on status.conditions merges by type
    core.patch_node_status("n1", {"status": {"conditions": [{"type": "X", "status": "True"}]}})
    got = fake_cluster.get("nodes", "", "n1")
    assert got is not None
    assert [c["type"] for c in got["status"]["conditions"]] == ["Ready", "X"]
    # a client's PATCH of the node leaves its status alone; taints are replaced whole
    core.patch_node("n1", {"spec": {"taints": []}, "status": {"conditions": []}})
    got = fake_cluster.get("nodes", "", "n1")
    assert got is not None and got["spec"]["taints"] == [] and got["status"]["conditions"]
    # a JSON patch, and its failed test refusing the whole patch
    core.patch_node("n1", [{"op": "add", "path": "/metadata/labels/x~1y", "value": "1"}])
    got = fake_cluster.get("nodes", "", "n1")
    assert got is not None and got["metadata"]["labels"]["x/y"] == "1"
    with pytest.raises(ApiException) as raised:
        core.patch_node("n1", [{"op": "test", "path": "/metadata/labels/x~1y", "value": "2"},
                               {"op": "remove", "path": "/metadata/labels/x~1y"}])
    assert raised.value.status == 422
    got = fake_cluster.get("nodes", "", "n1")
    assert got is not None and got["metadata"]["labels"]["x/y"] == "1"


def test_a_scale_up_replay_registers_nodes_not_ready_then_ready(
        fake_cluster: FakeCluster) -> None:
    from tests.smoke.nodes import gke_node

    nodes = [gke_node(f"n{i}", "g2-standard-24", nodepool="p") for i in range(2)]
    fake_cluster.join(nodes, every_s=0.1, ready_after_s=0.2).join(10)
    seen = [(t, o["metadata"]["name"], next(c["status"] for c in o["status"]["conditions"]
                                             if c["type"] == "Ready"))
            for _, t, (plural, _, _), o in fake_cluster.changes() if plural == "nodes"]
    for name in ("n0", "n1"):
        mine = [(t, ready) for t, n, ready in seen if n == name]
        assert mine[0] == ("ADDED", "False") and mine[-1][1] == "True"
        node = fake_cluster.get("nodes", "", name)
        assert node is not None
        assert not any(t["key"] == "node.kubernetes.io/not-ready" for t in node["spec"][
            "taints"])
