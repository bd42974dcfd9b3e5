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
- problems NCCL itself saw: every `NCCL WARN` line (the first cause of a failure, so it comes
  first and is the hint), but for the proxy service thread's lines after the rank proved its
  transport (peers closing at teardown; NVIDIA/nccl src/proxy.cc).
- the multi-node NVLink fabric (GB200 NVL72): `MNNVL busId <b> fabric UUID <u> cliqueId <c>
  state <s> healthMask <m>` (src/init.cc), `comm ... MNNVL <0|1>` and `NVLS multicast
  support is available`.

What a copied log carries around NCCL's lines is taken off first: console and CloudWatch
timestamps (glued to the host or in a `| time | message` column, the message sometimes twice),
Open MPI's `[1,N]<stdout>:` tag. NCCL <= 2.21 prints `NCCL version ...` bare (no prefix): it is
read for the log. A log whose `host:pid:tid [dev] NCCL INFO` prefixes were stripped is read as one
unattributed process, and says it cannot attribute its lines to ranks or hosts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# `[1,26]<stdout>:` (Open MPI --tag-output), then `host:pid:tid [cudaDev]`, then the level.
_MPI = re.compile(r"\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err)>:")
# the host at most 253 characters (a DNS name's most): an unbounded run would make the search of
# a long line without a prefix quadratic (a 64 KiB line of letters took 31 s)
_PREFIX = re.compile(r"(?P<host>[A-Za-z0-9_.\-]{1,253}):(?P<pid>\d+):(?P<tid>\d+) "
                     r"\[(?P<dev>-?\d+)\](?: \S+)? NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b")
_BARE = re.compile(r"(?:^|\s)\[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b")
_ANY = re.compile(r"\bNCCL (?:INFO|WARN)\b")
# ISO 8601 times as consoles, kubectl --timestamps and CloudWatch print them, glued to the host
# or not ("2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO", aws-ofi-nccl#889)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
                        r"(?:Z|[+-]\d{2}:?\d{2})?")
# NCCL <= 2.21 prints its version with printf, with no prefix (init.cc showVersion)
_BARE_VERSION = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:)?\s*NCCL version (?P<v>\S+)\s*$")
# What a stripped log (no `host:pid:tid [dev] NCCL INFO`) still says, read as NCCL's own lines
_STRIPPED = re.compile(r"^\s*(?:NCCL version |NET/|P2P plugin |Using network |Assigned NET plugin |"
                       r"Initialized NET plugin |Channel \d+|MNNVL |comm 0x|NVLS |"
                       r"[\w./]+:\d+ NCCL WARN )")

_VERSION = re.compile(r"NCCL INFO NCCL version (?P<v>\S+)")
_LOADED = re.compile(r"Loaded net plugin (?P<name>.+?) \((?P<api>v\d+)\)")
_INITIALIZED = re.compile(r"Initialized NET plugin (?P<name>\S+)")
# `P2P plugin v8 IBext_v8`; HPC-X's plugin (Mellanox/nccl-rdma-sharp-plugins, "NCCL RDMA
# Plugin v8") logs `P2P plugin IBext_v8` or `P2P plugin IBext`: its net, named as the channels
_P2P_PLUGIN = re.compile(r"P2P plugin (?:(?P<api>v\d+) )?(?P<name>\S+)")
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
# NVIDIA/nccl src/init.cc fillInfo (2.20+): "MNNVL busId 0x%lx fabric UUID %lx.%lx cliqueId 0x%x
# state %d healthMask 0x%x", from nvmlDeviceGetGpuFabricInfoV, printed where the state is not
# NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
_MNNVL = re.compile(r"MNNVL busId (?P<bus>0x[0-9a-fA-F]+) "
                    r"fabric UUID (?P<uuid>[0-9a-fA-F]+\.[0-9a-fA-F]+) "
                    r"cliqueId (?P<clique>0x[0-9a-fA-F]+) state (?P<state>\d+)"
                    r"(?: healthMask (?P<mask>0x[0-9a-fA-F]+))?")
_COMM_MNNVL = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank \d+ nRanks \d+ .*\bMNNVL (?P<on>\d)\b")
_NVLS = re.compile(r"NVLS multicast support is available on dev (?P<dev>\d+)")
# Why a network was not used, in NCCL's INFO lines (2.28.9 on a host with no RDMA device and no
# net plugin: tests/smoke/data/nccl/nccl-socket-h100-vm-2.28.9-info.log; NCCL <= 2.18 says
# "No plugin found (libnccl-net.so), using internal implementation")
_NET_MISSING = re.compile(r"NCCL INFO (?P<why>NET/\S+ ?: No device found\.?|"
                          r"Failed to initialize NET plugin \S+|"
                          r"NET/Plugin ?: ?Could not find: libnccl-net\S*|"
                          r"NET/Plugin ?: .*No plugin found \(libnccl-net\S*\).*)\s*$")
_PROXY_THREAD = re.compile(r"^\[(?:Service thread|Proxy Service \d+)\]")
# What a log may hold: past a bound, `parse` raises LogBoundError (the CLI: exit 2, in words).
MAX_LINE_CHARS = 65_536  # NCCL's longest lines (a ring of 4,096 ranks) are ~20,000
MAX_RANKS = 65_536  # processes in one log
MAX_DIGITS = 12  # a rank, device, PID or NIC number (Linux PIDs stay under 2**22)
# nvml.h: nvmlGpuFabricInfoV_t.state NVML_GPU_FABRIC_STATE_COMPLETED = 3; healthMask holds 2-bit
# fields, each 0 not supported, 1 TRUE (the fault is there), 2 FALSE (NVML_GPU_FABRIC_HEALTH_MASK_*:
# DEGRADED_BW at bit 0, ROUTE_RECOVERY 2, ROUTE_UNHEALTHY 4, ACCESS_TIMEOUT_RECOVERY 6; the same
# shifts in NVIDIA/DCGM's fabric health tests, read 2026-11-27). 0xaa: all four FALSE, healthy.
FABRIC_STATE_COMPLETED = 3
FABRIC_HEALTH_FIELDS = ((0, "degraded bandwidth"), (2, "route recovery in progress"),
                        (4, "route unhealthy"), (6, "access timeout recovery in progress"))
_FIELD_TRUE = 1
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
    # GB200 NVL72: peers across hosts over NVLink through the P2P transport, no NET plugin
    # (NVIDIA/nccl#1159); judged on the fabric NVML reports (see MnnvlFabric)
    "mnnvl": FabricRule("mnnvl", (), False, "multi-node NVLink (MNNVL), registered and healthy"),
}


@dataclass(frozen=True, slots=True)
class MnnvlFabric:
    """One GPU's multi-node NVLink fabric as NCCL logged it from NVML."""

    uuid: str
    clique: int
    state: int
    health_mask: int | None

    @property
    def present(self) -> bool:
        """A real MNNVL fabric: registered with a cluster (a plain node logs UUID 0.0)."""
        return self.uuid.strip("0.") != ""

    def faults(self) -> list[str]:
        """What the fabric says is wrong with it (nvml.h's fields that are TRUE)."""
        out = []
        if self.state != FABRIC_STATE_COMPLETED:
            out.append(f"fabric registration state {self.state}, not {FABRIC_STATE_COMPLETED} "
                       "(completed)")
        if self.health_mask is not None:
            out += [what for shift, what in FABRIC_HEALTH_FIELDS
                    if (self.health_mask >> shift) & 0b11 == _FIELD_TRUE]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"fabric_uuid": self.uuid, "clique_id": self.clique, "state": self.state,
                "health_mask": None if self.health_mask is None else hex(self.health_mask),
                "faults": self.faults()}


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
    warnings: list[str] = field(default_factory=list)  # NCCL WARN lines: problems
    teardown_warnings: list[str] = field(default_factory=list)  # proxy thread, after proof
    net_missing: list[str] = field(default_factory=list)  # INFO: why a network was not used
    mnnvl: MnnvlFabric | None = None  # the rank's GPU in a multi-node NVLink fabric
    comm_mnnvl: bool | None = None  # `comm ... MNNVL 1`: the communicator used it
    nvls: bool = False  # `NVLS multicast support is available`
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
                "warnings": self.warnings[:5],
                "mnnvl": None if self.mnnvl is None else self.mnnvl.to_dict(),
                "comm_mnnvl": self.comm_mnnvl, "nvls": self.nvls}


@dataclass(frozen=True)
class NcclLog:
    ranks: tuple[RankLog, ...]
    nccl_lines: int
    bare_versions: tuple[str, ...] = ()  # `NCCL version` lines with no prefix (NCCL <= 2.21)
    attributed: bool = True  # False: no prefix anywhere, read as one unattributed process

    def versions(self) -> list[str]:
        return sorted({r.nccl_version for r in self.ranks if r.nccl_version}
                      | set(self.bare_versions))

    def hosts(self) -> dict[str, list[RankLog]]:
        out: dict[str, list[RankLog]] = {}
        for r in self.ranks:
            out.setdefault(r.host, []).append(r)
        return out


class LogBoundError(ValueError):
    """A log past what `parse` reads (a line, a count of ranks, a number's digits): the bound
    in words."""


def _whole(digits: str, base: int = 10) -> int:
    """A number of the log; LogBoundError past MAX_DIGITS digits (Python refuses over 4,300,
    and no real rank, device or NIC number has more than a few)."""
    bare = digits.removeprefix("-").removeprefix("0x")
    if len(bare) > (MAX_DIGITS if base == 10 else 2 * MAX_DIGITS):
        raise LogBoundError(f"a number of {len(bare):,} digits ({digits[:20]}...); a rank, "
                            f"device or NIC number is read up to {MAX_DIGITS} digits")
    return int(digits, base)


def _rank_for(line: str, ranks: dict[str, RankLog]) -> RankLog | None:
    mpi = _MPI.search(line)
    m = _PREFIX.search(line)
    if m is not None:
        key = f"{m.group('host')}:{m.group('pid')}"
        host, dev = m.group("host"), _whole(m.group("dev"))
    else:
        b = _BARE.search(line)
        if b is None:
            return None
        dev = _whole(b.group("dev"))
        host = ""
        key = f"device {dev}"
    if mpi is not None:
        key = f"[{mpi.group('job')},{mpi.group('rank')}]"
    r = ranks.get(key)
    if r is None:
        if len(ranks) >= MAX_RANKS:
            raise LogBoundError(f"the log names more than {MAX_RANKS:,} processes (ranks); "
                                f"one log is read up to {MAX_RANKS:,}")
        r = ranks[key] = RankLog(key, host, dev,
                                 _whole(mpi.group("rank")) if mpi is not None else None)
    return r


def _clean(line: str) -> str:
    """The line without what a console or CloudWatch put around NCCL's: timestamps (glued to
    the host or in a column), `|` column marks, and the message's repeat after ` | `."""
    line = _TIMESTAMP.sub(" ", line)
    if "|" in line:
        cells = [c.strip() for c in line.split(" | ") if c.strip(" |")]
        cells = [c.lstrip("| ").rstrip(" |") for c in cells]
        line = cells[0] if cells else ""
    return line.strip()


def parse(text: str) -> NcclLog:
    """Every NCCL line of `text`, grouped by the process that printed it. Other lines
    (python output, a benchmark table, comments) are ignored. With no prefixed NCCL line at all
    (a stripped log), NCCL's own messages are read as one unattributed process.
    LogBoundError past a bound (MAX_LINE_CHARS, MAX_RANKS, MAX_DIGITS)."""
    ranks: dict[str, RankLog] = {}
    count = 0
    bare: list[str] = []
    stripped: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if len(raw) > MAX_LINE_CHARS:
            raise LogBoundError(f"line {number:,} is {len(raw):,} characters long; a log line "
                                f"is read up to {MAX_LINE_CHARS:,}")
        line = _clean(raw)
        if (v := _BARE_VERSION.match(line)) is not None:
            bare.append(v.group("v"))
            stripped.append(line)
            continue
        if not _ANY.search(line):
            if _STRIPPED.match(line):
                stripped.append(line)
            continue
        r = _rank_for(line, ranks)
        if r is None:
            continue
        count += 1
        r.lines += 1
        _read_line(r, line)
    if ranks or not any(not _BARE_VERSION.match(x) for x in stripped):
        return NcclLog(tuple(ranks.values()), count, tuple(dict.fromkeys(bare)))
    r = RankLog(UNATTRIBUTED, "")
    for line in stripped:
        r.lines += 1
        _read_line(r, line if " NCCL WARN " in line else f"NCCL INFO {line}")
    return NcclLog((r,), len(stripped), tuple(dict.fromkeys(bare)), attributed=False)


UNATTRIBUTED = "(no rank prefix)"


def _read_line(r: RankLog, line: str) -> None:
    if " NCCL WARN " in line:
        text = line.split(" NCCL WARN ", 1)[1].strip()
        if _PROXY_THREAD.match(text) and r.transports:
            r.teardown_warnings.append(text)
        else:
            r.warnings.append(text)
    if (m := _NET_MISSING.search(line)) is not None:
        if (why := m.group("why").rstrip(".")) not in r.net_missing:
            r.net_missing.append(why)
    if (m := _MNNVL.search(line)) is not None:
        mask = m.group("mask")
        r.mnnvl = MnnvlFabric(m.group("uuid"), _whole(m.group("clique"), 16),
                              _whole(m.group("state")), None if mask is None else _whole(mask, 16))
    if (m := _COMM_MNNVL.search(line)) is not None:
        r.comm_mnnvl = m.group("on") == "1"
    if _NVLS.search(line) is not None:
        r.nvls = True
    if (m := _VERSION.search(line)) is not None:
        r.nccl_version = m.group("v")
    if (m := _LOADED.search(line)) is not None:
        r.plugin, r.plugin_api = m.group("name"), m.group("api")
    elif (m := _P2P_PLUGIN.search(line)) is not None and (r.plugin is None or m.group("api")):
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
        r.nic_groups.setdefault(_whole(m.group("g")), set()).add(m.group("pci").lower())
    if (m := _FOUND_NICS.search(line)) is not None:
        r.nics_found = max(r.nics_found or 0, _whole(m.group("n")))
    for m in _CHANNEL.finditer(line):
        r.nics_used.add((m.group("name"), _whole(m.group("nic"))))
        if m.group("gdr"):
            r.gdr_channels += 1
        else:
            r.plain_channels += 1
            r.plain_nics.add((m.group("name"), _whole(m.group("nic"))))


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
    hint: str = ""  # the first cause where NCCL said it (its first WARN), else ""


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


def _who(ranks: Sequence[RankLog]) -> str:
    """`h:1`, `rank [1,7]`, or `16 ranks (h:1, h:2, h:3, ...)`: the ranks a problem concerns."""
    labels = list(dict.fromkeys(_label(r) for r in ranks))
    if len(labels) == 1:
        return labels[0]
    shown = ", ".join(labels[:3]) + (", ..." if len(labels) > 3 else "")
    return f"{len(labels)} ranks ({shown})"


class _Problems:
    """Each problem once, with the ranks it concerns, in the order first seen."""

    def __init__(self) -> None:
        self._ranks: dict[str, list[RankLog]] = {}
        self._plain: list[str] = []

    def add(self, text: str, rank: RankLog | None = None) -> None:
        if rank is None:
            if text not in self._plain:
                self._plain.append(text)
        else:
            self._ranks.setdefault(text, []).append(rank)

    def lines(self) -> list[str]:
        return [f"{_who(ranks)}: {text}" for text, ranks in self._ranks.items()] + self._plain

    def __bool__(self) -> bool:
        return bool(self._ranks or self._plain)


def judge(log: NcclLog, expect: Expect) -> Judgment:
    """Whether the log shows the fabric `expect` names: no NCCL WARN, its transport on the
    ranks that name one (at least one must), no Socket fallback, GPUDirect RDMA on every NET
    channel where the fabric is RDMA, each host's NIC count (unproven counts fail where GDRDMA
    channel lines are required anyway; elsewhere they are only recorded), and on a multi-node
    NVLink fabric every GPU registered and healthy in one domain. Each problem is said once,
    with the ranks it concerns; NCCL's own WARN lines come first (the first cause), and the
    hint is the first of them."""
    names = {n.lower() for n in expect.names()}
    warned = _Problems()
    for r in log.ranks:
        for text in dict.fromkeys(r.warnings):
            warned.add(f"NCCL WARN {text}", r)
    problems = _Problems()
    proven = False
    for r in log.ranks:
        seen = r.transports
        wrong = [n for n in seen if base_name(n).lower() not in names]
        if names and wrong:
            said = f" (NCCL: {'; '.join(r.net_missing)})" if r.net_missing else ""
            problems.add(f"used {', '.join(wrong)}, not {' or '.join(expect.names())}{said}", r)
        elif names and seen:
            proven = True
    if names and not proven and not problems:
        why = ("see the NCCL WARN above" if warned else
               "NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET?")
        problems.add(f"no rank logged a transport, so {' or '.join(expect.names())} is "
                     f"unproven ({why})")
    if expect.needs_gdr():
        with_net = [r for r in log.ranks if r.gdr is not None]
        lost = [r for r in with_net if r.gdr is False]
        if lost:  # one problem for every rank that lost it: the NICs and channels summed
            nets = sorted({(n, i) for r in lost for n, i in r.plain_nics})
            channels = sum(r.plain_channels for r in lost)
            problems.add(f"{_who(lost)}: no GPUDirect RDMA ({channels} channel(s) via "
                         f"{', '.join(f'NET/{n}/{i}' for n, i in nets)} without /GDRDMA)")
        if not with_net:
            problems.add("no 'via NET/<plugin>/<n>/GDRDMA' channel line: GPUDirect RDMA "
                         "is unproven")
    nic_counts = _judge_nics(log, expect, problems)
    mnnvl = _judge_mnnvl(log, expect, problems)
    if not log.attributed:
        note = ("the log has no `host:pid:tid [dev]` prefixes (stripped), so its lines cannot "
                "be attributed to ranks or hosts: read as one process")
        if expect.nics is not None or expect.kind == "mnnvl":
            problems.add(note + "; per-host and per-GPU checks are unproven")
    versions = log.versions()
    plugins = sorted({p for r in log.ranks if (p := plugin_text(r))})
    transports = sorted({t for r in log.ranks for t in r.transports})
    hosts = "host(s)" if log.attributed else "host(s), unattributed"
    summary = (f"{len(log.ranks)} rank(s) on {len(nic_counts)} {hosts}: "
               f"NCCL {', '.join(versions) or 'version not logged'}; "
               f"plugin {', '.join(plugins) or 'none'}; "
               f"transport {', '.join(transports) or 'not logged'}")
    if mnnvl:
        summary += f"; {mnnvl}"
    details: dict[str, Any] = {
        "nccl_versions": versions, "net_plugins": plugins, "transports": transports,
        "gdrdma": _gdr_summary(log.ranks), "nics_by_host": nic_counts,
        "attributed": log.attributed,
        "warnings": warned.lines(),
        "teardown_warnings": sorted({w for r in log.ranks for w in r.teardown_warnings}),
        "expected": {"fabric": expect.kind, "networks": list(expect.names()),
                     "gdrdma": expect.needs_gdr(), "nics": expect.nics},
    }
    lines = (*warned.lines(), *problems.lines())
    hint = (lines[0] if warned else "")
    return Judgment(not lines, lines, summary, details, hint)


def _judge_nics(log: NcclLog, expect: Expect, problems: _Problems) -> dict[str, int | None]:
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
            problems.add(f"{where}: NIC count unproven ({how}), expected {expect.nics}")
        elif n is not None and n < want:
            problems.add(f"{where}: NCCL used {n} of {want} {what} ({how})")
    return nic_counts


def _judge_mnnvl(log: NcclLog, expect: Expect, problems: _Problems) -> str:
    """The multi-node NVLink fabric: any GPU whose fabric reports a fault fails wherever it is
    seen; on an `mnnvl` pool every rank must show a completed registration in one domain (one
    fabric UUID and clique) and no communicator may run without it (`MNNVL 0`)."""
    fabrics = [(r, r.mnnvl) for r in log.ranks if r.mnnvl is not None]
    for r, f in fabrics:
        if f.present or expect.kind == "mnnvl":
            for fault in f.faults():
                problems.add(f"MNNVL fabric: {fault} (healthMask "
                             f"{'-' if f.health_mask is None else hex(f.health_mask)})", r)
    if expect.kind == "mnnvl":
        for r in log.ranks:
            if r.mnnvl is None:
                if r.comm_mnnvl is None:
                    problems.add("no `MNNVL busId ... fabric UUID` line: the multi-node NVLink "
                                 "fabric is unproven (NCCL >= 2.20 with NCCL_DEBUG=INFO logs it)",
                                 r)
            elif not r.mnnvl.present:
                problems.add("the GPU is in no multi-node NVLink fabric (fabric UUID "
                             f"{r.mnnvl.uuid}, cliqueId {r.mnnvl.clique:#x})", r)
            if r.comm_mnnvl is False:
                problems.add("the communicator ran without MNNVL (`MNNVL 0`)", r)
        domains = {(f.uuid, f.clique) for _, f in fabrics if f.present}
        if len(domains) > 1:
            problems.add("the GPUs are in " + str(len(domains)) + " NVLink domains (fabric "
                         "UUID, cliqueId): " + ", ".join(f"{u} {c:#x}" for u, c in
                                                        sorted(domains)) + "; one expected")
    present = [f for _, f in fabrics if f.present]
    if not present:
        return ""
    masks = sorted({hex(f.health_mask) for f in present if f.health_mask is not None})
    return (f"MNNVL on {len(present)} GPU(s), fabric {present[0].uuid} clique "
            f"{present[0].clique:#x}, healthMask {', '.join(masks) or '-'}")


def judge_ranks(logs: Sequence[str], expect: Expect) -> Judgment:
    """`judge` over the logs of one host's own ranks (one `NCCL_DEBUG_FILE` each): a rank
    that wrote no NCCL line at all fails on a fabric pool, named by its local index."""
    judged = judge(parse("".join(logs)), expect)
    if not expect.names() and expect.kind != "mnnvl":
        return judged
    silent = [i for i, text in enumerate(logs) if not parse(text).ranks]
    if not silent:
        return judged
    problem = (f"local rank(s) {', '.join(map(str, silent))} wrote no NCCL line (NCCL_DEBUG "
               "not INFO, or NCCL_DEBUG_FILE unwritable?)")
    return Judgment(False, (*judged.problems, problem), judged.summary, judged.details,
                    judged.hint)


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
