"""What a dry-run cannot show, on the real plane: the names the Job controller generates.

An Indexed Job's pods get the hostname `<job>-<index>` from the Job controller (Kubernetes
v1.36.2 pkg/controller/job/job_controller.go), a DNS-1123 label of at most 63 (pod
validation), which Job validation checks for the last index at create. So the smoke Job of the
longest pool name `fleet validate` takes, at the longest run id and two-digit indexes, is
created for real here and every pod must appear with its hostname; and a Job one index past
the rule shows the refusal itself (fleet.k8s_names holds the rule)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from fleet import load_fleet
from fleet.inventory import build_inventory
from fleet.k8s_names import DNS_LABEL_MAX, RUN_ID_WORST
from smoke.cluster.workload import RenderOptions, render_run
from tests.controlplane._dry_run import LONG_NAMES
from tests.controlplane._rest import RestError
from tests.controlplane.cluster import RealCluster

pytestmark = pytest.mark.controlplane


def _wait(what: Any, timeout_s: float = 60.0) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"still not true after {timeout_s} s: {what}")


def _job_pods(kube: RealCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return list(kube.list("pods", namespace, f"batch.kubernetes.io/job-name={job}")["items"])


def test_the_longest_smoke_job_gets_every_pod_with_its_hostname(kube: RealCluster) -> None:
    fleet = load_fleet(str(LONG_NAMES))
    inventory = build_inventory(fleet, "longnames")
    gpu = next(p for p in inventory.pools if p.kind == "gpu" and p.cluster and
               p.cluster.startswith("gke"))
    nodes = 12  # two-digit indexes
    inventory = replace(inventory, pools=(replace(gpu, nodes=nodes),))
    run = render_run(inventory, RenderOptions(run_id=RUN_ID_WORST, namespace="longnames",
                                              tier=2))
    (w,) = run.pools
    assert len(w.pool.name) == 40 and len(w.name) == 50
    for obj in run.objects(w.cluster):
        kind = obj["kind"]
        if kind == "Namespace":
            kube.ensure_namespace(obj["metadata"]["name"])
            continue
        plural = {"ConfigMap": "configmaps", "Service": "services", "Job": "jobs"}[kind]
        kube.create(plural, obj["metadata"]["namespace"], obj)
    pods = _wait(lambda: (lambda got: got if len(got) == nodes else None)(
        _job_pods(kube, "longnames", w.name)))
    hostnames = sorted(p["spec"]["hostname"] for p in pods)
    assert hostnames == sorted(f"{w.name}-{i}" for i in range(nodes))
    assert all(len(h) <= DNS_LABEL_MAX for h in hostnames)
    assert all(p["spec"]["subdomain"] == w.name for p in pods)


def test_a_job_whose_last_hostname_would_pass_63_is_refused_at_create(
        kube: RealCluster) -> None:
    """The rule itself, on the real API server: Job validation (Kubernetes v1.36.2
    pkg/apis/batch/validation ValidateJob) refuses an Indexed Job whose last pod hostname
    `<name>-<completions-1>` is no DNS-1123 label, so that the Job controller never fails to
    create that pod later: 61 characters take indexes 0-9 (`-9`: 63), not 0-10 (`-10`: 64).
    The fake API server accepts both."""
    def job(completions: int) -> dict[str, Any]:
        return {"metadata": {"name": "j" * 61}, "spec": {
            "completionMode": "Indexed", "completions": completions,
            "parallelism": completions, "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "python:3.11", "command": ["true"]}]}}}}

    kube.ensure_namespace("longnames")
    assert kube.rest.create("jobs", "longnames", job(10), dry_run=True)["kind"] == "Job"
    with pytest.raises(RestError) as refused:
        kube.rest.create("jobs", "longnames", job(11), dry_run=True)
    assert refused.value.status == 422
    assert "will not able to create pod with invalid DNS label: " + "j" * 61 + "-10" in \
        refused.value.message
