"""Which zones offer each accelerator (zones.yaml), and the one question asked of it: in this
region, which zones offer this shape, as far as the catalog knows?

Where the catalog does not know (no rows were read, a TPU generation the source lacks, CPU
machine types, an AWS Region the source does not list, or AWS zone codes that each account maps
to physical zones its own way), the answer says so and allows every zone: nothing is refused on
a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleet.catalog._load import read_yaml
from fleet.catalog.records import Cloud, Shape
from fleet.errors import CatalogError

_GCP_SUFFIX = re.compile(r"^(?:[a-z]|ai\d+[a-z])$")
_AI_ZONE = re.compile(r"-ai\d+[a-z]$")
_AZ_ID = re.compile(r"^(?P<prefix>[a-z]+\d+)-az(?P<number>\d+)$")

Table = Mapping[str, tuple[str, ...]]  # region -> zones (gcp: zone names; aws: AZ IDs)


@dataclass(frozen=True, slots=True)
class ZoneAnswer:
    """Where a shape is offered in one region, as far as the catalog knows.

    known: False when the catalog cannot tell; then every zone is allowed. offered: the zone
    names of the region that offer it (empty when known and none does). regions: the regions
    the catalog lists it in. note: why it is unknown, or what to check.
    """

    what: str
    known: bool
    offered: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    note: str = ""
    source: str = ""
    as_of: str = ""

    def allows(self, zone: str) -> bool:
        """Whether a pool may use `zone`. An AI zone (us-south1-ai1b) the source does not list
        is unknown, never refused: AI zones are newer than most catalogs."""
        return not self.known or zone in self.offered or _AI_ZONE.search(zone) is not None


@dataclass(frozen=True, slots=True)
class ZoneOffers:
    """zones.yaml, checked: GCP machine families and TPU generations, AWS instance types."""

    gcp_families: Mapping[str, Table]
    gcp_tpus: Mapping[str, Table]
    gcp_unknown: Mapping[str, str]  # TPU generation key or "cpu" -> why unknown
    aws_types: Mapping[str, Table]
    aws_unknown: Mapping[str, str]  # instance family (g5) or "cpu" -> why unknown
    aws_independent: frozenset[str]
    sources: Mapping[str, str]
    as_of: Mapping[str, str]

    def answer(self, shape: Shape, region: str) -> ZoneAnswer:
        """Which zones of `region` offer `shape` (see ZoneAnswer)."""
        if shape.cloud == "gcp":
            return self._gcp(shape, region)
        return self._aws(shape, region)

    def _known(self, cloud: Cloud, what: str, table: Table, offered: tuple[str, ...],
               note: str = "") -> ZoneAnswer:
        return ZoneAnswer(what, True, offered, tuple(sorted(table)), note,
                          self.sources[cloud], self.as_of[cloud])

    def _unknown(self, cloud: Cloud, what: str, note: str,
                 regions: tuple[str, ...] = ()) -> ZoneAnswer:
        return ZoneAnswer(what, False, (), regions, note, self.sources[cloud],
                          self.as_of[cloud])

    def _gcp(self, shape: Shape, region: str) -> ZoneAnswer:
        if shape.tpu is not None:
            what = f"TPU {shape.tpu.key}"
            table = self.gcp_tpus.get(shape.tpu.key)
            reason = self.gcp_unknown.get(shape.tpu.key, "not in zones.yaml")
        elif shape.kind == "cpu" or shape.machine is None:
            return self._unknown("gcp", shape.machine_type, self.gcp_unknown.get("cpu", ""))
        else:
            what = shape.machine_type
            table = self.gcp_families.get(shape.machine.family)
            reason = self.gcp_unknown.get(
                shape.machine.family, f"the {shape.machine.family} family is not in zones.yaml")
        if table is None:
            return self._unknown("gcp", what, reason)
        return self._known("gcp", what, table, table.get(region, ()))

    def _aws(self, shape: Shape, region: str) -> ZoneAnswer:
        what = shape.machine_type
        family = what.split(".", 1)[0]
        if shape.kind == "cpu":
            return self._unknown("aws", what, self.aws_unknown.get("cpu", ""))
        table = self.aws_types.get(what)
        if table is None:
            return self._unknown("aws", what, self.aws_unknown.get(
                family, f"{what} is not in zones.yaml"))
        regions = tuple(sorted(table))
        ids = table.get(region)
        check = (f"`aws ec2 describe-instance-type-offerings --region {region} --location-type "
                 f"availability-zone-id --filters Name=instance-type,Values={what}`")
        if ids is None:
            return self._unknown("aws", what, f"zones.yaml lists {what} in {', '.join(regions)}, "
                                 f"not in {region}: whether {region} offers it is unknown "
                                 f"here; {check} tells", regions)
        if region in self.aws_independent:
            return self._unknown("aws", what, f"{what} is offered in {region} in AZ IDs "
                                 f"{', '.join(ids)}; zone codes there map to AZ IDs per account "
                                 f"(`aws ec2 describe-availability-zones --region {region}` "
                                 "shows yours)", regions)
        names = tuple(f"{region}{chr(ord('a') + int(_number(i)) - 1)}" for i in ids)
        return self._known("aws", what, table, names, f"AZ IDs {', '.join(ids)}")


def _number(az_id: str) -> str:
    m = _AZ_ID.match(az_id)
    assert m is not None  # checked on load
    return m["number"]


def _gcp_table(raw: Any, where: str) -> Table:
    if not isinstance(raw, Mapping) or not raw:
        raise CatalogError(f"{where}: `zones` must map regions to zone letters")
    out: dict[str, tuple[str, ...]] = {}
    for region, suffixes in raw.items():
        if not isinstance(suffixes, list) or not suffixes:
            raise CatalogError(f"{where}.{region}: list the zone letters, e.g. [a, b]")
        for s in suffixes:
            if not _GCP_SUFFIX.match(str(s)):
                raise CatalogError(f"{where}.{region}: {s!r} is not a zone letter or AI zone "
                                   "suffix (ai1b)")
        out[str(region)] = tuple(f"{region}-{s}" for s in suffixes)
    return out


def _aws_table(raw: Any, where: str) -> Table:
    if not isinstance(raw, Mapping) or not raw:
        raise CatalogError(f"{where}: must map Regions to AZ IDs")
    out: dict[str, tuple[str, ...]] = {}
    for region, ids in raw.items():
        if not isinstance(ids, list) or not ids:
            raise CatalogError(f"{where}.{region}: list the AZ IDs, e.g. [use1-az1]")
        prefixes = set()
        for az in ids:
            m = _AZ_ID.match(str(az))
            if m is None:
                raise CatalogError(f"{where}.{region}: {az!r} is not an AZ ID (use1-az4)")
            prefixes.add(m["prefix"])
        if len(prefixes) != 1:
            raise CatalogError(f"{where}.{region}: AZ IDs of one Region share a prefix")
        out[str(region)] = tuple(str(a) for a in ids)
    return out


def _entries(raw: Any, where: str, table: Any) -> tuple[dict[str, Table], dict[str, str]]:
    """name -> {read, zones} | {unknown}: the tables, and the names known to be unknown."""
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: must be a mapping")
    known: dict[str, Table] = {}
    unknown: dict[str, str] = {}
    for name, entry in raw.items():
        at = f"{where}.{name}"
        if not isinstance(entry, Mapping):
            raise CatalogError(f"{at}: must be a mapping")
        if "unknown" in entry:
            unknown[str(name)] = str(entry["unknown"])
            continue
        if not entry.get("read"):
            raise CatalogError(f"{at}: say which rows were `read`")
        known[str(name)] = table(entry.get("zones"), f"{at}.zones")
    return known, unknown


def load_zone_offers() -> ZoneOffers:
    data = read_yaml("zones.yaml")
    gcp, aws = data.get("gcp"), data.get("aws")
    if not isinstance(gcp, Mapping) or not isinstance(aws, Mapping):
        raise CatalogError("zones.yaml: needs `gcp` and `aws` sections")
    for cloud, section in (("gcp", gcp), ("aws", aws)):
        if not section.get("source") or not section.get("as_of"):
            raise CatalogError(f"zones.yaml {cloud}: every fact needs a source and a date")
    families, fam_unknown = _entries(gcp.get("machine_families"), "zones.yaml gcp.machine_families",
                                     _gcp_table)
    tpus, tpu_unknown = _entries(gcp.get("tpu_generations"), "zones.yaml gcp.tpu_generations",
                                 _gcp_table)
    gcp_unknown = {**fam_unknown, **tpu_unknown,
                   "cpu": str((gcp.get("cpu") or {}).get("unknown", ""))}
    types = aws.get("instance_types")
    if not isinstance(types, Mapping):
        raise CatalogError("zones.yaml aws.instance_types: must be a mapping")
    aws_types = {str(t): _aws_table(v, f"zones.yaml aws.instance_types.{t}")
                 for t, v in types.items()}
    aws_unknown = {str(k): str(v) for k, v in dict(aws.get("unknown") or {}).items()}
    independent = frozenset(str(r) for r in aws.get("independently_mapped_regions") or ())
    return ZoneOffers(gcp_families=families, gcp_tpus=tpus, gcp_unknown=gcp_unknown,
                      aws_types=aws_types, aws_unknown=aws_unknown, aws_independent=independent,
                      sources={"gcp": str(gcp["source"]), "aws": str(aws["source"])},
                      as_of={"gcp": str(gcp["as_of"]), "aws": str(aws["as_of"])})
