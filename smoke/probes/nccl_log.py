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
from collections.abc import Sequence

from smoke.probes._nccl_judge import Expect, Judgment, NicCount, host_nics, judge, plugin_text
from smoke.probes._nccl_records import (
    FABRIC_HEALTH_FIELDS,
    FABRIC_STATE_COMPLETED,
    FABRICS,
    IF_FAILURE,
    FabricRule,
    MnnvlFabric,
    NcclLog,
    RankLog,
    base_name,
)

# The reader's surface: the records live in _nccl_records, the judging in _nccl_judge.
__all__ = ["FABRICS", "FABRIC_HEALTH_FIELDS", "FABRIC_STATE_COMPLETED", "MAX_DIGITS",
           "MAX_LINE_CHARS", "MAX_RANKS", "UNATTRIBUTED", "Expect", "FabricRule", "Judgment",
           "LogBoundError", "MnnvlFabric", "NcclLog", "NicCount", "RankLog", "base_name",
           "host_nics", "judge", "judge_ranks", "parse", "plugin_text"]

# `[1,26]<stdout>:` (Open MPI --tag-output), then `host:pid:tid [cudaDev]`, then the level.
_MPI = re.compile(r"\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err)>:")
# the host at most 253 characters (a DNS name's most): an unbounded run would make the search of
# a long line without a prefix quadratic (a 64 KiB line of letters took 31 s)
# Between `[dev]` and the level a WARN names where it was raised: `file.cc:123`, and from NCCL
# 2.30.7 the function too, `file.cc:123 (ncclRegister)` (NVIDIA/nccl v2.30.7-1 src/debug.cc
# ncclDebugLogV: "[%d] %s:%d (%s) NCCL WARN %s"; a C++ lambda's __func__ is `operator()`).
_WHERE = r"(?: \S+(?: \((?:[^()\s]|\(\)){1,200}\))?)?"
_PREFIX = re.compile(r"(?P<host>[A-Za-z0-9_.\-]{1,253}):(?P<pid>\d+):(?P<tid>\d+) "
                     r"\[(?P<dev>-?\d+)\]" + _WHERE + r" NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b")
_BARE = re.compile(r"(?:^|\s)\[(?P<dev>\d+)\]" + _WHERE +
                   r" NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b")
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
                       r"[\w./]+:\d+(?: \([^()\s]{1,200}\))? NCCL WARN )")

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
# NCCL prints the net's name whole, spaces and all (src/init.cc "Using network %s", src/plugin/
# net.cc "Assigned NET plugin %s to comm"): "AWS Libfabric", and HPC-X's "NCCL RDMA Plugin v8"
_USING = re.compile(r"NCCL INFO Using network (?P<name>\S.*?)\s*$")
_ASSIGNED = re.compile(r"Assigned NET plugin (?P<name>\S.*?) to comm")
# Mellanox/nccl-rdma-sharp-plugins (HPC-X) src/p2p_plugin.c: the plugin is loaded under the
# temporary name "NCCL RDMA Plugin vN", overwritten by the transport it picks (IB: "IBext_vN",
# logged as `P2P plugin vN IBext_vN`); NCCL 2.26 names the network by the load-time name
# ("Using network NCCL RDMA Plugin v8", data/nccl/nccl-ib-hpcx-v8-using-network-2.26.log)
_HPCX_LOAD_NAME = re.compile(r"^NCCL RDMA Plugin\b")
# `NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP ... [RO]; OOB bond0:...` (NVIDIA/nccl
# src/transport/net_ib.cc, and HPC-X's copy): the HCAs NCCL's IB transport found on the host
_IB_DEVICES = re.compile(r"NET/IB ?: Using (?P<list>(?:\[\d+\]\S+\s*)+)")
_IB_DEVICE = re.compile(r"\[\d+\]\S+")
# NVIDIA/nccl src/misc/socket.cc ncclFindInterfaces: "NCCL_SOCKET_IFNAME set by environment to %s",
# then bootstrap.cc "Bootstrap : Using %s" (2.24+: "Bootstrap: Using"), or when no interface
# matches, WARN "Bootstrap : no socket interface found" (NVIDIA/nccl#1837: an older NCCL fails
# later, "ncclSocketInit: connecting to address with family ... is neither AF_INET(2) nor ...")
_IFNAME = re.compile(r"NCCL_SOCKET_IFNAME set by environment to (?P<v>\S+)")
_BOOTSTRAP_IF = re.compile(r"Bootstrap ?: Using (?:\[0\])?(?P<if>[^:\s]+):")
# NVIDIA/nccl src/transport/net.cc: "... via NET/%s/%d%s%s%s" (name, netDev, "/GDRDMA",
# "(PCI)", "/Shared"), and through a PXN proxy rank "... via NET/%s/%d(%d)%s%s".
_CHANNEL = re.compile(r"via NET/(?P<name>[^/\s][^/]*)/(?P<nic>\d+)(?:\(\d+\))?(?P<gdr>/GDRDMA)?")
_FOUND_NICS = re.compile(r"\(found (?P<n>\d+) nics?\)", re.IGNORECASE)
# aws/aws-ofi-nccl src/nccl_ofi_topo.cpp print_nic_groups: "NIC group %i device #%i
# %04x:%02x:%02x.%01x", one line per EFA device of each group (one NCCL NET device per group)
_NIC_GROUP = re.compile(r"NET/OFI NIC group (?P<g>\d+) device #(?P<d>\d+) (?P<pci>[0-9a-fA-F:.]+)")
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
    if_failures: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if len(raw) > MAX_LINE_CHARS:
            raise LogBoundError(f"line {number:,} is {len(raw):,} characters long; a log line "
                                f"is read up to {MAX_LINE_CHARS:,}")
        line = _clean(raw)
        if _MPI.sub("", line, count=1).lstrip().startswith("#"):
            continue  # a comment (nccl-tests' `#` lines, a copied log's notes), never NCCL's line
        if (f := IF_FAILURE.search(line)) is not None and f.group(0) not in if_failures:
            if_failures.append(f.group(0))
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
        return NcclLog(tuple(ranks.values()), count, tuple(dict.fromkeys(bare)),
                       if_failures=tuple(if_failures))
    r = RankLog(UNATTRIBUTED, "")
    for line in stripped:
        r.lines += 1
        _read_line(r, line if " NCCL WARN " in line else f"NCCL INFO {line}")
    return NcclLog((r,), len(stripped), tuple(dict.fromkeys(bare)), attributed=False,
                   if_failures=tuple(if_failures))


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
    if (m := _P2P_PLUGIN.search(line)) is not None:
        r.p2p_plugin = m.group("name")
    elif (m := _INITIALIZED.search(line)) is not None and r.plugin is None:
        r.plugin = m.group("name")
    for banner in _BANNERS:
        if (m := banner.search(line)) is not None:
            r.plugin_version = f"{m.group('name')} {m.group('v')}"
            if r.plugin is None and m.group("name") != "aws-ofi-nccl":
                r.plugin = m.group("name")
    if (m := _USING.search(line)) is not None or (m := _ASSIGNED.search(line)) is not None:
        name = m.group("name")
        if _HPCX_LOAD_NAME.match(name):  # HPC-X's load-time name: the transport it picked
            name = r.p2p_plugin or "IBext"
        if name not in r.networks:
            r.networks.append(name)
    if (m := _IB_DEVICES.search(line)) is not None:
        r.ib_devices = max(r.ib_devices or 0, len(_IB_DEVICE.findall(m.group("list"))))
    if (m := _IFNAME.search(line)) is not None:
        r.socket_ifname = m.group("v")
    if (m := _BOOTSTRAP_IF.search(line)) is not None:
        r.bootstrap_if = m.group("if")
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
