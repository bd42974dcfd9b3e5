"""Read an NCCL INFO log and judge it against the fabric it should have used.

One reader for the in-pod agent (each rank's `NCCL_DEBUG_FILE`) and for
`accelfleet smoke nccl-log` (kubectl logs, an MPI run's `[1,0]<stdout>:` lines, a debug file).
Standard library only: it runs in the pod.

What NCCL prints (NVIDIA/nccl src/debug.cc: every line through `vfprintf(ncclDebugFile, ...)`,
`stdout` unless `NCCL_DEBUG_FILE` is set) and what is read from it, per process (one rank):

- `NCCL version 2.27.3+cuda12.9`: the NCCL core the process really loaded.
- the net plugin and its version: `NET/Plugin: Loaded net plugin Libfabric (v10)`,
  `Initialized NET plugin gIB`, `P2P plugin v8 IBext_v8`, and the plugin's own banner
  (`NET/OFI Initializing aws-ofi-nccl 1.16.2`, `Initializing network FasTrak, version: 1.0.17`,
  `NET/gIB : Initializing gIB v1.0.6`).
- the transport: `Using network <name>` (src/init.cc), `Assigned NET plugin <name> to comm`,
  or the channel lines `Channel 00/0 : 3[0] -> 0[0] [receive] via NET/<name>/<nic>[/GDRDMA]`.
  The last proves data really flowed over that network, so it counts as proof on its own: the
  published gIB log has no `Using network` line, only `Initialized NET plugin gIB` (which says
  the plugin loaded, not that the communicator uses it) and `via NET/gIB/2/GDRDMA`.
- GPUDirect RDMA: the `/GDRDMA` suffix of every NET channel line.
- NICs: `NET/OFI Selected provider is efa ... (found N nics)` (aws-ofi-nccl: every EFA device,
  before it groups them, one group per GPU, into NCCL NET devices; `NIC group G device #D`
  lines), otherwise the distinct NIC indices `NET/<name>/<n>` of the channel lines of all ranks
  of a host (on aws-ofi-nccl: NCCL devices, i.e. NIC groups, not EFA interfaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# `[1,26]<stdout>:` (Open MPI --tag-output), then `host:pid:tid [cudaDev]`, then the level.
_MPI = re.compile(r"\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err)>:")
_PREFIX = re.compile(r"(?P<host>[A-Za-z0-9_.\-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>-?\d+)\]"
                     r"(?: \S+)? NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b")
_BARE = re.compile(r"(?:^|\s)\[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b")
_ANY = re.compile(r"\bNCCL (?:INFO|WARN)\b")

_VERSION = re.compile(r"NCCL INFO NCCL version (?P<v>\S+)")
_LOADED = re.compile(r"Loaded net plugin (?P<name>.+?) \((?P<api>v\d+)\)")
_INITIALIZED = re.compile(r"Initialized NET plugin (?P<name>\S+)")
_P2P_PLUGIN = re.compile(r"P2P plugin (?P<api>v\d+) (?P<name>\S+)")
_BANNERS = (
    re.compile(r"NET/OFI Initializing (?P<name>aws-ofi-nccl) (?P<v>\S+)"),
    re.compile(r"Initializing network (?P<name>\S+?), version: (?P<v>\S+)"),
    re.compile(r"NET/(?P<name>gIB) : Initializing gIB v?(?P<v>\S+)"),
)
_USING = re.compile(r"NCCL INFO Using network (?P<name>AWS Libfabric|\S+)")
_ASSIGNED = re.compile(r"Assigned NET plugin (?P<name>AWS Libfabric|\S+) to comm")
# NVIDIA/nccl src/transport/net.cc: "... via NET/%s/%d%s%s%s" (name, netDev, "/GDRDMA",
# "(PCI)", "/Shared"), and through a PXN proxy rank "... via NET/%s/%d(%d)%s%s".
_CHANNEL = re.compile(r"via NET/(?P<name>[^/\s][^/]*)/(?P<nic>\d+)(?:\(\d+\))?(?P<gdr>/GDRDMA)?")
_FOUND_NICS = re.compile(r"\(found (?P<n>\d+) nics?\)", re.IGNORECASE)
# aws/aws-ofi-nccl src/nccl_ofi_topo.cpp print_nic_groups: "NIC group %i device #%i
# %04x:%02x:%02x.%01x", one line per EFA device of each group (one NCCL NET device per group)
_NIC_GROUP = re.compile(r"NET/OFI NIC group (?P<g>\d+) device #(?P<d>\d+) (?P<pci>[0-9a-fA-F:.]+)")
_OFI_NETS = {"libfabric", "aws libfabric"}
_API_SUFFIX = re.compile(r"_v\d+$")


def base_name(network: str) -> str:
    """`GPUDirectTCPX_v7` -> `GPUDirectTCPX`, `IBext_v8` -> `IBext`: a plugin's API suffix
    is not part of the fabric's name."""
    return _API_SUFFIX.sub("", network.strip())


@dataclass(frozen=True, slots=True)
class FabricRule:
    """What NCCL must show on one kind of fabric."""

    kind: str
    networks: tuple[str, ...]  # base names, compared case-insensitively
    gdr: bool  # every NET channel must be GPUDirect RDMA (`/GDRDMA`)
    what: str


# Names: NVIDIA/nccl net_socket.cc "Socket", net_ib "IB" (HPC-X's plugin "IBext_v8");
# google/nccl-plugin-gpudirecttcpx "GPUDirectTCPX_v7"; google/nccl-plugin-gpudirect-tcpxo
# "FasTrak"; Google's gIB plugin "gIB"; aws/aws-ofi-nccl "Libfabric" ("AWS Libfabric" <= 1.11).
FABRICS: dict[str, FabricRule] = {
    "socket": FabricRule("socket", ("Socket",), False, "NCCL's TCP sockets"),
    "tcpx": FabricRule("tcpx", ("GPUDirectTCPX",), False, "GPUDirect-TCPX (A3 High)"),
    "tcpxo": FabricRule("tcpxo", ("FasTrak",), False, "GPUDirect-TCPXO (A3 Mega)"),
    "rdma": FabricRule("rdma", ("gIB",), True, "GPUDirect RDMA with gIB (A3 Ultra, A4)"),
    "ib": FabricRule("ib", ("IB", "IBext"), True, "InfiniBand / RoCE with GPUDirect RDMA"),
    # GDR on EFA is per instance type (the catalog's efa_gdr): the agent is told which
    "efa": FabricRule("efa", ("Libfabric", "AWS Libfabric"), True, "AWS EFA (aws-ofi-nccl)"),
}


@dataclass
class RankLog:
    """What one NCCL process (one rank) said."""

    key: str  # `host:pid`, `[1,26]` (MPI) or `device 0` (a log stripped of its prefixes)
    host: str
    device: int | None = None
    mpi_rank: int | None = None
    nccl_version: str | None = None
    plugin: str | None = None  # the net plugin's name as NCCL gives it
    plugin_api: str | None = None  # the plugin ABI NCCL loaded (v10)
    plugin_version: str | None = None  # the plugin's own release (aws-ofi-nccl 1.16.2)
    networks: list[str] = field(default_factory=list)  # `Using network` / `Assigned`
    nics_found: int | None = None
    nic_groups: dict[int, set[str]] = field(default_factory=dict)  # group -> PCI addresses
    nics_used: set[tuple[str, int]] = field(default_factory=set)  # (network, index)
    gdr_channels: int = 0
    plain_channels: int = 0  # NET channels without /GDRDMA
    plain_nics: set[tuple[str, int]] = field(default_factory=set)  # the NICs they used
    warnings: list[str] = field(default_factory=list)
    lines: int = 0

    @property
    def transports(self) -> list[str]:
        """The networks this rank proved it used, in the order first seen."""
        seen = [*self.networks, *sorted({n for n, _ in self.nics_used})]
        return list(dict.fromkeys(seen))

    @property
    def gdr(self) -> bool | None:
        """True: every NET channel is GPUDirect RDMA; False: one is not; None: no NET
        channel line."""
        if self.gdr_channels + self.plain_channels == 0:
            return None
        return self.plain_channels == 0

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.key, "host": self.host, "device": self.device,
                "mpi_rank": self.mpi_rank, "nccl_version": self.nccl_version,
                "plugin": self.plugin, "plugin_api": self.plugin_api,
                "plugin_version": self.plugin_version, "transports": self.transports,
                "gdrdma": self.gdr, "gdr_channels": self.gdr_channels,
                "plain_channels": self.plain_channels, "nics_found": self.nics_found,
                "nic_groups": len(self.nic_groups),
                "nics_used": sorted(f"{n}/{i}" for n, i in self.nics_used),
                "warnings": self.warnings[:5]}


@dataclass(frozen=True)
class NcclLog:
    ranks: tuple[RankLog, ...]
    nccl_lines: int

    def hosts(self) -> dict[str, list[RankLog]]:
        out: dict[str, list[RankLog]] = {}
        for r in self.ranks:
            out.setdefault(r.host, []).append(r)
        return out


def _rank_for(line: str, ranks: dict[str, RankLog]) -> RankLog | None:
    mpi = _MPI.search(line)
    m = _PREFIX.search(line)
    if m is not None:
        key = f"{m.group('host')}:{m.group('pid')}"
        host, dev = m.group("host"), int(m.group("dev"))
    else:
        b = _BARE.search(line)
        if b is None:
            return None
        dev = int(b.group("dev"))
        host = ""
        key = f"device {dev}"
    if mpi is not None:
        key = f"[{mpi.group('job')},{mpi.group('rank')}]"
    r = ranks.get(key)
    if r is None:
        r = ranks[key] = RankLog(key, host, dev,
                                 int(mpi.group("rank")) if mpi is not None else None)
    return r


def parse(text: str) -> NcclLog:
    """Every NCCL line of `text`, grouped by the process that printed it. Other lines
    (python output, a benchmark table, comments) are ignored."""
    ranks: dict[str, RankLog] = {}
    count = 0
    for line in text.splitlines():
        if not _ANY.search(line):
            continue
        r = _rank_for(line, ranks)
        if r is None:
            continue
        count += 1
        r.lines += 1
        _read_line(r, line)
    return NcclLog(tuple(ranks.values()), count)


def _read_line(r: RankLog, line: str) -> None:
    if " NCCL WARN " in line:
        r.warnings.append(line.split(" NCCL WARN ", 1)[1].strip())
    if (m := _VERSION.search(line)) is not None:
        r.nccl_version = m.group("v")
    if (m := _LOADED.search(line)) is not None:
        r.plugin, r.plugin_api = m.group("name"), m.group("api")
    elif (m := _P2P_PLUGIN.search(line)) is not None:
        r.plugin, r.plugin_api = m.group("name"), m.group("api")
    elif (m := _INITIALIZED.search(line)) is not None and r.plugin is None:
        r.plugin = m.group("name")
    for banner in _BANNERS:
        if (m := banner.search(line)) is not None:
            r.plugin_version = f"{m.group('name')} {m.group('v')}"
            if r.plugin is None and m.group("name") != "aws-ofi-nccl":
                r.plugin = m.group("name")
    if (m := _USING.search(line)) is not None or (m := _ASSIGNED.search(line)) is not None:
        if m.group("name") not in r.networks:
            r.networks.append(m.group("name"))
    if (m := _NIC_GROUP.search(line)) is not None:
        r.nic_groups.setdefault(int(m.group("g")), set()).add(m.group("pci").lower())
    if (m := _FOUND_NICS.search(line)) is not None:
        r.nics_found = max(r.nics_found or 0, int(m.group("n")))
    for m in _CHANNEL.finditer(line):
        r.nics_used.add((m.group("name"), int(m.group("nic"))))
        if m.group("gdr"):
            r.gdr_channels += 1
        else:
            r.plain_channels += 1
            r.plain_nics.add((m.group("name"), int(m.group("nic"))))


# -- judging ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Expect:
    """What the log should show: the fabric kind (a key of FABRICS, or a list of network
    names given by the catalog), GPUDirect RDMA, and the GPU NICs per host."""

    kind: str = ""
    networks: tuple[str, ...] = ()  # overrides the kind's names when given
    gdr: bool | None = None  # None: as the kind says
    nics: int | None = None

    @property
    def rule(self) -> FabricRule | None:
        return FABRICS.get(self.kind)

    def names(self) -> tuple[str, ...]:
        if self.networks:
            return tuple(base_name(n) for n in self.networks)
        rule = self.rule
        return rule.networks if rule is not None else ()

    def needs_gdr(self) -> bool:
        if self.gdr is not None:
            return self.gdr
        rule = self.rule
        return rule is not None and rule.gdr


@dataclass(frozen=True)
class Judgment:
    ok: bool
    problems: tuple[str, ...]
    summary: str
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NicCount:
    """The NICs NCCL used on one host. `per_device`: the count is of NCCL's NET devices,
    each an aws-ofi-nccl NIC group of one or more EFA interfaces (p5en.48xlarge: "found 16
    nics" in 8 groups of 2, NVIDIA/nccl#1597), not of EFA interfaces."""

    n: int | None
    how: str
    per_device: bool = False


def host_nics(ranks: Sequence[RankLog]) -> NicCount:
    """NICs NCCL used on one host. aws-ofi-nccl: `found N nics` (the EFA devices libfabric
    listed, before grouping: aws-ofi-nccl src/nccl_ofi_net.cpp
    nccl_net_ofi_query_provider_capabilities), else the EFA devices of its `NIC group` lines
    when every group 0..G-1 is there. Otherwise the distinct `NET/<name>/<n>` of all its ranks'
    channel lines: NICs, or NCCL devices (NIC groups) on aws-ofi-nccl."""
    found = [r.nics_found for r in ranks if r.nics_found is not None]
    if found:
        return NicCount(max(found), "found N nics (aws-ofi-nccl: EFA devices libfabric listed)")
    groups: dict[int, set[str]] = {}
    for r in ranks:
        for g, pcis in r.nic_groups.items():
            groups.setdefault(g, set()).update(pcis)
    if groups and set(groups) == set(range(max(groups) + 1)):
        pcis = set().union(*groups.values())
        return NicCount(len(pcis), f"EFA devices in aws-ofi-nccl's {len(groups)} NIC groups")
    used = {nic for r in ranks for nic in r.nics_used}
    if used and all(base_name(n).lower() in _OFI_NETS for n, _ in used):
        return NicCount(len(used), "distinct NET/Libfabric/<n>: NCCL devices, each an "
                        "aws-ofi-nccl NIC group of EFA interfaces", per_device=True)
    if used:
        return NicCount(len(used), "distinct NET/<plugin>/<n> of the channel lines")
    return NicCount(None, "no NIC line")


def _label(r: RankLog) -> str:
    return f"rank {r.key}" if r.key.startswith("[") else r.key


def judge(log: NcclLog, expect: Expect) -> Judgment:
    """Whether the log shows the fabric `expect` names: its transport on the ranks that name
    one (at least one must), no Socket fallback, GPUDirect RDMA on every NET channel where the
    fabric is RDMA, and each host's NIC count (unproven counts fail where GDRDMA channel lines
    are required anyway; elsewhere they are only recorded)."""
    names = {n.lower() for n in expect.names()}
    problems: list[str] = []
    proven = False
    for r in log.ranks:
        seen = r.transports
        wrong = [n for n in seen if base_name(n).lower() not in names]
        if names and wrong:
            problems.append(f"{_label(r)} used {', '.join(wrong)}, not "
                            f"{' or '.join(expect.names())}")
        elif names and seen:
            proven = True
    if names and not proven and not problems:
        problems.append(f"no rank logged a transport, so {' or '.join(expect.names())} is "
                        "unproven (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET?)")
    if expect.needs_gdr():
        with_net = [r for r in log.ranks if r.gdr is not None]
        lost = [r for r in with_net if r.gdr is False]
        for r in lost:
            nets = sorted(f"NET/{n}/{i}" for n, i in r.plain_nics)
            problems.append(f"{_label(r)}: no GPUDirect RDMA ({r.plain_channels} channel(s) "
                            f"via {', '.join(nets)} without /GDRDMA)")
        if not with_net:
            problems.append("no 'via NET/<plugin>/<n>/GDRDMA' channel line: GPUDirect RDMA "
                            "is unproven")
    nic_counts: dict[str, int | None] = {}
    for host, ranks in log.hosts().items():
        count = host_nics(ranks)
        n, how = count.n, count.how
        nic_counts[host or "(no host name)"] = n
        if expect.nics is None:
            continue
        where = f"host {host}" if host else "the log"
        want, what = expect.nics, "NICs"
        if count.per_device:  # aws/aws-ofi-nccl@2daf7d30 src/nccl_ofi_topo.cpp
            # create_groups_from_info_list: min(GPUs, NICs) groups under each PCIe switch, so
            # a host's ranks use one device per local GPU, or one per NIC where fewer
            devices = len({r.device for r in ranks if r.device is not None}) or 1
            want, what = min(devices, expect.nics), "NCCL NET devices"
        if n is None and expect.needs_gdr():
            problems.append(f"{where}: NIC count unproven ({how}), expected {expect.nics}")
        elif n is not None and n < want:
            problems.append(f"{where}: NCCL used {n} of {want} {what} ({how})")
    versions = sorted({r.nccl_version for r in log.ranks if r.nccl_version})
    plugins = sorted({p for r in log.ranks if (p := plugin_text(r))})
    transports = sorted({t for r in log.ranks for t in r.transports})
    summary = (f"{len(log.ranks)} rank(s) on {len(nic_counts)} host(s): "
               f"NCCL {', '.join(versions) or 'version not logged'}; "
               f"plugin {', '.join(plugins) or 'none'}; "
               f"transport {', '.join(transports) or 'not logged'}")
    details: dict[str, Any] = {
        "nccl_versions": versions, "net_plugins": plugins, "transports": transports,
        "gdrdma": _gdr_summary(log.ranks), "nics_by_host": nic_counts,
        "expected": {"fabric": expect.kind, "networks": list(expect.names()),
                     "gdrdma": expect.needs_gdr(), "nics": expect.nics},
    }
    return Judgment(not problems, tuple(problems), summary, details)


def judge_ranks(logs: Sequence[str], expect: Expect) -> Judgment:
    """`judge` over the logs of one host's own ranks (one `NCCL_DEBUG_FILE` each): a rank
    that wrote no NCCL line at all fails on a fabric pool, named by its local index."""
    judged = judge(parse("".join(logs)), expect)
    if not expect.names():
        return judged
    silent = [i for i, text in enumerate(logs) if not parse(text).ranks]
    if not silent:
        return judged
    problem = (f"local rank(s) {', '.join(map(str, silent))} wrote no NCCL line (NCCL_DEBUG "
               "not INFO, or NCCL_DEBUG_FILE unwritable?)")
    return Judgment(False, (*judged.problems, problem), judged.summary, judged.details)


def plugin_text(r: RankLog) -> str:
    """`Libfabric (v10), aws-ofi-nccl 1.16.2`, `FasTrak 1.0.17`, `gIB 1.0.6`, `IBext_v8 (v8)`."""
    text = r.plugin or ""
    if r.plugin and r.plugin_api:
        text += f" ({r.plugin_api})"
    if r.plugin_version:
        name, _, version = r.plugin_version.partition(" ")
        if name == r.plugin:
            text += f" {version}"
        else:
            text += f", {r.plugin_version}" if text else r.plugin_version
    return text


def _gdr_summary(ranks: Iterable[RankLog]) -> str:
    states = {r.gdr for r in ranks} - {None}
    if not states:
        return "unknown"
    return "on" if states == {True} else "off" if states == {False} else "partly"
