"""What a host should have, resolved through the catalog: from `--expect` words, from a pool
of the inventory, or guessed from device names. Outside the pod only (`smoke local`, the
launcher): the in-pod agent is handed a ready `Expectation` and never loads the catalog."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fleet.catalog.records import Accelerator
from fleet.errors import InputError, UnknownNameError
from smoke.probes.backend import Device
from smoke.probes.expect import KIND_PATTERNS, Expectation, matches

if TYPE_CHECKING:
    from fleet.catalog import Shape
    from fleet.inventory import InventoryPool


def from_catalog(words: str, backend: str) -> Expectation:
    """`--expect` words -> the catalog's shape; raises UnknownNameError with suggestions."""
    from fleet.catalog import load_catalog

    return _from_shape(load_catalog().resolve(words), backend, words)


def _from_shape(shape: Shape, backend: str, words: str) -> Expectation:
    acc = shape.accelerator
    if shape.kind == "tpu" and backend != "jax":
        raise InputError(f"{words!r} is a Cloud TPU, which only the JAX backend can drive",
                         hint="run with --backend jax")
    per_host = shape.jax_devices_per_host if backend == "jax" else shape.devices_per_host
    share = acc.jax_devices_per_chip if backend == "jax" else 1
    return Expectation(accelerator=acc, devices=per_host, memory_gib=acc.memory_gib / share,
                       words=words, machine=shape.machine_type, chips=shape.devices_per_host,
                       devices_per_chip=share)


def for_pool(pool: InventoryPool, backend: str) -> Expectation:
    """What every node of an inventory pool should show its agent: the shape the inventory
    recorded when the fleet was resolved (chips and JAX devices per node, machine type), with
    the accelerator's record (memory, peaks) looked up by its key; never resolved again."""
    from fleet.catalog import load_catalog

    cat = load_catalog()
    acc = cat.accelerators.get(pool.accelerator)
    if acc is None:
        raise UnknownNameError("accelerator", pool.accelerator, list(cat.accelerators),
                               hint="regenerate the inventory with this accelfleet")
    words = pool.machine_type if pool.kind == "gpu" else f"{pool.accelerator} {pool.topology}"
    if acc.kind == "tpu" and backend != "jax":
        raise InputError(f"{words!r} is a Cloud TPU, which only the JAX backend can drive",
                         hint="run with --backend jax")
    jax = backend == "jax"
    share = acc.jax_devices_per_chip if jax else 1
    return Expectation(accelerator=acc, memory_gib=acc.memory_gib / share, words=words,
                       devices=pool.jax_devices_per_node if jax else pool.devices_per_node,
                       machine=pool.machine_type, chips=pool.devices_per_node,
                       devices_per_chip=share)


def detect(devices: Sequence[Device], backend: str) -> Expectation:
    """The accelerator of the first device: by its PCI device ID where the backend read it
    (the catalog's pci_device_ids: an H100 SXM, PCIe and NVL are one name's "H100" but three
    IDs), an ID the catalog does not list is not guessed from the name; without an ID, by the
    name's pattern (the driver's names: "NVIDIA H100 PCIe", "NVIDIA A100-PCIE-40GB"; memory
    breaks ties, A100 40 GB vs 80 GB). The device count is not checked without `--expect`."""
    if not devices or devices[0].platform == "cpu":
        return Expectation()
    from fleet.catalog import load_catalog

    first = devices[0]
    cat = load_catalog()
    per = 1 if backend != "jax" else None
    if first.pci_device_id is not None:
        by_id = [a for a in cat.accelerators.values() if first.pci_device_id in a.pci_device_ids]
        if not by_id:
            return Expectation()
        acc = by_id[0]
        share = per or acc.jax_devices_per_chip
        return Expectation(accelerator=acc, memory_gib=acc.memory_gib / share,
                           devices_per_chip=share)
    hits = [cat.accelerator(k) for k in KIND_PATTERNS if matches(k, first.kind)
            and k in cat.accelerators]
    if not hits:
        return Expectation()

    def per_device(acc: Accelerator) -> float:
        return acc.memory_gib / (per or acc.jax_devices_per_chip)

    mem = first.memory_gib
    acc = min(hits, key=lambda a: abs(per_device(a) - mem) if mem else 0.0)
    return Expectation(accelerator=acc, memory_gib=per_device(acc),
                       devices_per_chip=per or acc.jax_devices_per_chip)


def is_tpu(words: str) -> bool:
    from fleet.catalog import load_catalog

    return load_catalog().resolve(words).kind == "tpu"


class _Catalog:
    """`smoke.probes.expect.Resolver` through the catalog."""

    def is_tpu(self, words: str) -> bool:
        return is_tpu(words)

    def from_catalog(self, words: str, backend: str) -> Expectation:
        return from_catalog(words, backend)

    def detect(self, devices: Sequence[Device], backend: str) -> Expectation:
        return detect(devices, backend)


CATALOG = _Catalog()
