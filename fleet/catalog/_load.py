"""Reads the catalog's data files into records and checks them on the way in."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any, TypeVar, cast

from fleet.catalog.records import (
    CLOUDS,
    Accelerator,
    Cloud,
    Fabric,
    FabricDaemon,
    GkeNetwork,
    GpuNetworking,
    HostMount,
    MachineType,
    PodInterface,
    Price,
    SystemPoolDefaults,
    Taint,
    TpuGeneration,
)
from fleet.errors import CatalogError

SCHEMA_VERSION = 1
T = TypeVar("T")


def read_yaml(name: str) -> dict[str, Any]:
    from fleet._yaml12 import load_data

    text = resources.files("fleet.catalog").joinpath("data", name).read_text(encoding="utf-8")
    data = load_data(text)
    if not isinstance(data, dict):
        raise CatalogError(f"catalog file {name} is not a mapping")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise CatalogError(
            f"catalog file {name} has schema_version {version!r}; this accelfleet reads "
            f"{SCHEMA_VERSION}"
        )
    return data


def _build(cls: Callable[..., T], where: str, raw: Mapping[str, Any], **extra: Any) -> T:
    try:
        return cls(**raw, **extra)
    except TypeError as exc:
        raise CatalogError(f"{where}: {exc}") from None


def _items(data: Mapping[str, Any], key: str, where: str) -> Iterator[Mapping[str, Any]]:
    items = data.get(key)
    if not isinstance(items, list):
        raise CatalogError(f"{where}: '{key}' must be a list")
    for item in items:
        if not isinstance(item, dict):
            raise CatalogError(f"{where}: every entry of '{key}' must be a mapping")
        yield item


def _unique(keys: list[str], where: str) -> None:
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            raise CatalogError(f"{where}: duplicate key {k!r}")
        seen.add(k)


def load_accelerators() -> dict[str, Accelerator]:
    data = read_yaml("accelerators.yaml")
    out: list[Accelerator] = []
    for raw in _items(data, "accelerators", "accelerators.yaml"):
        fields = dict(raw)
        fields["aliases"] = tuple(fields.get("aliases", ()))
        fields["pci_device_ids"] = tuple(int(str(x), 16) for x in fields.get("pci_device_ids",
                                                                           ()))
        acc = _build(Accelerator, f"accelerators.yaml {raw.get('key')}", fields)
        if not acc.source:
            raise CatalogError(f"accelerators.yaml {acc.key}: every figure needs a source")
        if acc.kind not in ("gpu", "tpu", "cpu"):
            raise CatalogError(f"accelerators.yaml {acc.key}: kind must be gpu, tpu or cpu")
        if acc.nvlinks < 0 or (acc.nvlinks and not acc.nvlinks_source):
            raise CatalogError(f"accelerators.yaml {acc.key}: nvlinks needs a count of 0 or "
                               "more and, when not 0, an nvlinks_source")
        out.append(acc)
    _unique([a.key for a in out], "accelerators.yaml")
    _unique([f"{i:#06x}" for a in out for i in a.pci_device_ids],
            "accelerators.yaml pci_device_ids")
    from fleet.catalog.health import attach

    return attach({a.key: a for a in out}, read_yaml("gpu_health.yaml"))


def load_machines(
    cloud: Cloud, accelerators: Mapping[str, Accelerator]
) -> tuple[dict[str, MachineType], dict[str, Any]]:
    """The machine types of one cloud, and that file's Kubernetes section."""
    name = f"{cloud}.yaml"
    data = read_yaml(name)
    networking: dict[str, GpuNetworking] = {}
    for kind, raw in (data.get("gpu_networking") or {}).items():
        networking[kind] = _build(GpuNetworking, f"{name} gpu_networking.{kind}", raw, kind=kind)
    machines: list[MachineType] = []
    blocks = data.get("capacity_blocks") or {}
    block_families = set(blocks.get("families") or ())
    if block_families and not blocks.get("source"):
        raise CatalogError(f"{name} capacity_blocks: every fact needs a source")
    for fam in _items(data, "machine_families", name):
        where = f"{name} family {fam.get('family')}"
        acc = str(fam.get("accelerator"))
        if acc not in accelerators:
            raise CatalogError(f"{where}: unknown accelerator {acc!r}")
        net: GpuNetworking | None = None
        if "gpu_networking" in fam:
            if fam["gpu_networking"] not in networking:
                raise CatalogError(f"{where}: unknown gpu_networking {fam['gpu_networking']!r}")
            net = networking[fam["gpu_networking"]]
        rdma_read = fam.get("efa_rdma_read", False)
        if not isinstance(rdma_read, bool) or (rdma_read and not fam.get("efa_rdma_read_source")):
            raise CatalogError(f"{where}: efa_rdma_read must be true or false, and true needs "
                               "an efa_rdma_read_source")
        gdr = _efa_gdr(fam, where)
        if "efa_interfaces" in fam:
            net = GpuNetworking(kind="efa", efa_interfaces=int(fam["efa_interfaces"]),
                                efa_rdma_read=rdma_read, efa_gdr=gdr)
        by_machine = fam.get("efa_interfaces_by_machine") or {}
        if by_machine and not fam.get("efa_source"):
            raise CatalogError(f"{where}: efa_interfaces_by_machine needs an efa_source")
        if set(by_machine) - set(fam["machines"]):
            raise CatalogError(f"{where}: efa_interfaces_by_machine names unknown machines")
        attached = _attached(fam, where)
        for machine, gpus in fam["machines"].items():
            if machine in by_machine:
                net = GpuNetworking(kind="efa", efa_interfaces=int(by_machine[machine]),
                                    source=str(fam["efa_source"]), efa_rdma_read=rdma_read,
                                    efa_gdr=gdr)
            elif by_machine:
                net = None
            machines.append(
                MachineType(
                    cloud=cloud,
                    name=machine,
                    family=fam["family"],
                    accelerator=acc,
                    gpus=int(gpus),
                    gke_accelerator=fam.get("gke_accelerator"),
                    networking=net,
                    capacity_block=fam["family"] in block_families,
                    flex_start_compact=bool(fam.get("flex_start_compact", False)),
                    attached_to=attached.get(machine, ""),
                )
            )
    unknown = block_families - {m.family for m in machines}
    if unknown:
        raise CatalogError(f"{name} capacity_blocks: unknown families {sorted(unknown)}")
    _unique([m.name for m in machines], name)
    return {m.name: m for m in machines}, data


def _efa_gdr(fam: Mapping[str, Any], where: str) -> bool:
    """Whether NCCL over this family's EFA must use GPUDirect RDMA: stated, with its source,
    by every family with EFA (tier 3 judges every EFA pool by it)."""
    has_efa = "efa_interfaces" in fam or bool(fam.get("efa_interfaces_by_machine"))
    gdr = fam.get("efa_gdr")
    if gdr is None and not has_efa:
        return False
    if not isinstance(gdr, bool) or not fam.get("efa_gdr_source"):
        raise CatalogError(f"{where}: a family with EFA states efa_gdr (true or false: does "
                           "NCCL over EFA run with GPUDirect RDMA there?) and its "
                           "efa_gdr_source")
    if not has_efa:
        raise CatalogError(f"{where}: efa_gdr is set but the family has no EFA interfaces")
    return gdr


def _attached(fam: Mapping[str, Any], where: str) -> dict[str, str]:
    """`attached_to` of a family of GPUs attached to general-purpose machines (GCP N1): every
    catalog key names the machine type GKE is given, which differs from the key."""
    raw = fam.get("attached_to")
    if raw is None:
        return {}
    if (not isinstance(raw, Mapping) or set(raw) != set(fam["machines"])
            or not fam.get("attached_source")):
        raise CatalogError(f"{where}: attached_to maps every machine of the family to the "
                           "machine type its GPUs attach to, and needs an attached_source")
    out = {str(k): str(v) for k, v in raw.items()}
    same = sorted(k for k, v in out.items() if not v or v == k)
    if same:
        raise CatalogError(f"{where}: attached_to of {same} must name another machine type")
    return out


def load_cpu_machines(cloud: Cloud, data: Mapping[str, Any], accelerators: Mapping[str,
                      Accelerator]) -> tuple[dict[str, MachineType], SystemPoolDefaults]:
    """A cloud's CPU machine types (`cpu_families`: machine -> vCPUs) and its system pool
    defaults, which must name one of them."""
    name = f"{cloud}.yaml"
    cpu = [a.key for a in accelerators.values() if a.kind == "cpu"]
    if len(cpu) != 1:
        raise CatalogError("accelerators.yaml: exactly one entry of kind cpu is expected")
    machines: dict[str, MachineType] = {}
    for fam in _items(data, "cpu_families", name):
        if not fam.get("source"):
            raise CatalogError(f"{name} cpu family {fam.get('family')}: every fact needs a source")
        for machine, vcpus in fam["machines"].items():
            if machine in machines:
                raise CatalogError(f"{name} cpu_families: duplicate key {machine!r}")
            machines[machine] = MachineType(cloud=cloud, name=machine, family=fam["family"],
                                            accelerator=cpu[0], gpus=0, vcpus=int(vcpus))
    raw = data.get("system_pool")
    if not isinstance(raw, dict):
        raise CatalogError(f"{name}: 'system_pool' must be a mapping")
    defaults = _build(SystemPoolDefaults, f"{name} system_pool", raw, cloud=cloud)
    if defaults.machine_type not in machines:
        raise CatalogError(f"{name} system_pool: {defaults.machine_type!r} is not one of its "
                           "cpu_families machine types")
    if defaults.nodes < 1 or not defaults.source:
        raise CatalogError(f"{name} system_pool: needs nodes >= 1 and a source")
    return machines, defaults


def load_taints(kube: Mapping[str, Any]) -> dict[str, Taint]:
    return {k: Taint(**v["taint"]) for k, v in kube.items() if "taint" in v}


def load_tpus(accelerators: Mapping[str, Accelerator]) -> dict[str, TpuGeneration]:
    data = read_yaml("tpu.yaml")
    gens: list[TpuGeneration] = []
    for raw in _items(data, "generations", "tpu.yaml"):
        fields = dict(raw)
        fields["machine_types"] = tuple(
            sorted((int(k), str(v)) for k, v in fields.get("machine_types", {}).items())
        )
        fields["max_sides"] = tuple(sorted(int(s) for s in fields.get("max_sides") or ()))
        gen = _build(TpuGeneration, f"tpu.yaml {raw.get('key')}", fields)
        if gen.accelerator not in accelerators:
            raise CatalogError(f"tpu.yaml {gen.key}: unknown accelerator {gen.accelerator!r}")
        if gen.dims not in (2, 3):
            raise CatalogError(f"tpu.yaml {gen.key}: dims must be 2 or 3")
        if gen.machine_for(gen.multihost_chips_per_vm) is None:
            raise CatalogError(f"tpu.yaml {gen.key}: no machine type for the multi-host VM size")
        if gen.max_sides and (len(gen.max_sides) != gen.dims or not gen.max_sides_source):
            raise CatalogError(f"tpu.yaml {gen.key}: max_sides needs {gen.dims} sides and a "
                               "max_sides_source")
        gens.append(gen)
    _unique([g.key for g in gens], "tpu.yaml")
    return {g.key: g for g in gens}


def load_tpu_network_mtu() -> int:
    """The MTU of the VPC of TPU clusters and Cloud TPU VMs (tpu.yaml `network`)."""
    net = read_yaml("tpu.yaml").get("network")
    if not isinstance(net, dict) or not net.get("source"):
        raise CatalogError("tpu.yaml network: needs `mtu` and a `source`")
    mtu = net.get("mtu")
    if not isinstance(mtu, int) or not 1300 <= mtu <= 8896:
        raise CatalogError(f"tpu.yaml network.mtu: {mtu!r} is not a VPC MTU (1300-8896)")
    return mtu


def _mounts(raw: object, where: str) -> tuple[HostMount, ...]:
    if not isinstance(raw, list):
        raise CatalogError(f"{where}: 'mounts' must be a list")
    mounts = tuple(_build(HostMount, f"{where} mount", m) for m in raw)
    _unique([m.volume for m in mounts], f"{where} mounts")
    _unique([m.mount_path for m in mounts], f"{where} mount paths")
    return mounts


def _env(raw: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: 'env' must be a mapping")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise CatalogError(f"{where}: env {key} must be a string (quote it), got {value!r}")
    return tuple((str(k), v) for k, v in raw.items())


_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_REF = re.compile(
    rf"^(?:(?P<host>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*"
    rf"[A-Za-z0-9])?)*(?::[0-9]+)?)/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")


def image_ref_problem(ref: str) -> str | None:
    """Why `ref` is not a pinned image reference (repo:tag, repo[:tag]@sha256:...), or None."""
    m = _IMAGE_REF.match(ref)
    if m is None:
        return f"{ref!r} is not an image reference (registry/repository:tag[@sha256:...])"
    if not m["digest"] and m["tag"] in (None, "latest"):
        return f"{ref!r} names no tag other than `latest` nor a digest, so it would float"
    return None


def _daemon(raw: Mapping[str, Any], where: str, mounts: tuple[HostMount, ...]) -> FabricDaemon:
    d = dict(raw)
    for key in ("command", "args", "capabilities", "devices"):
        d[key] = tuple(d.get(key) or ())
    d["mounts"] = _mounts(d.get("mounts") or [], where)
    d["env"] = _env(d.get("env") or {}, where)
    daemon = _build(FabricDaemon, where, d)
    if not daemon.source:
        raise CatalogError(f"{where}: every fact needs a source")
    problem = image_ref_problem(daemon.image)
    if problem:
        raise CatalogError(f"{where}: {problem}")
    if daemon.ready_file and daemon.ready_file not in dict(daemon.env).values():
        raise CatalogError(f"{where}: its env must tell it to write {daemon.ready_file}")
    paths = {m.volume: m.host_path for m in mounts}
    for m in daemon.mounts:
        if paths.setdefault(m.volume, m.host_path) != m.host_path:
            raise CatalogError(f"{where}: volume {m.volume!r} names two host paths")
    return daemon


def load_fabrics(networking: Mapping[str, GpuNetworking]) -> dict[str, Fabric]:
    """The pod side of every GPU fabric, checked against the machines' networking: one entry
    per kind a machine uses, and (GKE) one pod interface per extra VPC or RDMA subnet."""
    data = read_yaml("fabrics.yaml")
    fabrics: dict[str, Fabric] = {}
    for raw in _items(data, "fabrics", "fabrics.yaml"):
        fields = dict(raw)
        where = f"fabrics.yaml {fields.get('kind')}"
        fields["nccl_networks"] = tuple(fields.get("nccl_networks") or ())
        fields["interfaces"] = tuple(_build(PodInterface, f"{where} interface", i)
                                     for i in fields.get("interfaces") or ())
        fields["networks"] = tuple(_build(GkeNetwork, f"{where} network", n)
                                   for n in fields.get("networks") or ())
        fields["mounts"] = _mounts(fields.get("mounts") or [], where)
        fields["env"] = _env(fields.get("env") or {}, where)
        fields["rdma_env"] = _env(fields.get("rdma_env") or {}, where)
        fields["resources"] = _env(fields.get("resources") or {}, where)
        fields["capabilities"] = tuple(fields.get("capabilities") or ())
        if "daemon" in fields:
            fields["daemon"] = _daemon(fields["daemon"], f"{where} daemon", fields["mounts"])
        fabric = _build(Fabric, where, fields)
        if not fabric.source:
            raise CatalogError(f"{where}: every fact needs a source")
        if not fabric.nccl_networks:
            raise CatalogError(f"{where}: name the network(s) NCCL prints for it")
        _unique([i.interface for i in fabric.interfaces], f"{where} interfaces")
        _unique([i.network for i in fabric.interfaces], f"{where} networks")
        if fabric.interfaces and fabric.default_interface not in {
                i.interface for i in fabric.interfaces}:
            raise CatalogError(f"{where}: default_interface {fabric.default_interface!r} is "
                               "not one of its interfaces")
        _check_gke_networks(fabric, where)
        if fabric.nccl_lib and not any(fabric.nccl_lib.startswith(m.mount_path.rstrip("/") + "/")
                                       for m in fabric.mounts):
            raise CatalogError(f"{where}: nccl_lib {fabric.nccl_lib!r} is not under one of its "
                               "mounts: the installer's NCCL must reach the pod")
        if fabric.kind in fabrics:
            raise CatalogError(f"fabrics.yaml: duplicate key {fabric.kind!r}")
        fabrics[fabric.kind] = fabric
    for kind, net in networking.items():
        found = fabrics.get(kind)
        if found is None:
            raise CatalogError(f"fabrics.yaml: no entry for the {kind!r} networking machines use")
        modes = [n.device_mode for n in found.networks]
        if (modes.count("NetDevice"), modes.count("RDMA")) != (net.extra_vpcs, net.rdma_subnets):
            raise CatalogError(
                f"fabrics.yaml {kind}: {modes.count('NetDevice')} NetDevice and "
                f"{modes.count('RDMA')} RDMA GKE networks, but machines get {net.extra_vpcs} "
                f"extra VPCs and {net.rdma_subnets} RDMA subnets")
    return fabrics


def _check_gke_networks(fabric: Fabric, where: str) -> None:
    """GKE networks: unique names, a known device mode, and every pod interface joins one."""
    _unique([n.name for n in fabric.networks], f"{where} networks")
    for n in fabric.networks:
        if n.device_mode not in ("NetDevice", "RDMA"):
            raise CatalogError(f"{where} network {n.name}: device_mode must be NetDevice or RDMA")
    known = {n.name for n in fabric.networks} | {"default"}
    for i in fabric.interfaces:
        if i.network not in known:
            raise CatalogError(f"{where}: interface {i.interface} joins {i.network!r}, which is "
                               "not one of its networks")


def load_prices() -> list[Price]:
    try:
        data = read_yaml("prices.yaml")
    except FileNotFoundError:
        return []
    prices: list[Price] = []
    for raw in _items(data, "prices", "prices.yaml"):
        price = _build(Price, f"prices.yaml {raw.get('machine')}", dict(raw))
        if price.cloud not in CLOUDS:
            raise CatalogError(f"prices.yaml {price.machine}: unknown cloud {price.cloud!r}")
        if not price.source or not price.as_of:
            raise CatalogError(f"prices.yaml {price.machine}: every price needs a source and "
                               "a date")
        if price.on_demand_usd is None and not price.note:
            raise CatalogError(f"prices.yaml {price.machine}: say in `note` why no on-demand "
                               "price could be confirmed")
        for value in (price.on_demand_usd, price.spot_usd):
            if value is not None and value <= 0:
                raise CatalogError(f"prices.yaml {price.machine}: prices must be positive")
        prices.append(price)
    _unique([f"{p.cloud}/{p.machine}" for p in prices], "prices.yaml")
    return prices


def as_str_dict(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in cast(dict[object, object], value).items()}
