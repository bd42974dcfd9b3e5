"""What the clouds refuse, loaded from limits.yaml and regions.yaml: naming rules, upper bounds,
address-range facts, and the regions and zones each cloud offers."""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fleet.catalog._load import read_yaml
from fleet.catalog.records import CLOUDS, Cloud
from fleet.errors import CatalogError

BoundKind = Literal["limit", "quota", "accelfleet"]


@dataclass(frozen=True, slots=True)
class NameRule:
    """The names one place accepts (a GKE node pool, a GCE label value, ...)."""

    place: str
    min: int
    max: int
    pattern: re.Pattern[str]
    words: str
    example: str
    source: str
    lowercase: bool = False

    def problem(self, value: str) -> str | None:
        """Why `value` does not fit, in words, or None when it fits."""
        return _problem(self, value)

    def _why(self, value: str) -> str | None:
        if len(value) > self.max:
            return f"is {len(value)} characters long, over the {self.max} allowed"
        if len(value) < self.min:
            return "is empty"
        if self.lowercase and value != value.lower():
            return "has upper-case letters"
        if self.pattern.fullmatch(value):
            return None
        bad = [c for c in dict.fromkeys(value) if not self.allows(c)]
        if bad:
            shown = ", ".join(repr(c) for c in bad[:5])
            return f"has {shown}, which it may not hold"
        starts = any(self.pattern.fullmatch(value[0] + x) for x in ("a", "1", "a1"))
        ends = any(self.pattern.fullmatch(x + value[-1]) for x in ("a", "1", "a1"))
        if not starts:
            return f"starts with {value[0]!r}, which it may not start with"
        if not ends:
            return f"ends with {value[-1]!r}, which it may not end with"
        return "has a form it does not take"

    def allows(self, char: str) -> bool:
        """Whether the rule takes `char` somewhere in a name."""
        return _allows(self.pattern, char)


@functools.lru_cache(maxsize=65536)
def _problem(rule: NameRule, value: str) -> str | None:
    """NameRule.problem, once per rule and value: a stack repeats its names and labels."""
    return rule._why(value)


@functools.lru_cache(maxsize=65536)
def _allows(pattern: re.Pattern[str], char: str) -> bool:
    return any(pattern.fullmatch(probe) for probe in
               (char, f"a{char}a", f"a{char}1", f"1{char}1", f"a{char}", f"{char}a"))


@dataclass(frozen=True, slots=True)
class Bound:
    """An upper bound: `limit` the cloud refuses beyond, a default `quota` the account can
    raise, or accelfleet's own bound where the provider states none."""

    name: str
    value: int
    kind: BoundKind
    source: str
    quota: str = ""


@dataclass(frozen=True, slots=True)
class NetworkFacts:
    gke_pod_prefix_per_node: int
    gke_pods_source: str
    gce_reserved: int
    gce_reserved_source: str
    aws_reserved: int
    aws_reserved_source: str
    aws_vpc_prefix: tuple[int, int]
    aws_vpc_source: str
    eks_service_within: tuple[ipaddress.IPv4Network, ...]
    eks_service_prefix: tuple[int, int]
    eks_service_source: str
    eks_max_pods: Mapping[str, int]
    eks_max_pods_source: str
    eks_public_access_max: int
    eks_public_access_refused: tuple[ipaddress.IPv4Network, ...]
    eks_public_access_source: str


@dataclass(frozen=True, slots=True)
class Regions:
    """The regions and zones of one cloud. gcp: region -> zone letters; aws: region -> the
    highest AZ ID number (letters a..)."""

    cloud: Cloud
    zones: Mapping[str, tuple[str, ...]]
    source: str
    ai_zone: re.Pattern[str] | None = None

    def zone_ok(self, zone: str) -> bool:
        region = self.region_of(zone)
        return (region is not None and zone in self.zones.get(region, ())) or self._ai_ok(zone)

    def region_of(self, zone: str) -> str | None:
        """The region a zone name belongs to by its form, whether or not the zone exists."""
        m = re.fullmatch(r"(.+)-[a-z]", zone) if self.cloud == "gcp" else \
            re.fullmatch(r"(.+\d)[a-z]", zone)
        if m is None and self.ai_zone is not None:
            ai = self.ai_zone.fullmatch(zone)
            return ai["region"] if ai else None
        return m[1] if m else None

    def _ai_ok(self, zone: str) -> bool:
        ai = self.ai_zone.fullmatch(zone) if self.ai_zone is not None else None
        if ai is None:
            return False
        return f"{ai['region']}-{ai['letter']}" in self.zones.get(ai["region"], ())


def _source(raw: Mapping[str, Any], where: str) -> str:
    source = str(raw.get("source") or "")
    if not source:
        raise CatalogError(f"{where}: every fact needs a source")
    return source


def load_names(data: Mapping[str, Any]) -> dict[str, NameRule]:
    out: dict[str, NameRule] = {}
    for place, raw in (data.get("names") or {}).items():
        where = f"limits.yaml names.{place}"
        try:
            out[place] = NameRule(
                place=place, min=int(raw["min"]), max=int(raw["max"]),
                pattern=re.compile(str(raw["pattern"])), words=str(raw["words"]),
                example=str(raw["example"]), source=_source(raw, where),
                lowercase=bool(raw.get("lowercase", False)))
        except (KeyError, TypeError, ValueError, re.error) as exc:
            raise CatalogError(f"{where}: {exc}") from None
        if out[place].problem(out[place].example):
            raise CatalogError(f"{where}: its example {out[place].example!r} breaks its rule")
    return out


def load_bounds(data: Mapping[str, Any]) -> dict[str, Bound]:
    out: dict[str, Bound] = {}
    for name, raw in (data.get("bounds") or {}).items():
        where = f"limits.yaml bounds.{name}"
        kind = raw.get("kind")
        if kind not in ("limit", "quota", "accelfleet"):
            raise CatalogError(f"{where}: kind must be limit, quota or accelfleet")
        out[name] = Bound(name=name, value=int(raw["value"]), kind=kind,
                          source=_source(raw, where), quota=str(raw.get("quota") or ""))
        if kind == "quota" and not out[name].quota:
            raise CatalogError(f"{where}: a quota names the quota to raise")
    return out


def _pair(raw: Any, where: str) -> tuple[int, int]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise CatalogError(f"{where}: must be [low, high]")
    return int(raw[0]), int(raw[1])


def load_network(data: Mapping[str, Any]) -> NetworkFacts:
    raw = data.get("network")
    where = "limits.yaml network"
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: must be a mapping")
    try:
        within = tuple(ipaddress.IPv4Network(str(c)) for c in raw["eks_service_within"])
        return NetworkFacts(
            gke_pod_prefix_per_node=int(raw["gke_pod_range_per_node_prefix"]),
            gke_pods_source=str(raw["gke_pods_source"]),
            gce_reserved=int(raw["gce_reserved_per_subnet"]),
            gce_reserved_source=str(raw["gce_reserved_source"]),
            aws_reserved=int(raw["aws_reserved_per_subnet"]),
            aws_reserved_source=str(raw["aws_reserved_source"]),
            aws_vpc_prefix=_pair(raw["aws_vpc_prefix"], f"{where}.aws_vpc_prefix"),
            aws_vpc_source=str(raw["aws_vpc_source"]),
            eks_service_within=within,
            eks_service_prefix=_pair(raw["eks_service_prefix"], f"{where}.eks_service_prefix"),
            eks_service_source=str(raw["eks_service_source"]),
            eks_max_pods={str(k): int(v) for k, v in dict(raw["eks_max_pods"]).items()},
            eks_max_pods_source=str(raw["eks_max_pods_source"]),
            eks_public_access_max=int(raw["eks_public_access_cidrs_max"]),
            eks_public_access_refused=tuple(ipaddress.IPv4Network(str(c)) for c in
                                            raw["eks_public_access_refused"]),
            eks_public_access_source=str(raw["eks_public_access_source"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{where}: {exc}") from None


def load_regions() -> dict[Cloud, Regions]:
    data = read_yaml("regions.yaml")
    out: dict[Cloud, Regions] = {}
    for cloud in CLOUDS:
        raw = data.get(cloud)
        where = f"regions.yaml {cloud}"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("regions"), Mapping):
            raise CatalogError(f"{where}: must be a mapping with `regions`")
        zones: dict[str, tuple[str, ...]] = {}
        for region, letters in raw["regions"].items():
            if cloud == "gcp":
                zones[str(region)] = tuple(f"{region}-{c}" for c in str(letters))
            else:
                zones[str(region)] = tuple(f"{region}{chr(ord('a') + i)}"
                                           for i in range(int(letters)))
        for region, extra in (raw.get("restricted_regions") or {}).items():
            # offered to some projects only (TPU regions): letters and a source each
            if not isinstance(extra, Mapping) or not extra.get("zones") \
                    or not extra.get("source") or str(region) in zones:
                raise CatalogError(f"{where} restricted_regions.{region}: zones and a source, "
                                   "and not listed among the regions too")
            zones[str(region)] = tuple(f"{region}-{c}" for c in str(extra["zones"]))
        ai = raw.get("ai_zone_pattern")
        out[cloud] = Regions(cloud=cloud, zones=zones, source=_source(raw, where),
                             ai_zone=re.compile(str(ai)) if ai else None)
    return out


def load_limits() -> tuple[dict[str, NameRule], dict[str, Bound], NetworkFacts]:
    data = read_yaml("limits.yaml")
    return load_names(data), load_bounds(data), load_network(data)
