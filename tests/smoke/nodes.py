"""The fake cluster's nodes, built from recorded real nodes (tests/smoke/data/nodes).

A node is the recording of its machine type (labels, taints, allocatable as GKE or EKS set them)
plus only what the cloud derives from the pool: the node-pool name label, the labels and
taints the pool declares, the zone it is in, the slice topology of a TPU pool, and on a
flex-start or queued pool the taint GKE puts there (with queued provisioning, the
ProvisioningRequest label too). A recorded node takes nothing from `fleet/catalog`: where our
catalog says otherwise, the fake disagrees, as a real cluster would.

Each fixture names its source; a machine type without a recording is derived from the
nearest recorded one of the same cloud and kind, and its fixture says how: a file of its own,
or an entry of derived-gke.yaml / derived-eks.yaml (tests/smoke/derive_nodes.py writes them for
every catalog machine type without a file; they take the machine's vCPUs, memory, devices and
GKE accelerator name from the catalog, so only a recorded node can prove the catalog wrong).
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML

if TYPE_CHECKING:
    from fleet.model import ResolvedPool

NODES = Path(__file__).parent / "data" / "nodes"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
HOSTNAME_LABEL = "kubernetes.io/hostname"
PROVISIONING_REQUEST_LABEL = "autoscaling.gke.io/provisioning-request"
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.gke.io/zone",
               "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


@cache
def _derived(prefix: str) -> dict[str, dict[str, Any]]:
    """derived-gke.yaml / derived-eks.yaml (tests/smoke/derive_nodes.py writes them)."""
    path = NODES / f"derived-{prefix}.yaml"
    data: dict[str, Any] = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    return dict(data["nodes"])


def known() -> list[str]:
    """Every fixture's name: the files (`gke-a3-highgpu-8g`), then the derived entries."""
    files = [p.stem for p in NODES.glob("*.yaml") if not p.stem.startswith("derived-")]
    return sorted(files + [f"{prefix}-{m}" for prefix in ("gke", "eks")
                           for m in _derived(prefix)])


@cache
def recorded(name: str) -> dict[str, Any]:
    """A fixture by name (`gke-a3-highgpu-8g`): its own file (recorded, or derived by hand),
    else its entry in derived-gke.yaml / derived-eks.yaml."""
    path = NODES / f"{name}.yaml"
    if not path.exists():
        prefix, _, machine = name.partition("-")
        entry = _derived(prefix).get(machine) if prefix in ("gke", "eks") else None
        if entry is not None:
            return entry
        raise LookupError(f"no recorded node {name!r} in {NODES}: record one (or derive it "
                          f"from the nearest recorded one, saying so: `python -m "
                          f"tests.smoke.derive_nodes`); known: {known()}")
    data: dict[str, Any] = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    return data


def gke_node(name: str, machine_type: str, *, nodepool: str, zone: str = "us-central1-a",
             labels: dict[str, str] | None = None,
             taints: list[dict[str, str]] | None = None, topology: str | None = None,
             queued: bool = False, provisioning_request: str | None = None) -> dict[str, Any]:
    """A Node object: the recording of `machine_type`, in node pool `nodepool` and `zone`,
    with the pool's declared `labels` and `taints`. `queued`: a flex-start / queued pool's
    node (GKE's gke-queued taint; with `provisioning_request`, the request's label as
    queued provisioning sets it)."""
    rec = copy.deepcopy(recorded(f"gke-{machine_type}"))
    node_labels: dict[str, str] = dict(rec["labels"])
    node_labels.update({NODEPOOL_LABEL: nodepool, HOSTNAME_LABEL: name})
    node_labels.update(dict.fromkeys(ZONE_LABELS, zone))
    node_labels.update(dict.fromkeys(REGION_LABELS, zone.rsplit("-", 1)[0]))
    for key in (*ZONE_LABELS, *REGION_LABELS):
        if key not in rec["labels"]:
            node_labels.pop(key)
    if topology is not None:
        node_labels[TOPOLOGY_LABEL] = topology
    node_taints = list(rec["taints"])
    if queued:
        node_taints += rec["queued"]["taints"]
        if provisioning_request is not None:
            node_labels[PROVISIONING_REQUEST_LABEL] = provisioning_request
    node_labels.update(labels or {})
    node_taints += [t for t in taints or [] if t not in node_taints]
    alloc = dict(rec["allocatable"])
    return {"metadata": {"name": name, "labels": node_labels},
            "spec": {"taints": node_taints},
            "status": {"allocatable": alloc, "capacity": dict(rec.get("capacity", alloc)),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
EKS_CAPACITY_LABEL = "eks.amazonaws.com/capacityType"


def eks_node(name: str, instance_type: str, *, nodegroup: str, zone: str = "us-east-1a",
             labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
             spot: bool = False) -> dict[str, Any]:
    """A Node object: the recording of `instance_type` in managed node group `nodegroup` and
    `zone`, with the node group's declared `labels` and `taints` (EKS adds no GPU taint)."""
    rec = copy.deepcopy(recorded(f"eks-{instance_type}"))
    node_labels: dict[str, str] = dict(rec["labels"])
    node_labels.update({EKS_NODEGROUP_LABEL: nodegroup, HOSTNAME_LABEL: name,
                        EKS_CAPACITY_LABEL: "SPOT" if spot else "ON_DEMAND",
                        "topology.ebs.csi.aws.com/zone": zone})
    node_labels.update(dict.fromkeys(ZONE_LABELS, zone))
    node_labels.update(dict.fromkeys(REGION_LABELS, zone[:-1]))
    for key in (*ZONE_LABELS, *REGION_LABELS):
        if key not in rec["labels"]:
            node_labels.pop(key)
    node_labels.update(labels or {})
    node_taints = [*rec["taints"], *(t for t in taints or [] if t not in rec["taints"])]
    alloc = dict(rec["allocatable"])
    return {"metadata": {"name": name, "labels": node_labels},
            "spec": {"taints": node_taints},
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pool_node(pool: ResolvedPool, name: str, *, nodepool: str | None = None,
              provisioning_request: str | None = None) -> dict[str, Any]:
    """A node of a resolved pool: its machine type's fixture, its declared labels and taints
    (`ResolvedPool.labels`, `spec.taints`, what the node pool or node group component sets),
    its first zone; on GKE its slice topology and GKE's taint on flex-start and queued pools,
    on EKS the managed node group's labels."""
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.spec.taints]
    zones = list(pool.spec.zones)
    if pool.cloud == "aws":
        return eks_node(name, pool.shape.machine_type, nodegroup=nodepool or pool.name,
                        zone=zones[0] if zones else "us-east-1a", labels=pool.labels,
                        taints=taints, spot=pool.spec.capacity.spot)
    return gke_node(name, pool.shape.machine_type, nodepool=nodepool or pool.name,
                    zone=zones[0] if zones else "us-central1-a", labels=pool.labels,
                    taints=taints, topology=pool.shape.topology_str or None,
                    queued=pool.flex_start, provisioning_request=provisioning_request)
