"""Writes tests/smoke/data/nodes/derived-gke.yaml and derived-eks.yaml: a node for every catalog
machine type that has no fixture file of its own, DERIVED from the nearest recorded node of its
cloud and kind (run `python -m tests.smoke.derive_nodes` after the catalog gains a machine;
tests/smoke/test_node_fixtures.py fails until then). Each entry says what it came from and how.

    labels       the recorded node's keys and values, with the machine's own replaced: instance
                 type (stable and beta), machine family, the GKE accelerator label (the GKE
                 accelerator name the catalog gives the machine), a TPU host's accelerator and
                 chip count; a CPU machine drops the GPU labels
    taints       GKE: nvidia.com/gpu=present:NoSchedule on GPU nodes and google.com/tpu=present
                 on TPU nodes (GKE adds both itself: reference/reality INDEX.md findings 2, 3);
                 EKS: none (EKS adds no GPU taint, finding 4)
    allocatable  cpu and memory by the cloud's documented reservations on the machine's vCPUs and
                 memory (catalog hosts.yaml, which cites the provider's pages): cpu 6% of the
                 first core, 1% of the next, 0.5% of the next two, 0.25% above four (both clouds:
                 https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes;
                 awslabs/amazon-eks-ami@01375496 nodeadm/internal/kubelet/config.go
                 getCPUMillicoresToReserve); memory GKE 25/20/10/6/2% tiers, EKS 11 MiB per
                 max pod + 255 MiB, both less the 100 MiB eviction threshold; devices per host,
                 EFA interfaces and max pods from the catalog (aws.yaml, limits.yaml eks_max_pods,
                 as nodeadm reads eni-max-pods); 2 MiB huge pages where a recorded node of the
                 same host has them. These are the same formulas as fleet/allocatable.py: a
                 derived node agrees with the product by construction, and only a recorded node
                 can prove it wrong (say so where it matters).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from fleet.allocatable import gke_reserved_memory_mib, hugepages_2mi_mib, reserved_cpu_millicores
from fleet.catalog import Catalog, load_catalog

NODES = Path(__file__).parent / "data" / "nodes"
DATE = "2026-11-27"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
GPU_LABELS = ("cloud.google.com/gke-accelerator", "cloud.google.com/gke-gpu",
              "cloud.google.com/gke-gpu-driver-version")
# labels one recorded node carries for its own pool's settings, not its machine's
POOL_ONLY = ("cloud.google.com/compute-class", "cloud.google.com/gke-preemptible",
             "cloud.google.com/gke-cpu-scaling-level",
             "cloud.google.com/gke-memory-gb-scaling-level")
P_FAMILY_TOPOLOGY = "topology.k8s.aws/network-node-layer-"  # seen on p4d only (finding 4)


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe", pure=True).load(
        (NODES / f"{name}.yaml").read_text(encoding="utf-8"))
    return data


def machines(catalog: Catalog) -> list[tuple[str, str, str]]:
    """(cloud, machine type, kind) of every machine the catalog knows, TPU hosts included: the
    machine type the cloud names (`n1-standard-16` for the catalog's `n1-standard-16-t4x2`)."""
    out = [(m.cloud, catalog.resolve(name, cloud=m.cloud).machine_type,
            "gpu" if m.gpus else "cpu") for name, m in catalog.machines.items()]
    out += [("gcp", machine, "tpu") for gen in catalog.tpus.values()
            for _, machine in gen.machine_types]
    return sorted(set(out))


def _shape(catalog: Catalog, cloud: str, machine: str) -> Any:
    """The catalog's GPU shape whose cloud machine type is `machine`."""
    return next(s for name, m in catalog.machines.items() if m.cloud == cloud
                for s in [catalog.resolve(name, cloud=m.cloud)] if s.machine_type == machine)


def cloud_name(catalog: Catalog, cloud: str, machine: str, kind: str) -> str:
    """The machine type the cloud names (`n1-standard-16` for the catalog's
    `n1-standard-16-t4x2`: an N1 machine with T4s attached)."""
    if kind != "gpu":
        return machine
    selector = catalog.kube(_shape(catalog, cloud, machine)).node_selector
    return selector.get("node.kubernetes.io/instance-type", machine)


def _template(cloud: str, machine: str, kind: str) -> str:
    if cloud == "aws":
        return "eks-p5.48xlarge"
    if kind == "tpu":
        return "gke-ct6e-standard-1t"
    if kind == "cpu" or machine.startswith(("g2-", "g4-", "n1-")):
        return "gke-g2-standard-4"
    return "gke-a3-highgpu-8g"


def _gke(catalog: Catalog, machine: str, kind: str, base: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in base["labels"].items() if k not in POOL_ONLY}
    labels["cloud.google.com/gke-provisioning"] = "standard"
    family = machine.split("-")[0]
    if "cloud.google.com/machine-family" in labels:
        labels["cloud.google.com/machine-family"] = family
    host = catalog.hosts[machine]
    alloc: dict[str, str] = {
        "cpu": f"{host.vcpus * 1000 - reserved_cpu_millicores(host.vcpus)}m",
        "memory": f"{(host.memory_mib - gke_reserved_memory_mib(host.memory_mib) - 100) * 1024}Ki",
        "pods": "110"}
    taints: list[dict[str, str]] = []
    if kind == "gpu":
        shape = _shape(catalog, "gcp", machine)
        labels.update({"cloud.google.com/gke-accelerator":
                       catalog.kube(shape).node_selector["cloud.google.com/gke-accelerator"],
                       "cloud.google.com/gke-gpu": "true"})
        alloc["nvidia.com/gpu"] = str(shape.devices_per_host)
        taints = [GPU_TAINT]
    elif kind == "tpu":
        gen = next(g for g in catalog.tpus.values() if machine in dict(
            (m, c) for c, m in g.machine_types))
        chips = dict((m, c) for c, m in gen.machine_types)[machine]
        labels.update({"cloud.google.com/gke-tpu-accelerator": gen.gke_accelerator,
                       "cloud.google.com/gke-accelerator-count": str(chips)})
        alloc["google.com/tpu"] = str(chips)
        taints = [TPU_TAINT]
    else:
        for key in GPU_LABELS:
            labels.pop(key, None)
    for key in ("beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"):
        labels[key] = cloud_name(catalog, "gcp", machine, kind)
    node = {"labels": dict(sorted(labels.items())), "taints": taints, "allocatable": alloc}
    if kind != "cpu" and "queued" in base:  # what a queued / flex-start pool's node adds
        node["queued"] = base["queued"]
    return node


def _eks(catalog: Catalog, machine: str, kind: str, base: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in base["labels"].items() if not k.startswith(P_FAMILY_TOPOLOGY)
              or machine.startswith("p")}
    for key in ("beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"):
        labels[key] = machine
    host = catalog.hosts[machine]
    max_pods = catalog.network.eks_max_pods.get(machine, 110)
    hugepages = hugepages_2mi_mib(machine)
    memory = host.memory_mib - (11 * max_pods + 255) - 100 - hugepages
    alloc = {"cpu": f"{host.vcpus * 1000 - reserved_cpu_millicores(host.vcpus)}m",
             "memory": f"{memory * 1024}Ki", "pods": str(max_pods),
             "hugepages-2Mi": f"{hugepages}Mi" if hugepages else "0"}
    if kind == "gpu":
        shape = _shape(catalog, "aws", machine)
        alloc["nvidia.com/gpu"] = str(shape.devices_per_host)
        net = shape.networking
        if net is not None and net.kind == "efa" and net.efa_interfaces:
            alloc["vpc.amazonaws.com/efa"] = str(net.efa_interfaces)
    return {"labels": dict(sorted(labels.items())), "taints": [], "allocatable": alloc}


def derive(catalog: Catalog) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {"gke": {}, "eks": {}}
    for cloud, machine, kind in machines(catalog):
        prefix = "gke" if cloud == "gcp" else "eks"
        if (NODES / f"{prefix}-{machine}.yaml").exists() or machine not in catalog.hosts:
            continue
        template = _template(cloud, machine, kind)
        base = _recorded(template)
        node = (_gke if cloud == "gcp" else _eks)(catalog, machine, kind, base)
        out[prefix][machine] = {"kind": kind, "machine_type": machine, "derived_from": template,
                                **node}
    return out


def main() -> int:
    catalog = load_catalog()
    yaml = YAML()
    yaml.width = 200
    for prefix, nodes in derive(catalog).items():
        path = NODES / f"derived-{prefix}.yaml"
        with path.open("w", encoding="utf-8") as fh:
            fh.write("# Nodes DERIVED (not recorded) for every catalog machine type without a "
                     "fixture\n# file of its own, written by tests/smoke/derive_nodes.py on "
                     f"{DATE} (its\n# docstring says how: labels from `derived_from`, a "
                     "recorded node of the same\n# cloud and kind, with the machine's own "
                     "replaced; taints as the cloud adds\n# them; allocatable by the cloud's "
                     "documented reservations on the machine's\n# vCPUs and memory). "
                     "Regenerate it, never edit it by hand.\n")
            yaml.dump({"nodes": nodes}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
