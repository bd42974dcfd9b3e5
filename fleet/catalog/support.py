"""support.yaml: the consumption options each cloud offers and the oldest cluster version each
accelerator family runs on (issue 27, class 4), as frozen records checked on load."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from fleet.catalog._load import read_yaml
from fleet.errors import CatalogError

OPTIONS = ("on-demand", "spot", "flex-start", "queued", "reservation", "capacity-block")
KINDS = ("gpu", "tpu")
RUNTIMES = ("gke", "eks", "tpu-vm")  # fleet.spec.fields PoolSpec.runtime
# The AMI family an EKS node group of GPUs gets when its pool names none (`ami:`).
DEFAULT_EKS_AMI = "al2023"
# GKE: 1.34 | 1.34.0 | 1.34.0-gke.2201000; EKS: 1.33
VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+)(?:-gke\.(\d+))?)?$")


@dataclass(frozen=True)
class Consumption:
    cloud: str
    options: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class MinVersion:
    cloud: str
    accelerator: str
    min: str  # the floor, or the floors one per minor joined by ", " (see `floor_for`)
    source: str

    @property
    def floors(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.min.split(","))

    def floor_for(self, version: tuple[int, int, int, int]) -> str | None:
        """The floor a version is held to: that of the highest minor listed at or below the
        version's own minor; None when the version is older than every listed minor."""
        held = None
        for floor in sorted(self.floors, key=lambda f: version_key(f) or (0, 0, 0, 0)):
            key = version_key(floor)
            if key is not None and key[:2] <= version[:2]:
                held = floor
        return held


@dataclass(frozen=True)
class OptionMinVersion:
    cloud: str
    option: str
    kind: str  # gpu | tpu
    min: str
    source: str


@dataclass(frozen=True)
class OptionRefusal:
    cloud: str
    accelerator: str  # a TPU generation key, machine family or machine type
    options: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class RuntimeRefusal:
    cloud: str
    runtime: str  # gke | eks | tpu-vm
    accelerator: str  # a TPU generation key, machine family or machine type
    source: str


@dataclass(frozen=True)
class Ami:
    cloud: str
    ami: str
    families: tuple[str, ...]
    min_kubernetes: str | None
    source: str


@dataclass(frozen=True)
class Support:
    consumption: tuple[Consumption, ...]
    min_versions: tuple[MinVersion, ...]
    # TPU generation key -> the source saying its slices take a second node network
    second_network: tuple[tuple[str, str], ...] = ()
    option_min_versions: tuple[OptionMinVersion, ...] = ()
    option_refusals: tuple[OptionRefusal, ...] = ()
    amis: tuple[Ami, ...] = ()
    runtime_refusals: tuple[RuntimeRefusal, ...] = ()

    def runtime_refusal(self, cloud: str, runtime: str,
                        keys: tuple[str, ...]) -> RuntimeRefusal | None:
        """The entry refusing `runtime` to the first of `keys` (family keys) it names."""
        return next((r for key in keys for r in self.runtime_refusals
                     if (r.cloud, r.runtime, r.accelerator) == (cloud, runtime, key)), None)

    def option_min_version(self, cloud: str, option: str, kind: str) -> OptionMinVersion | None:
        return next((m for m in self.option_min_versions
                     if (m.cloud, m.option, m.kind) == (cloud, option, kind)), None)

    def option_refusal(self, cloud: str, option: str,
                       keys: tuple[str, ...]) -> OptionRefusal | None:
        """The entry refusing `option` to the first of `keys` (family keys) it names."""
        return next((r for key in keys for r in self.option_refusals
                     if r.cloud == cloud and r.accelerator == key and option in r.options),
                    None)

    def ami(self, cloud: str, name: str) -> Ami | None:
        return next((a for a in self.amis if (a.cloud, a.ami) == (cloud, name)), None)

    def second_network_for(self, tpu_key: str | None) -> str | None:
        """The source when slices of this TPU generation get a second node network."""
        return next((src for key, src in self.second_network if key == tpu_key), None)

    def options(self, cloud: str) -> Consumption | None:
        return next((c for c in self.consumption if c.cloud == cloud), None)

    def min_version(self, cloud: str, keys: tuple[str, ...]) -> MinVersion | None:
        """The entry of the first of `keys` (TPU generation, machine type) the data names."""
        for key in keys:
            found = next((m for m in self.min_versions
                          if m.cloud == cloud and m.accelerator == key), None)
            if found is not None:
                return found
        return None


def version_key(text: str) -> tuple[int, int, int, int] | None:
    """A version as a comparable tuple (major, minor, patch, gke build); a part left out is -1
    (a minor alone compares below each of its patches). None for what is not a version."""
    m = VERSION.match(text.strip())
    if m is None:
        return None
    major, minor, patch, build = m.groups()
    return (int(major), int(minor), int(patch) if patch else -1, int(build) if build else -1)


@cache
def load_support() -> Support:
    data = read_yaml("support.yaml")
    consumption = []
    for raw in data.get("consumption") or []:
        opts = tuple(raw.get("options") or ())
        bad = [o for o in opts if o not in OPTIONS]
        if bad or not raw.get("source"):
            raise CatalogError(f"support.yaml consumption {raw.get('cloud')!r}: unknown "
                               f"options {bad} or no source")
        consumption.append(Consumption(str(raw["cloud"]), opts, str(raw["source"])))
    mins = []
    for raw in data.get("min_versions") or []:
        floors = raw.get("min")
        entry = MinVersion(str(raw.get("cloud")), str(raw.get("accelerator")),
                           ", ".join(str(f) for f in floors) if isinstance(floors, list)
                           else str(floors), str(raw.get("source") or ""))
        if any(version_key(f) is None for f in entry.floors) or not entry.source:
            raise CatalogError(f"support.yaml min_versions {entry.accelerator!r}: "
                               f"{entry.min!r} is not a version, or no source")
        mins.append(entry)
    second = []
    for raw in data.get("second_network") or []:
        if not raw.get("accelerator") or not raw.get("source"):
            raise CatalogError(f"support.yaml second_network {raw!r}: accelerator and source")
        second.append((str(raw["accelerator"]), str(raw["source"])))
    option_mins = []
    for raw in data.get("option_min_versions") or []:
        om = OptionMinVersion(str(raw.get("cloud")), str(raw.get("option")),
                              str(raw.get("kind")), str(raw.get("min")),
                              str(raw.get("source") or ""))
        if om.option not in OPTIONS or om.kind not in KINDS or version_key(om.min) is None \
                or not om.source:
            raise CatalogError(f"support.yaml option_min_versions {raw!r}: an option of "
                               f"{OPTIONS}, a kind of {KINDS}, a version and a source")
        option_mins.append(om)
    refusals = []
    for raw in data.get("option_refusals") or []:
        opts = tuple(str(o) for o in raw.get("options") or ())
        if not opts or any(o not in OPTIONS for o in opts) or not raw.get("source"):
            raise CatalogError(f"support.yaml option_refusals {raw!r}: options and a source")
        refusals.append(OptionRefusal(str(raw.get("cloud")), str(raw.get("accelerator")),
                                      opts, str(raw["source"])))
    amis = []
    for raw in data.get("amis") or []:
        floor = raw.get("min_kubernetes")
        if not raw.get("families") or not raw.get("source") \
                or (floor is not None and version_key(str(floor)) is None):
            raise CatalogError(f"support.yaml amis {raw.get('ami')!r}: families, a source, "
                               "and min_kubernetes a version if given")
        amis.append(Ami(str(raw.get("cloud")), str(raw.get("ami")),
                        tuple(str(f) for f in raw["families"]),
                        str(floor) if floor is not None else None, str(raw["source"])))
    runtimes = []
    for raw in data.get("runtime_refusals") or []:
        if raw.get("runtime") not in RUNTIMES or not raw.get("accelerator") \
                or not raw.get("source"):
            raise CatalogError(f"support.yaml runtime_refusals {raw!r}: a runtime of "
                               f"{RUNTIMES}, an accelerator and a source")
        runtimes.append(RuntimeRefusal(str(raw.get("cloud")), str(raw["runtime"]),
                                       str(raw["accelerator"]), str(raw["source"])))
    return Support(tuple(consumption), tuple(mins), tuple(second), tuple(option_mins),
                   tuple(refusals), tuple(amis), tuple(runtimes))
