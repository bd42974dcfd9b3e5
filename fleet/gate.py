"""The gate (docs/gate.md): what a pool's gate is, decided once from the stack, and the facts
the deploy side and the controller share.

    from fleet.gate import decide_gate, gate_taint
    gate = decide_gate(pool.spec.gate, kind="gpu", runtime="gke", fabric=True)

Decisions: every accelerator pool in Kubernetes (GPU and TPU, GKE and EKS) is gated unless its
stack opts out with a reason; CPU pools and Cloud TPU VMs (outside Kubernetes) never are. The
default gate runs tiers 0-2 on each node, plus the fabric check where the pool has a GPU
fabric, re-proves idle nodes every 24 hours, at most 10% of the pool (at least one node) at once,
quarantines at most 10% of the pool and keeps a failed node for diagnosis (`on_fail: keep`).

Also here: the gate taint as a catalog `Taint` record (the components set it in each API's
spelling through fleet.taints), the proof pods' toleration, the controller's default image
and its resources (requests and limits: what a system pool must have room for).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fleet import __version__
from fleet.catalog.records import Taint
from fleet.labels import GATE_TAINT_EFFECT, GATE_TAINT_KEY, GATE_TAINT_VALUE
from fleet.quarantine_cap import DEFAULT_CAP
from fleet.spec.fields import REPROVE_DEFAULT, PoolGate, interval_s


@dataclass(frozen=True)
class InventoryGate:
    """A pool's gate (issue 26, docs/gate.md): its new nodes carry `fleet.labels.GATE_TAINT_*`
    until the gate controller proves them with tiers 0..`max_tier` (and the pool's fabric
    check when `fabric`), re-proves idle nodes every `reprove_interval_s` (None: never), and
    quarantines at most `quarantine_cap` of the pool (`3` or `10%`, as `--max-quarantine`).
    `enabled` False: the pool opted out, `reason` says why. `queue`, `queue_namespace`: the
    Kueue LocalQueue (and its namespace) the pool's owner team submits to, which holds the
    pool's flavor: a re-proof goes through it at the lowest priority (`REPROOF_PRIORITY_CLASS`);
    None where the pool is not routed through Kueue, or is a queued-provisioning pool (Kueue
    would ask GKE for new nodes, not admit onto the idle one). `mode`: `enforce` (new nodes
    carry the taint until proven) or `shadow` (nothing tainted, cordoned or quarantined: every
    node proven and reported). `max_unavailable`: how many of the pool's nodes a rolling re-proof
    takes at once (`1`, `10%`; never less than one). `on_fail`: `keep` (a failed node is held
    for diagnosis, scale-down disabled) or `replace` (left to the autoscaler to replace).
    (Read from `fleet.inventory`.)"""

    enabled: bool = True
    reason: str | None = None
    max_tier: int = 2
    fabric: bool = False
    reprove_interval_s: int | None = 86_400
    quarantine_cap: str = "10%"
    queue: str | None = None
    queue_namespace: str | None = None
    mode: str = "enforce"
    max_unavailable: str = "10%"
    on_fail: str = "keep"

    @property
    def enforced(self) -> bool:
        """Whether the pool's new nodes carry the startup taint until proven (on, and not in
        shadow mode)."""
        return self.enabled and self.mode == "enforce"

    @property
    def shadow(self) -> bool:
        return self.enabled and self.mode == "shadow"


DEFAULT_REPROVE_S = interval_s(REPROVE_DEFAULT)
UNGATED_KINDS = ("cpu",)  # plain CPU pools: nothing to prove
UNGATED_RUNTIMES = ("tpu-vm",)  # Cloud TPU VMs join no cluster: no node to taint


def decide_gate(declared: PoolGate | None, *, kind: str, runtime: str, fabric: bool
                ) -> InventoryGate | None:
    """A pool's gate from its stack entry (None: not declared, the defaults), its kind
    ("gpu", "tpu", "cpu"), runtime ("gke", "eks", "tpu-vm") and whether it has a GPU fabric
    (`fabric: auto` runs the fabric check only then). None: the pool is never gated."""
    if kind in UNGATED_KINDS or runtime in UNGATED_RUNTIMES:
        return None
    if declared is None:
        return InventoryGate(fabric=fabric, reprove_interval_s=DEFAULT_REPROVE_S,
                             quarantine_cap=DEFAULT_CAP)
    return InventoryGate(enabled=declared.enabled, reason=declared.reason,
                         max_tier=declared.max_tier,
                         fabric=fabric and declared.fabric == "auto",
                         reprove_interval_s=declared.reprove_interval_s,
                         quarantine_cap=declared.max_quarantine, mode=declared.mode,
                         max_unavailable=declared.max_unavailable, on_fail=declared.on_fail)


# The Kueue WorkloadPriorityClass a re-proof carries (label `kueue.x-k8s.io/priority-class`) on a
# pool routed through Kueue: the lowest value a WorkloadPriorityClass takes (its `value` is an
# int32: kubernetes-sigs/kueue v0.19.2, 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb,
# config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml), so every team
# workload of the queue ranks above it (a workload without a class has priority 0), and
# Kueue preempts the proof, never the team's work, when the quota is wanted
# (ClusterQueue preemption withinClusterQueue: LowerPriority, components/k8s/_kueue.py).
REPROOF_PRIORITY_CLASS = "accelfleet-gate-reproof"
REPROOF_PRIORITY = -(2**31)


def gate_taint() -> Taint:
    """The startup taint a gated pool's nodes are created with (Kubernetes spelling)."""
    return Taint(key=GATE_TAINT_KEY, value=GATE_TAINT_VALUE, effect=GATE_TAINT_EFFECT)


def gate_toleration() -> dict[str, str]:
    """What proof pods (smoke run's and the controller's) carry to land on unproven nodes."""
    return gate_taint().as_toleration()


def gate_summary(gate: InventoryGate | None) -> dict[str, object] | None:
    """A pool's gate, JSON-ready (`fleet validate --json`, `plan --json`)."""
    if gate is None:
        return None
    return {"enabled": gate.enabled, "reason": gate.reason, "max_tier": gate.max_tier,
            "fabric": gate.fabric, "reprove_interval_s": gate.reprove_interval_s,
            "max_quarantine": gate.quarantine_cap, "mode": gate.mode,
            "max_unavailable": gate.max_unavailable, "on_fail": gate.on_fail}


def routed_gate(gate: InventoryGate | None, queue: str | None, namespace: str | None
                ) -> InventoryGate | None:
    """`gate` with the Kueue queue its re-proofs go through (None: `gate` unchanged)."""
    if gate is None or not gate.enabled or queue is None:
        return gate
    return replace(gate, queue=queue, queue_namespace=namespace or queue)


# The controller's image: this release's, as .github/workflows/release.yml publishes it on a
# `v*` tag. A tag, not a digest: the digest exists only once the release is built; pin yours
# by digest with the stack's `gate.image` (docs/gate.md says how).
CONTROLLER_REPOSITORY = "ghcr.io/accelfleet/accelfleet-gate"
CONTROLLER_IMAGE = f"{CONTROLLER_REPOSITORY}:v{__version__}"
GATE_IMAGES_FILE = "gate_images.yaml"  # fleet/catalog/data: what the releases published


@dataclass(frozen=True)
class PublishedImage:
    """One published gate image (fleet/catalog/data/gate_images.yaml): the accelfleet version,
    the image (no tag), its tag and the digest the release pushed."""

    version: str
    image: str
    digest: str


def published_images() -> tuple[PublishedImage, ...]:
    """The gate images the releases published and pulled anonymously (gate_images.yaml)."""
    from fleet.catalog import read_yaml
    from fleet.errors import CatalogError

    rows = read_yaml(GATE_IMAGES_FILE).get("published") or []
    if not isinstance(rows, list):
        raise CatalogError(f"catalog file {GATE_IMAGES_FILE}: `published` is not a list")
    out = []
    for row in rows:
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str)
                                                for k in ("version", "image", "digest")):
            raise CatalogError(f"catalog file {GATE_IMAGES_FILE}: {row!r} is not "
                               "{version, image, digest} (strings)")
        out.append(PublishedImage(row["version"], row["image"], row["digest"]))
    return tuple(out)


def default_image_published(image: str | None, version: str = __version__) -> bool | None:
    """Whether `image` (a stack's `gate.image`; None: the default) is the default controller
    image of `version` and that image is published: True or False for the default image (set
    or left out), None for any other image (the stack's own, not ours to judge). Published:
    gate_images.yaml lists `version` for CONTROLLER_REPOSITORY."""
    default = f"{CONTROLLER_REPOSITORY}:v{version}"
    if image is not None and image != default:
        return None
    return any(p.version == version and p.image == CONTROLLER_REPOSITORY
               for p in published_images())


CONTROLLER_REPLICAS = 2  # one leads (a coordination.k8s.io Lease), one waits to take over
CONTROLLER_NAME = "accelfleet-gate"
# The controller's own PriorityClass (scheduling.k8s.io/v1; components/k8s/_gate.py): not
# `system-cluster-critical`, which a pod outside kube-system may use only where a ResourceQuota
# admits that class in its namespace (Kubernetes docs concepts/policy/resource-quotas.md
# "Limit Priority Class consumption by default"; GKE ships that limit with a quota in
# kube-system only, `gcp-critical-pods`, and refuses such pods elsewhere: "insufficient quota to
# match these scopes", openservicemesh/osm#4408, open-policy-agent/gatekeeper#1120, read
# 2026-11-28). A class of our own takes any value up to 1,000,000,000, the most a user class
# may have (kubernetes/website 09959b44d2425b46e76b54daa8bf97d1228cd3d2
# content/en/docs/concepts/scheduling-eviction/pod-priority-preemption.md). 100,000,000: above
# the workloads a team runs (a pod without a class has 0), so a full system pool makes room for
# the controller, whose absence holds every new accelerator node gated; below the 1e9 ceiling
# that other critical add-ons of the cluster may take, and far below the system classes (2e9).
CONTROLLER_PRIORITY_CLASS = "accelfleet-gate"
CONTROLLER_PRIORITY = 100_000_000
# What the controller's container may use, per replica (cpu in millicores, memory in MiB). What
# it requests is the catalog's system_pods.yaml entry `accelfleet-gate` (`controller_requests`),
# the one home the fit check places on the system pool, replicas times.
CONTROLLER_LIMITS = {"cpu_m": 1000, "memory_mib": 512}


def controller_requests() -> dict[str, int]:
    """The controller's requests per replica, from system_pods.yaml (cpu_m, memory_mib)."""
    from fleet.pods import system_pod

    pod = system_pod(CONTROLLER_NAME)
    return {"cpu_m": pod.cpu_millicores, "memory_mib": pod.memory_mib}
HEALTH_PORT = 8080  # /healthz (liveness), /readyz (readiness)
METRICS_PORT = 9090  # /metrics (OpenMetrics)
INVENTORY_DIR = "/etc/accelfleet"
INVENTORY_FILE = "inventory.json"
INVENTORY_CONFIGMAP = "accelfleet-gate-inventory"
# The pools' gate state that `gate open` records and the controller follows for nodes that join
# later (a ConfigMap in the controller's namespace: one key per open pool, JSON at/by/reason)
POOLS_CONFIGMAP = "accelfleet-gate-pools"

# One proof's deadline, inside the cluster-autoscaler's startup window: a node that is not
# Ready (a startup taint counts as not Ready) 15 minutes after its creation is counted unready
# (`--max-node-startup-time`, 15m: kubernetes/autoscaler cluster-autoscaler/FAQ.md at
# 55c37cd5eb550756c5ccc5a89e9068d77797e575, cluster-autoscaler/clusterstate/clusterstate.go
# `updateReadinessStats`, read 2026-11-28); past 3 unready nodes and 45% of the cluster it
# halts. 10 minutes of proof leave 5 for the node to boot, register and turn Ready.
# `gate run --timeout-s` may raise it to PROOF_TIMEOUT_MAX_S (2 minutes left for the node).
AUTOSCALER_STARTUP_WINDOW_S = 15 * 60
PROOF_TIMEOUT_S = 10 * 60
PROOF_TIMEOUT_MAX_S = 13 * 60

# The DCGM exporter the gate reads between proofs (smoke.gate._exporter), as the project's chart
# deploys it (components.k8s._charts.DCGM_EXPORTER): the release's namespace, the pod label the
# chart's selectorLabels put on every exporter pod (app.kubernetes.io/name: the chart's name),
# and its port, the container port named "metrics" (values `service.port`, 9400). Read
# 2026-11-28 from NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (commit 691c9276)
# deployment/templates/_helpers.tpl, daemonset.yaml and values.yaml.
DCGM_EXPORTER_NAMESPACE = "nvidia-device-plugin"
DCGM_EXPORTER_SELECTOR = "app.kubernetes.io/name=dcgm-exporter"
DCGM_EXPORTER_PORT = 9400
DCGM_EXPORTER_PORT_NAME = "metrics"
EXPORTER_INTERVAL_S = 60.0  # one read of a proven node's exporter per minute, at most
