"""support.yaml: the consumption options each cloud offers and the oldest cluster version each
accelerator family runs on (issue 27, class 4), as frozen records checked on load."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from fleet.catalog._load import read_yaml
from fleet.errors import CatalogError

OPTIONS = ("on-demand", "spot", "flex-start", "queued", "reservation", "capacity-block")
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
    min: str
    source: str


@dataclass(frozen=True)
class Support:
    consumption: tuple[Consumption, ...]
    min_versions: tuple[MinVersion, ...]
    # TPU generation key -> the source saying its slices take a second node network
    second_network: tuple[tuple[str, str], ...] = ()

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
        entry = MinVersion(str(raw.get("cloud")), str(raw.get("accelerator")),
                           str(raw.get("min")), str(raw.get("source") or ""))
        if version_key(entry.min) is None or not entry.source:
            raise CatalogError(f"support.yaml min_versions {entry.accelerator!r}: "
                               f"{entry.min!r} is not a version, or no source")
        mins.append(entry)
    second = []
    for raw in data.get("second_network") or []:
        if not raw.get("accelerator") or not raw.get("source"):
            raise CatalogError(f"support.yaml second_network {raw!r}: accelerator and source")
        second.append((str(raw["accelerator"]), str(raw["source"])))
    return Support(tuple(consumption), tuple(mins), tuple(second))
