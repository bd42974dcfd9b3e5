"""What a host should have: from `--expect` through the catalog, from a pool of the inventory,
or guessed from device names.

The in-pod agent receives its expectation as JSON (`Expectation.to_dict`) from the launcher, so
this module imports the catalog's loader only where it resolves names (`from_catalog`,
`for_pool`, `detect` on an accelerator): the agent never loads the catalog, pydantic or YAML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from fleet.catalog._records import Accelerator
from fleet.errors import InputError, UnknownNameError
from smoke.probes.backend import Device

if TYPE_CHECKING:
    from fleet.catalog import Shape
    from fleet.inventory import InventoryPool

# How each accelerator names itself to the backends (torch.cuda.get_device_name, JAX's
# device_kind), matched on word boundaries of the lower-cased name. A mismatch only warns:
# vendors rename SKUs, and a name rule must not fail a healthy node of a variant.
KIND_PATTERNS: dict[str, str] = {
    "h100-80gb": r"\bh100\b",
    "h200-141gb": r"\bh200\b",
    "b200": r"\bb200\b",
    "a100-80gb": r"\ba100\b",
    "a100-40gb": r"\ba100\b",
    "l4": r"\bl4\b",
    "l40s": r"\bl40s\b",
    "a10g": r"\ba10g\b",
    "tpu-v4": r"\btpu v4\b",
    "tpu-v5e": r"\btpu v5 ?lite\b|\bv5e\b",
    "tpu-v5p": r"\btpu v5(?! ?lite)\b|\bv5p\b",
    "tpu-v6e": r"\btpu v6 ?lite\b|\bv6e\b",
    "tpu7x": r"\btpu ?7x\b|\bironwood\b",
}


@dataclass(frozen=True, slots=True)
class Expectation:
    """The accelerator a host should carry and how many devices the backend should see."""

    accelerator: Accelerator | None = None
    devices: int | None = None  # per host, as the backend counts them (JAX: per TensorCore)
    memory_gib: float | None = None  # per device, as the backend counts them
    words: str | None = None  # what the user asked for (`--expect`), None when guessed
    machine: str | None = None
    chips: int | None = None  # per host
    devices_per_chip: int = 1  # as the backend counts them: JAX sees a TPU7x chip as 2

    @property
    def platform(self) -> str | None:
        return None if self.accelerator is None else self.accelerator.kind

    @property
    def verified(self) -> bool:
        return self.accelerator is None or self.accelerator.verified

    def describe(self) -> str:
        if self.accelerator is None:
            return "no expectation (no --expect, device not recognised)"
        count = f"{self.devices} x " if self.devices else ""
        how = f"--expect {self.words}" if self.words else "recognised from the device name"
        return f"{count}{self.accelerator.name} ({how})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; `Expectation.from_dict(e.to_dict()) == e`."""
        return {
            "accelerator": None if self.accelerator is None else {
                **asdict(self.accelerator), "aliases": list(self.accelerator.aliases)},
            "devices": self.devices, "memory_gib": self.memory_gib, "words": self.words,
            "machine": self.machine, "chips": self.chips,
            "devices_per_chip": self.devices_per_chip,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Expectation:
        """The inverse of `to_dict`; raises InputError on anything else."""
        try:
            acc = data.get("accelerator")
            accelerator = None if acc is None else Accelerator(
                **{**acc, "aliases": tuple(acc.get("aliases") or ())})
            return cls(accelerator=accelerator, devices=data.get("devices"),
                       memory_gib=data.get("memory_gib"), words=data.get("words"),
                       machine=data.get("machine"), chips=data.get("chips"),
                       devices_per_chip=int(data.get("devices_per_chip") or 1))
        except (AttributeError, TypeError) as exc:
            raise InputError(f"malformed expectation document: {exc}",
                             hint="the launcher and the agent must be the same accelfleet "
                             "version; re-render the workload") from None


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


def matches(accelerator_key: str, kind: str) -> bool:
    pattern = KIND_PATTERNS.get(accelerator_key)
    return pattern is not None and re.search(pattern, kind.lower()) is not None


def detect(devices: Sequence[Device], backend: str) -> Expectation:
    """Guess the accelerator from the first device's name (memory breaks ties, e.g. A100
    40 GB vs 80 GB). The device count is not checked without `--expect`."""
    if not devices or devices[0].platform == "cpu":
        return Expectation()
    from fleet.catalog import load_catalog

    first = devices[0]
    cat = load_catalog()
    hits = [cat.accelerator(k) for k in KIND_PATTERNS if matches(k, first.kind)
            and k in cat.accelerators]
    if not hits:
        return Expectation()
    per = 1 if backend != "jax" else None

    def per_device(acc: Accelerator) -> float:
        return acc.memory_gib / (per or acc.jax_devices_per_chip)

    mem = first.memory_gib
    acc = min(hits, key=lambda a: abs(per_device(a) - mem) if mem else 0.0)
    return Expectation(accelerator=acc, memory_gib=per_device(acc),
                       devices_per_chip=per or acc.jax_devices_per_chip)
