"""What an NCCL log says, as records: each rank's (RankLog), the log's (NcclLog), a GPU's
multi-node NVLink fabric (MnnvlFabric), and what each kind of fabric must show (FABRICS).
`smoke.probes.nccl_log` reads a log into them and `smoke.probes._nccl_judge` judges them; both
are imported through `smoke.probes.nccl_log`. Standard library only: it runs in the pod."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# nvml.h: nvmlGpuFabricInfoV_t.state NVML_GPU_FABRIC_STATE_COMPLETED = 3; healthMask holds 2-bit
# fields, each 0 not supported, 1 TRUE (the fault is there), 2 FALSE (NVML_GPU_FABRIC_HEALTH_MASK_*:
# DEGRADED_BW at bit 0, ROUTE_RECOVERY 2, ROUTE_UNHEALTHY 4, ACCESS_TIMEOUT_RECOVERY 6; the same
# shifts in NVIDIA/DCGM's fabric health tests, read 2026-11-27). 0xaa: all four FALSE, healthy.
FABRIC_STATE_COMPLETED = 3
FABRIC_HEALTH_FIELDS = ((0, "degraded bandwidth"), (2, "route recovery in progress"),
                        (4, "route unhealthy"), (6, "access timeout recovery in progress"))
_FIELD_TRUE = 1
# NCCL found no socket interface (NVIDIA/nccl src/bootstrap.cc "Bootstrap : no socket interface
# found"; NCCL <= 2.27 fails later on the empty address, NVIDIA/nccl#1837)
IF_FAILURE = re.compile(r"(?:Bootstrap ?: no socket interface found|no usable listening interface "
                        r"found|is neither AF_INET\(2\) nor AF_INET6\(10\)|NET/\w+ ?: No IP "
                        r"interface found)", re.IGNORECASE)
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
    p2p_plugin: str | None = None  # HPC-X's `P2P plugin v8 IBext_v8`: the transport it picked
    ib_devices: int | None = None  # HCAs in `NET/IB : Using [0]... [7]...`
    socket_ifname: str | None = None  # `NCCL_SOCKET_IFNAME set by environment to X`
    bootstrap_if: str | None = None  # `Bootstrap : Using eth0:...`
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
                "comm_mnnvl": self.comm_mnnvl, "nvls": self.nvls,
                "ib_devices": self.ib_devices, "socket_ifname": self.socket_ifname,
                "bootstrap_interface": self.bootstrap_if}


@dataclass(frozen=True)
class NcclLog:
    ranks: tuple[RankLog, ...]
    nccl_lines: int
    bare_versions: tuple[str, ...] = ()  # `NCCL version` lines with no prefix (NCCL <= 2.21)
    attributed: bool = True  # False: no prefix anywhere, read as one unattributed process
    if_failures: tuple[str, ...] = ()  # NCCL found no socket interface (any line of the log)

    def versions(self) -> list[str]:
        return sorted({r.nccl_version for r in self.ranks if r.nccl_version}
                      | set(self.bare_versions))

    def hosts(self) -> dict[str, list[RankLog]]:
        out: dict[str, list[RankLog]] = {}
        for r in self.ranks:
            out.setdefault(r.host, []).append(r)
        return out
