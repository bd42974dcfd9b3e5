"""The fake cluster against the real control plane (issue 34): what the launcher, quarantine
and the gate read of the controllers' work is the same on both. Each case ran first on the
real plane (tests.controlplane: kube-apiserver, scheduler and controller-manager v1.36.2);
where the fake differed, the fake was fixed to the real behaviour (the fake's source cites
it)."""

from __future__ import annotations

import re
import secrets
from typing import Any

from tests.smoke.nodes import gke_node
from tests.smoke.test_cluster_run import eventually, settled

NS = "parity"
EVERYTHING = [{"operator": "Exists"}]
CORDONED = "node.kubernetes.io/unschedulable"


def _job(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"backoffLimit": 0, **spec, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "tolerations": EVERYTHING,
                 "containers": [{"name": "agent", "image": "python:3.12",
                                 "command": ["python", "-c", "print('ok')"]}]}}}}


def _namespace(cluster: Any) -> None:
    if hasattr(cluster, "ensure_namespace"):  # the real plane: and its default account
        cluster.ensure_namespace(NS)
    else:
        cluster.create("namespaces", "", {"metadata": {"name": NS}})


def _done(cluster: Any, job: str) -> dict[str, Any]:
    return eventually(lambda: (j := cluster.get("jobs", NS, job)) and any(
        c["type"] == "Complete" and c["status"] == "True"
        for c in (j.get("status") or {}).get("conditions") or []) and j)


def _pods(cluster: Any, job: str) -> list[dict[str, Any]]:
    return sorted(cluster.list("pods", NS, f"job-name={job}")["items"],
                  key=lambda p: p["metadata"]["name"])


def test_a_jobs_pods_are_named_and_labelled_as_the_job_controller_makes_them(
        cluster: Any) -> None:
    """Names from generateName `<job>-` (`<job>-<index>-` when Indexed) and 5 random
    characters; the Job's labels on each pod (both spellings of the controller uid); an
    Indexed pod's index label, its hostname `<job>-<index>`, its index env from the label;
    the scheduler's PodScheduled kept through the kubelet's status writes; the Job Complete
    with the success criteria met before it."""
    cluster.add_node_object(gke_node("n1", "g2-standard-24", nodepool="a"))
    _namespace(cluster)
    cluster.create("jobs", NS, _job("plain"))
    cluster.create("jobs", NS, _job("idx", completionMode="Indexed", completions=2,
                                    parallelism=2))
    for name in ("plain", "idx"):
        job = _done(cluster, name)
        conds = [(c["type"], c.get("reason")) for c in job["status"]["conditions"]]
        assert conds[-2:] == [("SuccessCriteriaMet", "CompletionsReached"),
                              ("Complete", "CompletionsReached")]
        assert job["status"]["completionTime"]
    [plain] = _pods(cluster, "plain")
    assert plain["metadata"]["generateName"] == "plain-"
    assert re.fullmatch(r"plain-[bcdfghjklmnpqrstvwxz2456789]{5}", plain["metadata"]["name"])
    indexed = _pods(cluster, "idx")
    for i, pod in enumerate(sorted(indexed, key=lambda p: p["metadata"]["generateName"])):
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["generateName"] == f"idx-{i}-"
        assert re.fullmatch(rf"idx-{i}-[a-z0-9]{{5}}", meta["name"])
        assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == str(i)
        assert spec["hostname"] == f"idx-{i}"
        [env] = [e for e in spec["containers"][0]["env"] if e["name"] == "JOB_COMPLETION_INDEX"]
        assert env["valueFrom"]["fieldRef"]["fieldPath"] == \
            "metadata.labels['batch.kubernetes.io/job-completion-index']"
    for pod in [plain, *indexed]:
        labels = pod["metadata"]["labels"]
        assert labels["job-name"] == labels["batch.kubernetes.io/job-name"]
        assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"]
        assert pod["status"]["phase"] == "Succeeded"
        sched = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert [c["status"] for c in sched] == ["True"] and sched[0]["lastTransitionTime"]


def test_a_cordoned_node_is_tainted_and_the_scheduler_says_so(cluster: Any) -> None:
    """The node lifecycle controller taints a cordoned node (and lifts it uncordoned); a pod
    that tolerates only what the pool sets stays Pending with the scheduler's words; the
    controller records RegisteredNode about a node it has not known (by name: a node of a
    name deleted and registered again between two of its passes is neither, so the node's
    name is this test's own)."""
    n1 = f"n1-{secrets.token_hex(3)}"
    cluster.add_node_object(gke_node(n1, "g2-standard-24", nodepool="a"))
    settled(cluster, n1)
    node = cluster.get("nodes", "", n1)
    registered = eventually(lambda: [
        e for e in cluster.list("events", None, field_selector="involvedObject.kind=Node,"
                                f"involvedObject.name={n1}")["items"]
        if e["reason"] == "RegisteredNode" and e["involvedObject"]["uid"] ==
        node["metadata"]["uid"]])
    assert registered[0]["source"]["component"] == "node-controller"
    assert registered[0]["metadata"]["namespace"] == "default"
    cluster.patch("nodes", "", n1, {"spec": {"unschedulable": True}})
    taint = eventually(lambda: next((t for t in cluster.get("nodes", "", n1)["spec"].get(
        "taints") or [] if t["key"] == CORDONED), None))
    assert taint["effect"] == "NoSchedule" and taint["timeAdded"]
    _namespace(cluster)
    gpu_only = _job("waits")
    gpu_only["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    cluster.create("jobs", NS, gpu_only)
    try:
        message = eventually(lambda: next((
            c.get("message") for p in _pods(cluster, "waits")
            for c in (p.get("status") or {}).get("conditions") or []
            if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"), None))
    except AssertionError as exc:  # say what there was instead
        raise AssertionError(f"{exc}; job: {cluster.get('jobs', NS, 'waits')}; pods: "
                             f"{_pods(cluster, 'waits')}") from None
    assert message.startswith("0/1 nodes are available: 1 node(s) were unschedulable.")
    cluster.patch("nodes", "", n1, {"spec": {"unschedulable": None}})
    eventually(lambda: not any(t["key"] == CORDONED for t in cluster.get(
        "nodes", "", n1)["spec"].get("taints") or []))
    eventually(lambda: any(p["spec"].get("nodeName") == n1 for p in _pods(cluster, "waits")))
