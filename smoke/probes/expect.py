"""What a host should have (`Expectation`), as the node side holds it.

The in-pod agent receives its expectation as JSON (`Expectation.to_dict`) from the launcher;
names become expectations through the catalog outside the pod (`smoke.expectations`: from
`--expect`, from a pool of the inventory, or guessed from device names), handed to the runner
as a `Resolver`. This module never loads the catalog, pydantic or YAML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from fleet.catalog.records import Accelerator
from fleet.errors import InputError
from smoke.probes.backend import Device

# How each accelerator names itself to the backends (torch.cuda.get_device_name, JAX's
# device_kind), matched on word boundaries of the lower-cased name. A mismatch only warns:
# vendors rename SKUs, and a name rule must not fail a healthy node of a variant.
# The PCIe and NVL parts are named so by the driver (NVIDIA/open-gpu-kernel-modules@df1c9a3d
# src/nvidia/generated/g_nv_name_released.h: "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA
# A100 80GB PCIe", "NVIDIA A100-PCIE-40GB"); the SXM patterns exclude them.
KIND_PATTERNS: dict[str, str] = {
    "h100-80gb": r"\bh100\b(?!.*\b(?:pcie|nvl)\b)",
    "h100-pcie": r"\bh100\b.*\bpcie\b",
    "h100-nvl": r"\bh100 nvl\b",
    "h200-141gb": r"\bh200\b(?!.*\bnvl\b)",
    "b200": r"\bb200\b",
    "a100-80gb": r"\ba100\b(?!.*\bpcie\b)",
    "a100-40gb": r"\ba100\b(?!.*\bpcie\b)",
    "a100-80gb-pcie": r"\ba100\b.*\bpcie\b",
    "a100-40gb-pcie": r"\ba100\b.*\bpcie\b",
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
                **asdict(self.accelerator), "aliases": list(self.accelerator.aliases),
                "pci_device_ids": list(self.accelerator.pci_device_ids),
                "health_signals": list(self.accelerator.health_signals)},
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
                **{**acc, "aliases": tuple(acc.get("aliases") or ()),
                   "pci_device_ids": tuple(acc.get("pci_device_ids") or ()),
                   "health_signals": tuple(acc.get("health_signals") or ())})
            return cls(accelerator=accelerator, devices=data.get("devices"),
                       memory_gib=data.get("memory_gib"), words=data.get("words"),
                       machine=data.get("machine"), chips=data.get("chips"),
                       devices_per_chip=int(data.get("devices_per_chip") or 1))
        except (AttributeError, TypeError) as exc:
            raise InputError(f"malformed expectation document: {exc}",
                             hint="the launcher and the agent must be the same accelfleet "
                             "version; re-render the workload") from None


def matches(accelerator_key: str, kind: str) -> bool:
    pattern = KIND_PATTERNS.get(accelerator_key)
    return pattern is not None and re.search(pattern, kind.lower()) is not None


class Resolver(Protocol):
    """Where names become expectations: the catalog, outside the pod (`smoke.expectations`).
    The in-pod agent has none: the launcher hands it a ready `Expectation`."""

    def is_tpu(self, words: str) -> bool: ...

    def from_catalog(self, words: str, backend: str) -> Expectation: ...

    def detect(self, devices: Sequence[Device], backend: str) -> Expectation: ...
