"""AWS-only catalog facts: EKS managed add-ons pinned per Kubernetes version (aws.yaml
`eks_addons`) and EC2 Capacity Block prices (prices.yaml `capacity_block_prices`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from fleet.errors import CatalogError, InputError


def _semver(version: str) -> tuple[int, ...]:
    """'v1.20.0-eksbuild.1' -> (1, 20, 0)."""
    try:
        return tuple(int(x) for x in version.lstrip("v").split("-")[0].split("."))
    except ValueError:
        raise CatalogError(f"aws.yaml eks_addons: {version!r} is not a version") from None


@dataclass(frozen=True, slots=True)
class EksAddonPins:
    """Add-on versions by Kubernetes minor version, and which go in before the node groups.

    before_compute: installed right after the control plane, before any node group (nodes need
    them to become Ready); the others wait for the cluster's node groups.
    """

    versions: Mapping[str, Mapping[str, str]]
    default_kubernetes_version: str
    before_compute: tuple[str, ...]
    source: str
    as_of: str
    verified: bool
    support: Mapping[str, EksSupport] = field(default_factory=dict)
    control_plane_usd_per_hour: Mapping[SupportKind, float] = field(default_factory=dict)
    control_plane_price_source: str = ""
    refused_az_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Kubernetes version -> the vpc-cni versions AWS's table listed for it (aws.yaml
    # `vpc_cni_published`, each copy read with its date in `vpc_cni_published_source`)
    vpc_cni_published: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    vpc_cni_published_source: str = ""
    # Region -> AZ IDs closed to new resources (aws.yaml `offline_az_ids`, with its source)
    offline_az_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    offline_az_ids_source: str = ""

    def vpc_cni_listed(self, kubernetes_version: str) -> tuple[str, ...] | None:
        """The vpc-cni versions AWS's table listed for a Kubernetes version; None when no
        copy read had a row for it (its pin is unverified)."""
        return self.vpc_cni_published.get(kubernetes_version)

    def support_on(self, kubernetes_version: str, day: date) -> SupportKind | None:
        """"standard" or "extended" support for a version on a day; None past both (EKS
        creates no cluster at that version) or when the calendar does not list it."""
        dates = self.support.get(kubernetes_version)
        if dates is None:
            return None
        if day < dates.end_of_standard_support:
            return "standard"
        return "extended" if day < dates.end_of_extended_support else None

    def newest(self) -> str:
        """The newest Kubernetes version pinned here."""
        return max(self.versions, key=_semver)

    def pins(self, kubernetes_version: str | None) -> dict[str, str]:
        """Add-on name -> pinned version for a cluster of that version (None: the default)."""
        version = kubernetes_version or self.default_kubernetes_version
        if version not in self.versions:
            raise InputError(
                f"no EKS add-on versions are pinned for Kubernetes {version}",
                hint=f"use one of {', '.join(self.versions)}, or pin the add-ons for {version} "
                "in fleet/catalog/data/aws.yaml `eks_addons`")
        return dict(self.versions[version])


SupportKind = Literal["standard", "extended"]


@dataclass(frozen=True, slots=True)
class EksSupport:
    """The last days (exclusive) of a version's standard and extended support on EKS."""

    end_of_standard_support: date
    end_of_extended_support: date


def _day(raw: Any, where: str) -> date:
    try:
        return raw if isinstance(raw, date) else date.fromisoformat(str(raw))
    except ValueError:
        raise CatalogError(f"{where}: {raw!r} is not a date (YYYY-MM-DD)") from None


def _support(raw: Any, versions: Mapping[str, Any], where: str) -> dict[str, EksSupport]:
    if not isinstance(raw, Mapping) or set(map(str, raw)) != set(versions):
        raise CatalogError(f"{where} support: give the support dates of every pinned version")
    out = {}
    for version, dates in raw.items():
        at = f"{where} support {version}"
        if not isinstance(dates, Mapping):
            raise CatalogError(f"{at}: must be a mapping")
        support = EksSupport(_day(dates.get("end_of_standard_support"), at),
                             _day(dates.get("end_of_extended_support"), at))
        if support.end_of_extended_support <= support.end_of_standard_support:
            raise CatalogError(f"{at}: extended support ends before standard support")
        out[str(version)] = support
    return out


def _prices(raw: Any, where: str) -> dict[SupportKind, float]:
    if not isinstance(raw, Mapping) or set(raw) != {"standard", "extended"}:
        raise CatalogError(f"{where} control_plane_usd_per_hour: give `standard` and "
                           "`extended`")
    out: dict[SupportKind, float] = {}
    for kind in ("standard", "extended"):
        usd = raw[kind]
        if not isinstance(usd, int | float) or isinstance(usd, bool) or usd <= 0:
            raise CatalogError(f"{where} control_plane_usd_per_hour.{kind}: a price above 0")
        out[kind] = float(usd)
    return out


def _published(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    """`vpc_cni_published`: Kubernetes version -> the vpc-cni versions AWS's table listed."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where} vpc_cni_published: Kubernetes version -> versions")
    out: dict[str, tuple[str, ...]] = {}
    for version, listed in raw.items():
        if not isinstance(listed, list) or not listed:
            raise CatalogError(f"{where} vpc_cni_published {version}: a list of versions")
        for v in listed:
            _semver(str(v))
        out[str(version)] = tuple(str(v) for v in listed)
    return out


def load_eks_addons(raw: Any, where: str = "aws.yaml eks_addons") -> EksAddonPins:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("versions"), Mapping):
        raise CatalogError(f"{where}: must be a mapping with `versions`")
    versions = {str(k): {str(a): str(v) for a, v in dict(pins).items()}
                for k, pins in raw["versions"].items()}
    names = {frozenset(p) for p in versions.values()}
    if len(names) != 1:
        raise CatalogError(f"{where}: every Kubernetes version must pin the same add-ons")
    before = tuple(str(a) for a in raw.get("before_compute") or ())
    if set(before) - set(next(iter(names))):
        raise CatalogError(f"{where}: before_compute names an add-on that is not pinned")
    floor = raw.get("vpc_cni_min_for_efa_only")
    for version, pins in versions.items():
        if not pins.get("kube-proxy", "").startswith(f"v{version}."):
            raise CatalogError(f"{where} {version}: kube-proxy must match the cluster version")
        if floor and _semver(pins["vpc-cni"]) < _semver(str(floor)):
            raise CatalogError(f"{where} {version}: vpc-cni {pins['vpc-cni']} is older than "
                               f"{floor}, which EFA-only interfaces need")
    refused = raw.get("control_plane_refused_az_ids") or {}
    if not isinstance(refused, Mapping):
        raise CatalogError(f"{where} control_plane_refused_az_ids: region -> AZ IDs")
    addons = EksAddonPins(versions=versions,
                          default_kubernetes_version=str(raw.get("default_kubernetes_version")),
                          before_compute=before, source=str(raw.get("source") or ""),
                          as_of=str(raw.get("as_of") or ""),
                          verified=bool(raw.get("verified", False)),
                          support=_support(raw.get("support"), versions, where),
                          control_plane_usd_per_hour=_prices(
                              raw.get("control_plane_usd_per_hour"), where),
                          control_plane_price_source=str(
                              raw.get("control_plane_price_source") or ""),
                          refused_az_ids={str(r): tuple(str(z) for z in ids)
                                          for r, ids in refused.items()},
                          vpc_cni_published=_published(raw.get("vpc_cni_published"), where),
                          vpc_cni_published_source=str(
                              raw.get("vpc_cni_published_source") or ""),
                          offline_az_ids={str(r): tuple(str(z) for z in ids) for r, ids in
                                          dict(raw.get("offline_az_ids") or {}).items()},
                          offline_az_ids_source=str(raw.get("offline_az_ids_source") or ""))
    if addons.offline_az_ids and not addons.offline_az_ids_source:
        raise CatalogError(f"{where}: offline_az_ids needs offline_az_ids_source")
    if addons.vpc_cni_published and not addons.vpc_cni_published_source:
        raise CatalogError(f"{where}: vpc_cni_published needs vpc_cni_published_source")
    if not addons.source or not addons.as_of or not addons.control_plane_price_source:
        raise CatalogError(f"{where}: every fact needs a source and a date")
    if addons.default_kubernetes_version not in versions:
        raise CatalogError(f"{where}: default_kubernetes_version has no pins")
    return addons


@dataclass(frozen=True, slots=True)
class CapacityBlockPrice:
    """The effective hourly rate of one instance in an EC2 Capacity Block for ML (the
    reservation fee, paid up front, spread over the block's hours; Linux adds no OS fee).

    confirmed: False when the figure could not be checked as current; Capacity Block prices
    move with supply and demand and are fixed for a block when it is bought.
    """

    machine: str
    region: str
    instance_hour_usd: float
    as_of: str
    source: str
    confirmed: bool
    note: str = ""


def load_capacity_block_prices(raw: Any) -> dict[str, CapacityBlockPrice]:
    """prices.yaml `capacity_block_prices` -> instance type -> price."""
    out: dict[str, CapacityBlockPrice] = {}
    for item in raw or ():
        if not isinstance(item, Mapping):
            raise CatalogError("prices.yaml capacity_block_prices: entries must be mappings")
        try:
            price = CapacityBlockPrice(**{str(k): v for k, v in item.items()})
        except TypeError as exc:
            raise CatalogError(f"prices.yaml capacity_block_prices: {exc}") from None
        if not price.source or not price.as_of or price.instance_hour_usd <= 0:
            raise CatalogError(f"prices.yaml capacity_block_prices {price.machine}: needs a "
                               "positive price, a source and a date")
        if not price.confirmed and not price.note:
            raise CatalogError(f"prices.yaml capacity_block_prices {price.machine}: say why "
                               "an unconfirmed price is used in `note`")
        if price.machine in out:
            raise CatalogError(f"prices.yaml capacity_block_prices: duplicate {price.machine}")
        out[price.machine] = price
    return out
