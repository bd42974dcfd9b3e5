"""Judge a read NCCL log against the fabric it should have used (`judge`): its transport, no
Socket fallback, GPUDirect RDMA, each host's NICs, the multi-node NVLink fabric, NCCL's own WARN
lines first. Imported through `smoke.probes.nccl_log`. Standard library only: it runs in the
pod."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from smoke.probes._nccl_records import (
    FABRICS,
    IF_FAILURE,
    FabricRule,
    NcclLog,
    RankLog,
    base_name,
)

_OFI_NETS = {"libfabric", "aws libfabric"}


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
    # what was asked but the log does not show (a NIC count on a fabric whose log names no
    # NIC): neither proven nor failed; `smoke nccl-log --nics` exits 1 on it, the agent warns
    unproven: tuple[str, ...] = ()


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
    listed = [r.ib_devices for r in ranks if r.ib_devices]
    if listed:
        return NicCount(max(listed), "HCAs NCCL's IB transport listed (`NET/IB : Using [0]...`); "
                        "no channel line shows which it used")
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


_NUMBERS = re.compile(r"\d+")


def _shape(text: str) -> str:
    """A problem's text with its numbers masked: two WARNs that differ only in a peer's port,
    an address or a comm pointer (`recv from 11.1.128.128<52035>` / `<35201>`) are one problem."""
    return _NUMBERS.sub("#", text)


class _Problems:
    """Each problem once, with the ranks (or hosts) it concerns, in the order first seen;
    problems that differ only in their numbers are said once, with the count of the others."""

    def __init__(self) -> None:
        self._ranks: dict[str, tuple[str, list[RankLog], set[str]]] = {}
        self._hosts: dict[str, tuple[str, list[str], set[str]]] = {}
        self._plain: list[str] = []

    def add(self, text: str, rank: RankLog | None = None) -> None:
        if rank is None:
            if text not in self._plain:
                self._plain.append(text)
            return
        _, ranks, seen = self._ranks.setdefault(_shape(text), (text, [], set()))
        ranks.append(rank)
        seen.add(text)

    def add_host(self, text: str, host: str) -> None:
        """A problem of one host (its NICs): hosts with the same problem are one line."""
        _, hosts, seen = self._hosts.setdefault(_shape(text), (text, [], set()))
        hosts.append(host)
        seen.add(text)

    def lines(self) -> list[str]:
        out = [f"{_who(ranks)}: {first}{_more(seen)}" for first, ranks, seen in
               self._ranks.values()]
        for first, hosts, seen in self._hosts.values():
            names = list(dict.fromkeys(hosts))
            where = (f"host {names[0]}" if names[0] else "the log") if len(names) == 1 else (
                f"{len(names)} hosts ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})")
            out.append(f"{where}: {first}{_more(seen)}")
        return out + self._plain

    def __bool__(self) -> bool:
        return bool(self._ranks or self._hosts or self._plain)


def _more(seen: set[str]) -> str:
    return f" (and {len(seen) - 1} more like it)" if len(seen) > 1 else ""


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
    unproven = _Problems()
    nic_counts = _judge_nics(log, expect, problems, unproven)
    mnnvl = _judge_mnnvl(log, expect, problems)
    _judge_socket_ifname(log, problems)
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
        "unproven": unproven.lines(),
        "teardown_warnings": sorted({w for r in log.ranks for w in r.teardown_warnings}),
        "expected": {"fabric": expect.kind, "networks": list(expect.names()),
                     "gdrdma": expect.needs_gdr(), "nics": expect.nics},
    }
    lines = (*warned.lines(), *problems.lines())
    hint = (lines[0] if warned else "")
    return Judgment(not lines, lines, summary, details, hint, tuple(unproven.lines()))


def _judge_socket_ifname(log: NcclLog, problems: _Problems) -> None:
    """A `NCCL_SOCKET_IFNAME` that matched no usable interface, named from NCCL's own INFO line
    (`NCCL_SOCKET_IFNAME set by environment to X`) where NCCL then found no socket interface
    (`Bootstrap : no socket interface found`; NVIDIA/nccl#1837: older NCCL fails later, "...
    is neither AF_INET(2) nor AF_INET6(10)") and the rank logged no bootstrap interface."""
    said = [*log.if_failures, *(m.group(0) for r in log.ranks for w in r.warnings
                                 if (m := IF_FAILURE.search(w)) is not None)]
    if not said:
        return
    for r in log.ranks:
        if r.socket_ifname is not None and r.bootstrap_if is None:
            problems.add(f"NCCL_SOCKET_IFNAME={r.socket_ifname} matched no usable interface "
                         f"(NCCL: {said[0]}): set it to the node's interface (`ip -br addr` on "
                         "the node) or unset it", r)


def _judge_nics(log: NcclLog, expect: Expect, problems: _Problems,
                unproven: _Problems) -> dict[str, int | None]:
    nic_counts: dict[str, int | None] = {}
    for host, ranks in log.hosts().items():
        count = host_nics(ranks)
        n, how = count.n, count.how
        nic_counts[host or "(no host name)"] = n
        if expect.nics is None:
            continue
        want, what = expect.nics, "NICs"
        if count.per_device:  # aws/aws-ofi-nccl@2daf7d30 src/nccl_ofi_topo.cpp
            # create_groups_from_info_list: min(GPUs, NICs) groups under each PCIe switch, so
            # a host's ranks use one device per local GPU, or one per NIC where fewer
            devices = len({r.device for r in ranks if r.device is not None}) or 1
            want, what = min(devices, expect.nics), "NCCL NET devices"
        if n is None:
            text = f"NIC count unproven ({how}), expected {expect.nics}"
            if expect.needs_gdr():  # GDRDMA channel lines are required anyway: a failure
                problems.add_host(text, host)
            else:  # TCPX, TCPXO, EFA without GDR: their logs may name no NIC
                unproven.add_host(text, host)
        elif n < want:
            problems.add_host(f"NCCL used {n} of {want} {what} ({how})", host)
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
