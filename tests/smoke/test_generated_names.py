"""Issue 36 class 2: every name a smoke run and a gate proof generate fits each object it
becomes, at the longest run id and the highest indexes, or `fleet validate` refuses the stack.

The oracles here are written from the rules' sources, not from fleet.k8s_names:
- JobSet's webhook (kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go, with
  pkg/util/placement/placement.go): `<js>-<rjob>-<replicas-1>` and, for an Indexed replicated
  Job, `<js>-<rjob>-<replicas-1>-<completions-1>-abcde` are DNS-1035 labels (63); so is the
  subdomain (the JobSet's name);
- the Job controller (Kubernetes v1.36.2 pkg/controller/job/job_controller.go): an Indexed
  Job's pod hostname is `<job>-<index>`, which pod validation takes as a DNS-1123 label (63);
- EKS (API reference UpdateLabelsPayload and Taint): label keys 1-63 whole, values 1-63,
  taint keys 1-63, taint values 0-63.
Each property runs the real validation and, where it passes, the real render
(smoke.cluster.workload.render_run, smoke.cluster._pairs.pair_objects, smoke.gate._proof)."""

from __future__ import annotations

import copy
import re
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fleet import validate_fleet
from fleet.catalog import load_catalog
from fleet.errors import SpecError
from fleet.inventory import build_inventory
from fleet.k8s_names import RUN_ID_WORST, workload_name
from smoke.cluster._pairs import pair_name, pair_objects, rounds
from smoke.cluster.workload import RenderOptions, render_run

DNS1035 = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
BASE: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-ml-prod", "region": "us-central1"},
               "aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "gke", "cloud": "gcp", "authorized_cidrs": ["203.0.113.0/24"]},
                 {"name": "eks", "cloud": "aws", "authorized_cidrs": ["203.0.113.0/24"],
                  "network": {"cidr": "10.20.0.0/16"}}],
    "teams": [{"name": "research"}],
    "pools": [],
}
# TPU shapes GKE builds as JobSets: single-host, multi-host, Ironwood
TPU_SHAPES = [("v5p", "2x2x1", "us-central1-a"), ("v5p", "2x2x4", "us-central1-a"),
              ("v5p", "4x4x4", "us-central1-a"), ("v5p", "8x8x8", "us-central1-a"),
              ("v6e", "2x2", "us-central1-b"), ("v6e", "4x4", "us-central1-b"),
              ("tpu7x", "2x2x2", "us-central1-a"), ("tpu7x", "4x4x4", "us-central1-a")]
pool_names = st.from_regex(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?", fullmatch=True)


def _validate(pools: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    spec = copy.deepcopy(BASE)
    spec["pools"] = pools
    try:
        return validate_fleet(spec), []
    except SpecError as err:
        return None, list(err.problems)


def _jobset_refused(name: str, rjob: str, replicas: int, completions: int) -> bool:
    """JobSet v0.12.0's webhook, from its source: would it refuse this JobSet?"""
    job = f"{name}-{rjob}-{replicas - 1}"
    pod = f"{name}-{rjob}-{replicas - 1}-{completions - 1}" + "-abcde"
    return not all(DNS1035.fullmatch(n) for n in (job, pod, name))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=pool_names, shape=st.sampled_from(TPU_SHAPES),
       slices=st.integers(min_value=1, max_value=12))
@example(name="s" * 27, shape=TPU_SHAPES[1], slices=1)  # pods ...-slice-0-3-abcde: 63
@example(name="s" * 28, shape=TPU_SHAPES[1], slices=1)  # 64: refused (issue 36's instance)
@example(name="s" * 40, shape=TPU_SHAPES[4], slices=1)  # a single-host v6e, cut name: 66
@example(name="s" * 26, shape=TPU_SHAPES[2], slices=10)  # 16 hosts, 10 slices: 2+2 digits
def test_a_tpu_pool_is_refused_exactly_when_its_jobset_would_be(
        name: str, shape: tuple[str, str, str], slices: int) -> None:
    accelerator, topology, zone = shape
    fleet, problems = _validate([{"name": name, "cluster": "gke", "team": "research",
                                  "accelerator": accelerator, "topology": topology,
                                  "multislice": slices, "zone": zone}])
    hosts = load_catalog().resolve(accelerator, cloud="gcp", topology=topology).hosts
    expected = _jobset_refused(workload_name(RUN_ID_WORST, name), "slice", slices, hosts)
    refused = any("JobSet's webhook" in p.message for p in problems)
    assert refused == expected, (name, shape, slices, [p.message for p in problems])
    if fleet is None:
        return
    run = render_run(build_inventory(fleet, "t"), RenderOptions(run_id=RUN_ID_WORST, tier=2))
    (jobset,) = run.pools[0].objects
    (rjob,) = jobset["spec"]["replicatedJobs"]
    spec = rjob["template"]["spec"]
    assert spec["completionMode"] == "Indexed"
    assert not _jobset_refused(jobset["metadata"]["name"], rjob["name"], rjob["replicas"],
                               spec["completions"]), jobset["metadata"]["name"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=pool_names, max_nodes=st.integers(min_value=1, max_value=2000))
def test_a_gpu_pools_job_and_pair_rounds_keep_their_hostnames_within_63(
        name: str, max_nodes: int) -> None:
    """No GPU pool name is ever refused for its smoke names (the workload name is cut with a
    hash), and the rendered Job at its largest, and its last pair round, keep every pod
    hostname a DNS-1123 label."""
    fleet, problems = _validate([{"name": name, "cluster": "gke", "team": "research",
                                  "accelerator": "a3-highgpu-8g", "zone": "us-central1-a",
                                  "autoscaling": {"min_nodes": 0, "max_nodes": max_nodes}}])
    assert not any("run id" in p.message for p in problems), problems
    if fleet is None:
        return
    inventory = build_inventory(fleet, "t")
    pool = inventory.pools[0]
    from dataclasses import replace

    inventory = replace(inventory, pools=(replace(pool, nodes=max_nodes),))
    run = render_run(inventory, RenderOptions(run_id=RUN_ID_WORST, tier=3))
    w = run.pools[0]
    job = next(o for o in w.objects if o["kind"] == "Job")
    last = job["spec"]["completions"] - 1
    assert DNS1123.fullmatch(f"{job['metadata']['name']}-{last}")
    hosts = [f"n{i}" for i in range(max(max_nodes, 3))]
    every = rounds(hosts)
    pair = pair_name(w.name, len(every) - 1, len(every[-1]) - 1)
    for obj in pair_objects(w, pair, every[-1][-1]):
        assert DNS1035.fullmatch(obj["metadata"]["name"]), obj["metadata"]["name"]
        if obj["kind"] == "Job":
            assert DNS1123.fullmatch(f"{obj['metadata']['name']}-1")


label_text = st.one_of(st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,70}[a-z0-9])?/[a-z]{1,10}",
                                     fullmatch=True),
                       st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,70}[A-Za-z0-9])?",
                                     fullmatch=True),
                       st.just(""))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=label_text, value=label_text, taint_key=label_text)
def test_an_eks_pools_labels_and_taints_fit_the_eks_api_or_are_refused(
        key: str, value: str, taint_key: str) -> None:
    fleet, _ = _validate([{"name": "g6", "cluster": "eks", "team": "research",
                           "accelerator": "g6.12xlarge", "nodes": 1, "zone": "us-east-1a",
                           "labels": {key: value},
                           "taints": [{"key": taint_key, "value": "x"}]}])
    if fleet is None:
        return
    assert 1 <= len(key) <= 63 and 1 <= len(value) <= 63, (key, value)
    assert 1 <= len(taint_key) <= 63, taint_key


def test_the_examples_eks_node_groups_fit_the_eks_api() -> None:
    """What the components give each EKS node group (the pool's labels, accelfleet's, the AMI
    and EFA labels; the GPU, gate and pool taints), in the example's plan."""
    from components.engine.plan import run_plan
    from tests.smoke.gate_cluster import EXAMPLE

    groups = run_plan(str(EXAMPLE)).of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups
    for g in groups:
        labels = g.inputs.get("labels") or {}
        assert labels, g.name
        for k, v in labels.items():
            assert 1 <= len(k) <= 63 and 1 <= len(v) <= 63, (g.name, k, v)
        for t in g.inputs.get("taints") or []:
            assert 1 <= len(t["key"]) <= 63 and len(t.get("value") or "") <= 63, (g.name, t)
