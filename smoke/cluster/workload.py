"""The exact Kubernetes objects a cluster smoke run submits: `accelfleet smoke render` prints
them, `accelfleet smoke run` creates them.

Per cluster, a Namespace (shared by every run) and a ConfigMap with the agent's code
(`smoke.cluster._bundle`), so a stock framework image runs `python -m smoke.probes.agent`. Per pool:

- GPU pool: a headless Service and an Indexed Job of one pod per node (required pod
  anti-affinity on the hostname, scoped to the run and pool), the inventory's node selector and
  tolerations, the pool's GPUs (and EFA interfaces) as resources; a GPUDirect pool also gets
  what GKE needs for its extra networks, all of it from the catalog's `Fabric` data.
- TPU slice on GKE: one JobSet, a replicated Job per slice (multislice: replicas) of one pod
  per host; multi-host slices and multislices join one JAX runtime from the environment GKE
  injects. A single-host slice is a JobSet of one pod too: one shape for every TPU pool, and
  the exclusive-topology annotation keeps each slice on its own node pool.
- Cloud TPU VMs (`runtime: tpu-vm`) and pools with no node are skipped, with the reason.

The manifests come from jinja2 templates (`smoke/cluster/templates`, rendered by
`smoke/cluster/_templates.py`) in which every value is inserted through `tojson` (the
environment refuses anything else), so a hostile name or label value stays data; the text
is parsed back into dicts with a YAML 1.2 safe loader.

Beside this module: _image_pins.py (the pinned framework images, a Docker Hub mirror; re-exported
here) and _gpu_pod.py (a GPU pool's pod and its fabric).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fleet import smoke_defaults as SD
from fleet.catalog import image_ref_problem
from fleet.errors import InputError, UnknownNameError
from fleet.inventory import Inventory, InventoryPool
from fleet.k8s_names import WORKLOAD_NAME_MAX
from fleet.k8s_names import workload_name as workload_name
from fleet.labels import POOL_LABEL, RUN_LABEL, SLICE_STARTED_ANNOTATION
from fleet.pods import smoke_pod_requests
from smoke import expectations as _expect
from smoke.cluster._bundle import MOUNT_PATH, configmap_data
from smoke.cluster._gpu_pod import _gpu
from smoke.cluster._image_pins import DOCKER_HUB_HOSTS as DOCKER_HUB_HOSTS
from smoke.cluster._image_pins import Image as Image
from smoke.cluster._image_pins import docker_hub_path as docker_hub_path
from smoke.cluster._image_pins import load_images as load_images
from smoke.cluster._image_pins import mirrored as mirrored
from smoke.cluster._queue import through_kueue
from smoke.cluster._templates import _render, dump_yaml

if TYPE_CHECKING:
    from fleet.catalog import Catalog
    from smoke.probes.expect import Expectation

MANAGED_BY = {"app.kubernetes.io/managed-by": "accelfleet"}
DEFAULT_NAMESPACE = SD.NAMESPACE
RENDEZVOUS_PORT = 29500  # + the pool's index among the rendered pools of its cluster
TPU_PORTS = (8471, 8080, 8431)  # TPU runtime, slice builder / megascale, TPU runtime metrics
# the workload's name, decided with the rest of what a run generates (and checked at its
# worst case by `fleet validate`) in fleet.k8s_names
NAME_MAX = WORKLOAD_NAME_MAX
# What each smoke pod requests beside its accelerators: fleet.pods (smoke_pod_requests), the
# one home the fit check (fleet.rules.fit) reads too.
TPU_VM_SKIP = ("runtime tpu-vm: Cloud TPU VMs are not Kubernetes nodes; smoke them with "
               "`accelfleet smoke local` on each VM")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class RenderOptions:
    run_id: str  # DNS-label-safe, at most 16 characters
    namespace: str = DEFAULT_NAMESPACE
    tier: int = SD.MAX_TIER
    timeout_s: int = SD.TIMEOUT_S  # activeDeadlineSeconds, and the agent's --timeout-s
    images: Mapping[str, str] = field(default_factory=dict)  # image key -> reference
    ttl_s: int = SD.TTL_S
    sustain_s: float | None = None  # the agent's --sustain-s (None: SD.SUSTAIN_S on GPU/TPU)

    def __post_init__(self) -> None:
        if len(self.run_id) > 16 or not _DNS_LABEL.match(self.run_id):
            raise InputError(f"run id {self.run_id!r} is not a DNS label of at most 16 "
                             "characters", hint="use lower-case letters, digits and '-', e.g. "
                             "r20261122-1a2b3c")
        if len(self.namespace) > 63 or not _DNS_LABEL.match(self.namespace):
            raise InputError(f"smoke namespace {self.namespace!r} is not a Kubernetes "
                             "namespace name", hint="set `smoke.namespace` to a DNS label, "
                             f"e.g. {DEFAULT_NAMESPACE}")
        if not 0 <= self.tier <= SD.TOP_TIER:
            raise InputError(f"tier {self.tier} is not one the agent runs",
                             hint=f"choose a tier from 0 to {SD.TOP_TIER}")
        if self.sustain_s is not None and not 0 <= self.sustain_s < self.timeout_s:
            raise InputError(f"--sustain-s {self.sustain_s:g} does not fit the pods' deadline "
                             f"of {self.timeout_s} s", hint="shorten --sustain-s (0 skips the "
                             "sustained phase) or lengthen --timeout-s")
        if self.timeout_s < 1 or self.ttl_s < 0:
            raise InputError("timeout_s must be positive and ttl_s not negative",
                             hint=f"e.g. timeout_s {SD.TIMEOUT_S}, ttl_s {SD.TTL_S}")
        known = load_images()
        for key, ref in self.images.items():
            if key not in known:
                raise UnknownNameError("image key", key, known,
                                       hint=f"image keys: {', '.join(known)}")
            problem = image_ref_problem(ref)
            if problem:
                raise InputError(f"image {key}: {problem}",
                                 hint=f"e.g. {key}={known[key].ref}")


@dataclass(frozen=True)
class PoolWorkload:
    pool: InventoryPool
    cluster: str  # "" for pools outside Kubernetes
    kind: Literal["job", "jobset", "skipped"]
    name: str  # the Job / JobSet (and Service) name
    pods: int
    objects: list[dict[str, Any]]  # creation order: headless Service (GPU), then Job / JobSet
    backend: str  # torch or jax
    image: str
    skipped: str | None = None
    # what the launcher re-judges each node's report against (smoke.cluster._rejudge)
    expectation: Expectation | None = None
    tier: int = SD.MAX_TIER
    sustain: bool = True  # the agent runs the sustained phase (--sustain-s is not 0)


@dataclass(frozen=True)
class RenderedRun:
    run_id: str
    namespace: str
    shared: dict[str, list[dict[str, Any]]]  # per cluster: [Namespace, ConfigMap]
    pools: list[PoolWorkload]

    def objects(self, cluster: str) -> list[dict[str, Any]]:
        """Everything the run creates on one cluster, in creation order."""
        out = list(self.shared.get(cluster, []))
        for w in self.pools:
            if w.cluster == cluster and w.kind != "skipped":
                out += w.objects
        return out


def configmap_name(run_id: str) -> str:
    return f"accelfleet-smoke-{run_id}"


def render_run(inventory: Inventory, options: RenderOptions, *,
               pools: Sequence[str] | None = None,
               expectation: Callable[[InventoryPool, str], Expectation] = _expect.for_pool,
               ) -> RenderedRun:
    """Every object of one smoke run, per cluster; `pools` picks pools by name (default all)."""
    from fleet.catalog import load_catalog

    catalog = load_catalog()
    chosen = _select(inventory, pools)
    images = {k: i.ref for k, i in load_images().items()} | dict(options.images)
    data, items = configmap_data()
    ports: dict[str, int] = {}
    workloads = []
    for pool in chosen:
        reason = _skip_reason(pool)
        backend = "jax" if pool.kind == "tpu" else "torch"
        image = images[_image_key(pool)]
        name = workload_name(options.run_id, pool.name)
        cluster = pool.cluster or ""
        if reason is not None:
            workloads.append(PoolWorkload(pool, cluster, "skipped", name, 0, [], backend, image,
                                          skipped=reason))
            continue
        exp = expectation(pool, backend)
        ctx = _context(pool, options, name, image, exp, items, catalog)
        if pool.kind == "tpu":
            objs = through_kueue(_render("tpu-jobset.yaml.j2", _tpu(pool, ctx)),
                                 pool.kueue_queue, options.timeout_s)
            workloads.append(PoolWorkload(pool, cluster, "jobset", name, _pods(pool), objs,
                                          backend, image, expectation=exp, tier=options.tier,
                                          sustain=options.sustain_s != 0))
        else:  # a port of its own per GPU pool of a cluster, even on hostNetwork
            port = RENDEZVOUS_PORT + ports.setdefault(cluster, 0)
            ports[cluster] += 1
            objs = through_kueue(_render("gpu-job.yaml.j2", _gpu(pool, options, catalog, ctx,
                                                                 port)),
                                 pool.kueue_queue, options.timeout_s)
            workloads.append(PoolWorkload(pool, cluster, "job", name, _pods(pool), objs,
                                          backend, image, expectation=exp, tier=options.tier,
                                          sustain=options.sustain_s != 0))
    shared = {}
    for cluster in dict.fromkeys(w.cluster for w in workloads if w.kind != "skipped"):
        shared[cluster] = _render("shared.yaml.j2", {
            "namespace": options.namespace, "namespace_labels": MANAGED_BY,
            "configmap": configmap_name(options.run_id), "labels": _labels(options),
            "data": data})
    return RenderedRun(options.run_id, options.namespace, shared, workloads)


def _select(inventory: Inventory, names: Sequence[str] | None) -> list[InventoryPool]:
    known = [p.name for p in inventory.pools]
    for p in inventory.pools:  # names become label values, object and file names, comments
        for what, value in (("pool", p.name), ("cluster", p.cluster)):
            if value is not None and (len(value) > 63 or not _DNS_LABEL.match(value)):
                raise InputError(f"inventory {what} name {value!r} is not a DNS label",
                                 hint="regenerate the inventory from a validated stack")
    if names is None:
        return list(inventory.pools)
    for name in names:
        if name not in known:
            raise UnknownNameError("pool", name, known, hint=f"pools: {', '.join(known)}")
    wanted = set(names)
    return [p for p in inventory.pools if p.name in wanted]


def _skip_reason(pool: InventoryPool) -> str | None:
    if pool.runtime == "tpu-vm" or pool.cluster is None:
        return TPU_VM_SKIP
    if pool.kind == "cpu":
        return "a CPU pool: no accelerator to test"
    if pool.kind not in ("gpu", "tpu"):
        raise InputError(f"pool {pool.name}: unknown kind {pool.kind!r}",
                         hint="regenerate the inventory with this accelfleet")
    if _pods(pool) < 1:
        return ("no node to test: the pool has 0 nodes now (it autoscales from 0); give it "
                "`nodes`, or scale it up and run again")
    return None


def _pods(pool: InventoryPool) -> int:
    """One pod per node: a GPU pool's nodes, or every host of every slice."""
    return pool.hosts_per_slice * pool.slices if pool.kind == "tpu" else pool.nodes


def _image_key(pool: InventoryPool) -> str:
    if pool.kind == "tpu":
        return "jax"
    return "torch-efa" if pool.gpu_networking == "efa" else "torch"


def _labels(options: RenderOptions, pool: str | None = None) -> dict[str, str]:
    labels = {RUN_LABEL: options.run_id}
    if pool is not None:
        labels[POOL_LABEL] = pool
    return labels | MANAGED_BY


def host_requests(pool: InventoryPool, catalog: Catalog) -> dict[str, str]:
    """The CPU and memory one smoke pod requests on its node (fleet.pods)."""
    host = pool.host or catalog.hosts.get(pool.machine_type)  # an older inventory: catalog
    cpu, memory_mib = smoke_pod_requests(pool.devices_per_node,
                                         host.vcpus if host else None,
                                         host.memory_mib if host else None)
    return {"cpu": str(cpu // 1000), "memory": f"{memory_mib}Mi"}


def _context(pool: InventoryPool, options: RenderOptions, name: str, image: str,
             exp: Expectation, items: list[dict[str, str]], catalog: Catalog) -> dict[str, Any]:
    """What both pool templates take: names, labels, scheduling, the agent's argv and env."""
    args = ["--tier", str(options.tier), "--backend", "jax" if pool.kind == "tpu" else "torch",
            "--expect-json", json.dumps(exp.to_dict(), sort_keys=True), "--pool", pool.name,
            "--timeout-s", str(options.timeout_s)]
    if options.sustain_s is not None:
        args += ["--sustain-s", f"{options.sustain_s:g}"]
    env = [{"name": "PYTHONPATH", "value": MOUNT_PATH}, {"name": "PYTHONUNBUFFERED", "value": "1"},
           {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "ACCELFLEET_RUN", "value": options.run_id},
           {"name": "ACCELFLEET_POOL", "value": pool.name}]
    return {
        "name": name, "namespace": options.namespace, "image": image,
        "labels": _labels(options, pool.name),
        "selector": {RUN_LABEL: options.run_id, POOL_LABEL: pool.name},
        "node_selector": dict(pool.node_selector), "tolerations": list(pool.tolerations),
        "timeout_s": options.timeout_s, "ttl_s": options.ttl_s, "args": args, "env": env,
        "resources": {pool.resource: str(pool.devices_per_node)},
        "requests": host_requests(pool, catalog),
        "mounts": [{"name": "agent", "mountPath": MOUNT_PATH, "readOnly": True},
                   {"name": "dshm", "mountPath": "/dev/shm"}],
        "volumes": [{"name": "agent", "configMap": {"name": configmap_name(options.run_id),
                                                    "items": items}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }


SLICE_MOUNT = "/etc/accelfleet/slice"  # the downward API volume of SLICE_STARTED_ANNOTATION


def _tpu(pool: InventoryPool, ctx: dict[str, Any]) -> dict[str, Any]:
    hosts = _pods(pool)
    args, mounts, volumes = list(ctx["args"]), list(ctx["mounts"]), list(ctx["volumes"])
    if hosts > 1:  # multi-host JAX must initialise together, whatever the tier
        args += ["--cross-node", "jax", "--expect-world", str(hosts * pool.jax_devices_per_node),
                 "--slice-started-file", f"{SLICE_MOUNT}/started"]
        # the launcher annotates every host's pod once the last one started (image pulls
        # minutes apart); the kubelet refreshes a downward API file from the annotation
        mounts.append({"name": "slice", "mountPath": SLICE_MOUNT, "readOnly": True})
        volumes.append({"name": "slice", "downwardAPI": {"items": [{
            "path": "started", "fieldRef": {
                "fieldPath": f"metadata.annotations['{SLICE_STARTED_ANNOTATION}']"}}]}})
    return {**ctx, "args": args, "mounts": mounts, "volumes": volumes,
            "requests": {**ctx["resources"], **ctx["requests"]},
            "slices": pool.slices, "hosts": pool.hosts_per_slice,
            "ports": [{"containerPort": p, "protocol": "TCP"} for p in TPU_PORTS]}


def write_manifests(run: RenderedRun, out_dir: Path) -> list[Path]:
    """`<out>/<cluster>.yaml` per cluster (shared objects, then each pool's after a
    `# pool: <name>` line) and `<out>/skipped.txt` when a pool was skipped."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} exists and is not a directory",
                         hint="give --out a directory (it is created if missing)")
    try:
        return _write_manifests(run, out_dir)
    except OSError as exc:  # a link to nowhere, a file on the way, a full disk, no permission
        raise InputError(f"cannot write the manifests into {out_dir}: "
                         f"{exc.strerror or exc}", hint="give --out a directory you can "
                         "write to (it is created if missing)") from None


def _write_manifests(run: RenderedRun, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for cluster, shared in run.shared.items():
        text = dump_yaml(shared)
        for w in run.pools:
            if w.cluster == cluster and w.kind != "skipped":
                text += f"# pool: {w.pool.name}\n" + dump_yaml(w.objects)
        path = out_dir / f"{cluster}.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    skipped = [w for w in run.pools if w.kind == "skipped"]
    if skipped:
        path = out_dir / "skipped.txt"
        path.write_text("".join(f"{w.pool.name}: {w.skipped}\n" for w in skipped),
                        encoding="utf-8")
        paths.append(path)
    return paths
