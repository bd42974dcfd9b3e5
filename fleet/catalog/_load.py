"""Reads the catalog's data files into records and checks them on the way in."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any, TypeVar, cast

from fleet.catalog._records import (
    CLOUDS,
    Accelerator,
    Cloud,
    GpuNetworking,
    MachineType,
    Price,
    Taint,
    TpuGeneration,
)
from fleet.errors import CatalogError

SCHEMA_VERSION = 1
T = TypeVar("T")


def read_yaml(name: str) -> dict[str, Any]:
    from ruamel.yaml import YAML

    text = resources.files("fleet.catalog").joinpath("data", name).read_text(encoding="utf-8")
    data = YAML(typ="safe", pure=False).load(text)
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
        acc = _build(Accelerator, f"accelerators.yaml {raw.get('key')}", fields)
        if not acc.source:
            raise CatalogError(f"accelerators.yaml {acc.key}: every figure needs a source")
        if acc.kind not in ("gpu", "tpu"):
            raise CatalogError(f"accelerators.yaml {acc.key}: kind must be gpu or tpu")
        out.append(acc)
    _unique([a.key for a in out], "accelerators.yaml")
    return {a.key: a for a in out}


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
        if "efa_interfaces" in fam:
            net = GpuNetworking(kind="efa", efa_interfaces=int(fam["efa_interfaces"]))
        for machine, gpus in fam["machines"].items():
            machines.append(
                MachineType(
                    cloud=cloud,
                    name=machine,
                    family=fam["family"],
                    accelerator=acc,
                    gpus=int(gpus),
                    gke_accelerator=fam.get("gke_accelerator"),
                    networking=net,
                )
            )
    _unique([m.name for m in machines], name)
    return {m.name: m for m in machines}, data


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
        gen = _build(TpuGeneration, f"tpu.yaml {raw.get('key')}", fields)
        if gen.accelerator not in accelerators:
            raise CatalogError(f"tpu.yaml {gen.key}: unknown accelerator {gen.accelerator!r}")
        if gen.dims not in (2, 3):
            raise CatalogError(f"tpu.yaml {gen.key}: dims must be 2 or 3")
        if gen.machine_for(gen.multihost_chips_per_vm) is None:
            raise CatalogError(f"tpu.yaml {gen.key}: no machine type for the multi-host VM size")
        gens.append(gen)
    _unique([g.key for g in gens], "tpu.yaml")
    return {g.key: g for g in gens}


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
        if not price.source:
            raise CatalogError(f"prices.yaml {price.machine}: every price needs a source")
        for value in (price.on_demand_usd, price.spot_usd):
            if value is not None and value <= 0:
                raise CatalogError(f"prices.yaml {price.machine}: prices must be positive")
        prices.append(price)
    _unique([f"{p.cloud}/{p.machine}" for p in prices], "prices.yaml")
    return prices


def as_str_dict(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in cast(dict[object, object], value).items()}
