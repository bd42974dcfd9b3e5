"""The Kubernetes names accelfleet generates for a smoke run and a gate proof, decided here once
(smoke renders them, `fleet validate` checks them), and each checked at its worst case against
the limit of every object it becomes, with what the controllers append:

    smoke workload  `af-<run id>-<pool>` (cut to WORKLOAD_NAME_MAX with a hash): a Job or a
                    JobSet, the headless Service of its pods, the `accelfleet.io/run` label
    Indexed Job     the Job controller names each pod `<job>-<index>-<5 random>` (the prefix
                    cut to 58, so the name never overflows) and sets its hostname to
                    `<job>-<index>`, a DNS-1123 label of at most 63
    pair round      `<workload>-r<round>p<index>`: a 2-pod Indexed Job, its Service, the
                    `accelfleet.io/pair` label value
    JobSet          child Jobs `<jobset>-<replicated job>-<job index>`, pods
                    `<jobset>-<replicated job>-<job index>-<pod index>-<5 random>` and the
                    subdomain `<jobset>`: JobSet's webhook refuses the JobSet when the longest
                    of them passes 63

Sources (read 2026-11-28):
- kubernetes-sigs/jobset v0.12.0 (f22e565ac3cc3265c7c45ef67ecffdc689af5d77)
  pkg/webhooks/jobset_webhook.go ValidateCreate: for each replicated Job the longest child
  Job name `placement.GenJobName(js.Name, rJob.Name, replicas-1)` must be a DNS-1035 label
  ("JobSet name is too long, job names generated for this JobSet will exceed 63
  characters"); for an Indexed one, `placement.GenPodName(js.Name, rJob.Name, replicas-1,
  completions-1) + "-abcde"` too ("... pod names generated for this JobSet will exceed 63
  characters"); the subdomain (default: the JobSet's name) a DNS-1035 label.
  pkg/util/placement/placement.go: GenJobName `%s-%s-%d`, GenPodName `%s-%s-%s-%s`.
- Kubernetes v1.36.2 (openshift/microshift@8e16b12fda5b1dccc41a6de48b3e356cc7d5048b
  deps/github.com/openshift/kubernetes, the tree the test control plane is built from):
  pkg/controller/job/job_controller.go sets an Indexed Job pod's
  `Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, completionIndex)`; indexed_job_utils.go
  podGenerateNameWithIndex cuts the generated name's prefix to names.MaxGeneratedNameLength;
  pkg/apis/core/validation/validation.go ValidatePodSpec: hostname and subdomain are
  DNS-1123 labels (63).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from fleet.labels import PAIR_LABEL, RUN_LABEL

DNS_LABEL_MAX = 63
# smoke.cluster.launcher.new_run_id: `r<yymmddhhmm>-<4 hex>`, 16 characters; RenderOptions
# refuses a longer run id. The gate's proofs take the same ids.
RUN_ID_MAX = 16
RUN_ID_WORST = "r2612312359-ffff"
# A smoke Job's name: pod hostnames `<name>-<index>` and pair rounds `<name>-r2p<index>-<i>`
# stay within 63 for any index a pool can have.
WORKLOAD_NAME_MAX = 50
JOBSET_REPLICATED_JOB = "slice"  # smoke/cluster/templates/tpu-jobset.yaml.j2
# what the API server's generateName appends (k8s.io/apiserver names.SimpleNameGenerator:
# 5 random characters), as JobSet's webhook counts it
RANDOM_SUFFIX = "-abcde"
JOBSET_WEBHOOK = ("JobSet's webhook (kubernetes-sigs/jobset v0.12.0 "
                  "pkg/webhooks/jobset_webhook.go)")
JOB_HOSTNAME = ("the Job controller's pod hostname `<job>-<index>` (Kubernetes "
                "pkg/controller/job/job_controller.go), a DNS-1123 label")


def workload_name(run_id: str, pool: str) -> str:
    """`af-<run>-<pool>`, cut to WORKLOAD_NAME_MAX with a stable hash of the pool name when
    too long."""
    name = f"af-{run_id}-{pool}".lower()
    if len(name) <= WORKLOAD_NAME_MAX:
        return name
    digest = hashlib.sha256(pool.encode()).hexdigest()[:6]
    head = name[:WORKLOAD_NAME_MAX - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}"


def pair_name(workload: str, round_: int, index: int) -> str:
    """A pair round's Job and headless Service: `<workload>-r<round>p<index>`."""
    return f"{workload}-r{round_ + 1}p{index}"


def jobset_job_name(jobset: str, job_index: int, replicated_job: str = JOBSET_REPLICATED_JOB
                    ) -> str:
    return f"{jobset}-{replicated_job}-{job_index}"


def jobset_pod_name(jobset: str, job_index: int, pod_index: int,
                    replicated_job: str = JOBSET_REPLICATED_JOB) -> str:
    """The deterministic part of a JobSet pod's name (its hostname); the pod's name adds
    RANDOM_SUFFIX."""
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}"


@dataclass(frozen=True)
class GeneratedName:
    """One name at its worst case: `what` it is, the `name` computed, the `limit` of the
    object it becomes and `by` whom it is enforced."""

    what: str
    name: str
    limit: int
    by: str

    @property
    def over(self) -> int:
        return len(self.name) - self.limit


@dataclass(frozen=True)
class WorkloadShape:
    """What a smoke run renders for a pool at its largest: a GPU pool (`kind` gpu) of up to
    `nodes_max` nodes, or a TPU pool in GKE of `slices` slices of `hosts_per_slice` hosts (a
    gate proof runs one slice or a few nodes: a subset)."""

    kind: str
    nodes_max: int = 1
    slices: int = 1
    hosts_per_slice: int = 1


def smoke_names(pool: str, shape: WorkloadShape, run_id: str = RUN_ID_WORST
                ) -> list[GeneratedName]:
    """Every name a smoke run or a gate proof of `pool` generates, at the longest run id and
    the highest indexes of `shape`."""
    kind, nodes_max = shape.kind, shape.nodes_max
    slices, hosts_per_slice = shape.slices, shape.hosts_per_slice
    name = workload_name(run_id, pool)
    out = [GeneratedName("the smoke workload's name (Job or JobSet, its Service, the "
                         f"{RUN_LABEL} label)", name, DNS_LABEL_MAX,
                         "Kubernetes (a Service name is a DNS-1035 label)")]
    if kind == "tpu":
        last_job, last_pod = max(slices - 1, 0), max(hosts_per_slice - 1, 0)
        out += [
            GeneratedName("the JobSet's last child Job", jobset_job_name(name, last_job),
                          DNS_LABEL_MAX, JOBSET_WEBHOOK),
            GeneratedName("the JobSet's last pod",
                          jobset_pod_name(name, last_job, last_pod) + RANDOM_SUFFIX,
                          DNS_LABEL_MAX, JOBSET_WEBHOOK),
            GeneratedName("the JobSet's subdomain", name, DNS_LABEL_MAX, JOBSET_WEBHOOK)]
        return out
    last = max(nodes_max - 1, 1)  # a pair's second pod is index 1 even in a one-node pool
    out.append(GeneratedName("the smoke Job's last pod hostname", f"{name}-{last}",
                             DNS_LABEL_MAX, JOB_HOSTNAME))
    # pair rounds (3 nodes or more): round 2, pair index up to nodes // 2 - 1; pods 0 and 1
    pair = pair_name(name, 1, max(nodes_max // 2 - 1, 0))
    out += [GeneratedName(f"a fabric pair round's Job (and the {PAIR_LABEL} label)",
                          pair, DNS_LABEL_MAX, "Kubernetes (a label value is at most 63)"),
            GeneratedName("a fabric pair round's last pod hostname", f"{pair}-1",
                          DNS_LABEL_MAX, JOB_HOSTNAME)]
    return out


def longest_pool_name(shape: WorkloadShape) -> int:
    """The longest pool name whose generated names all fit (0 when none does)."""
    for n in range(WORKLOAD_NAME_MAX, 0, -1):
        if all(g.over <= 0 for g in smoke_names("a" * n, shape)):
            return n
    return 0
