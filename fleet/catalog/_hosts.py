"""The shape of one node of each machine type (hosts.yaml): vCPUs and memory, with sources.

Kueue quotas count them beside the devices (fleet.routing). Every machine type the catalog
builds (GPU and CPU machines, TPU hosts) has exactly one entry; a CPU machine's vCPUs must
agree with its `cpu_families` figure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from fleet.catalog._load import read_yaml
from fleet.errors import CatalogError

FILE = "hosts.yaml"
MIB_PER_GIB = 1024


@dataclass(frozen=True, slots=True)
class HostShape:
    """One node of a machine type: vCPUs, memory, where the figures come from, and whether a
    stored copy of that source confirmed them."""

    machine_type: str
    vcpus: int
    memory_gib: float
    source: str
    verified: bool = True

    @property
    def memory_mib(self) -> int:
        return round(self.memory_gib * MIB_PER_GIB)


def load_hosts(machine_types: Collection[str],
               vcpus_known: Mapping[str, int]) -> dict[str, HostShape]:
    """Every entry of hosts.yaml, checked: one per machine type of `machine_types` and no
    other, positive figures, a source per group, vCPUs equal to `vcpus_known` where given."""
    data = read_yaml(FILE)
    groups = data.get("hosts")
    if not isinstance(groups, list):
        raise CatalogError(f"{FILE}: 'hosts' must be a list of groups")
    hosts: dict[str, HostShape] = {}
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("machines"), dict):
            raise CatalogError(f"{FILE}: every group is a mapping with `machines`")
        source = str(group.get("source") or "").strip()
        if not source:
            raise CatalogError(f"{FILE}: every group of figures needs a source")
        verified = group.get("verified", True)
        if not isinstance(verified, bool):
            raise CatalogError(f"{FILE}: `verified` is true or false")
        for name, raw in group["machines"].items():
            hosts[str(name)] = _host(str(name), raw, source, verified, hosts)
    missing = sorted(set(machine_types) - set(hosts))
    if missing:
        raise CatalogError(f"{FILE}: no vCPUs and memory for {', '.join(missing)}")
    unknown = sorted(set(hosts) - set(machine_types))
    if unknown:
        raise CatalogError(f"{FILE}: {', '.join(unknown)} is no machine type of the catalog")
    for name, vcpus in vcpus_known.items():
        if name in hosts and hosts[name].vcpus != vcpus:
            raise CatalogError(f"{FILE} {name}: {hosts[name].vcpus} vCPUs, but its cpu family "
                               f"says {vcpus}")
    return hosts


def _host(name: str, raw: object, source: str, verified: bool,
          seen: Mapping[str, HostShape]) -> HostShape:
    if name in seen:
        raise CatalogError(f"{FILE}: duplicate key {name!r}")
    if not isinstance(raw, dict) or set(raw) != {"vcpus", "memory_gib"}:
        raise CatalogError(f"{FILE} {name}: give exactly `vcpus` and `memory_gib`")
    vcpus, memory = raw["vcpus"], raw["memory_gib"]
    if not isinstance(vcpus, int) or isinstance(vcpus, bool) or vcpus < 1:
        raise CatalogError(f"{FILE} {name}: vcpus must be a whole number above 0")
    if not isinstance(memory, int | float) or isinstance(memory, bool) or memory <= 0:
        raise CatalogError(f"{FILE} {name}: memory_gib must be a number above 0")
    return HostShape(name, vcpus, float(memory), source, verified)
