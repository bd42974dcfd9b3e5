"""T3 across nodes: one collective over every device of a pool (or of a TPU slice), and proof of
the transport that carried it.

GPU pools: every node's agent starts one process per local GPU; together they form one
`torch.distributed` group (NCCL on GPUs, gloo on a CPU) whose rendezvous is node 0. NCCL runs
with `NCCL_DEBUG=INFO`, each rank logging to its own `NCCL_DEBUG_FILE`, and `smoke.probes.nccl_log`
reads from those logs the NCCL version, the net plugin, the transport (`Using network <name>`,
NVIDIA/nccl src/init.cc, or the channel lines `via NET/<name>/<nic>[/GDRDMA]`), GPUDirect RDMA
and the NICs used. A fabric pool whose NCCL fell back to `Socket`, lost GDR or uses too few
NICs is caught here, by name.

One environment for NCCL on a node (`nccl_environment`): the fabric's env profile, then our
logging settings over it (the TCPXO profile sets `NCCL_DEBUG=WARN`), and the installer's NCCL
core preloaded where the fabric ships one (torch wheels find their bundled NCCL through
DT_RPATH, which `LD_LIBRARY_PATH` cannot override; a preloaded `libnccl.so.2` satisfies the
soname first). The agent sets it before any tier, so the in-node and the cross-node
all-reduce run NCCL the same way.

TPU slices: JAX's multi-controller runtime (`jax.distributed.initialize`) joins every host of
the slice (and of every slice of a multislice); a psum over all chips must equal the chip count.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoke.probes.backend import AllReduce

NcclVersion = tuple[int, int, int]

_USING_NETWORK = re.compile(r"NCCL INFO Using network (?P<name>[A-Za-z0-9_ .-]+?)\s*$")
_EXPORT = re.compile(r"^\s*export\s+(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*?)\s*$")
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
NCCL_DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
# Ours, whatever a profile says: the agent reads NCCL's INFO log, one file per rank.
NCCL_LOGGING_KEYS = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE")


def nccl_environment(profile: Mapping[str, str], *, nccl_lib: str = "",
                     base: Mapping[str, str] | None = None,
                     torch_nccl: Callable[[], NcclVersion | None] | None = None,
                     ) -> tuple[dict[str, str], dict[str, Any]]:
    """The variables to run NCCL with on this node, and what was decided (for the report):
    the fabric's profile without its logging settings, ours over it, and `LD_PRELOAD` of the
    installer's `libnccl.so.2` when `nccl_lib` names a file that exists and is not of an older
    NCCL minor release than `torch_nccl()` says torch was built with (smoke.probes.
    _nccl_version: refused, `nccl_preload_refused` says why and what to do)."""
    from smoke.probes import _nccl_version as NV

    env = {k: v for k, v in profile.items() if k not in NCCL_LOGGING_KEYS}
    env |= NCCL_DEBUG_ENV
    notes: dict[str, Any] = {}
    overridden = {k: profile[k] for k in NCCL_LOGGING_KEYS if k in profile}
    if overridden:
        notes["nccl_profile_overridden"] = overridden
    if nccl_lib:
        if Path(nccl_lib).is_file():
            installer, how = NV.installer_version(nccl_lib)
            built = (torch_nccl or NV.torch_version)()
            notes["nccl_installer_version"] = f"{NV.text(installer)} ({how})"
            notes["nccl_torch_version"] = NV.text(built)
            refused = NV.refusal(nccl_lib, installer, built)
            if refused:
                notes["nccl_preload_refused"] = refused
                return env, notes
            current = (os.environ if base is None else base).get("LD_PRELOAD", "")
            env["LD_PRELOAD"] = f"{nccl_lib}:{current}" if current else nccl_lib
            notes["nccl_preload"] = nccl_lib
        else:
            notes["nccl_preload_missing"] = (f"{nccl_lib} not found: NCCL is the framework's "
                                             "own; is the fabric's installer running on this "
                                             "node?")
    return env, notes


def nccl_networks(log: str) -> list[str]:
    """Every network NCCL said it uses in `log`, in order (`Socket`, `IB`, `FasTrak`, ...)."""
    return [m.group("name") for line in log.splitlines()
            if (m := _USING_NETWORK.search(line))]


def env_profile(path: str | Path) -> dict[str, str]:
    """The `export NAME=VALUE` lines of a shell env profile (GKE's `nccl-env-profile.sh`,
    `set_nccl_env.sh`), read without a shell. Other lines are ignored; `$VAR` references to
    names set earlier in the file or in the environment are expanded."""
    out: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _EXPORT.match(line)
        if not m:
            continue
        value = m.group("value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        value = _VAR.sub(lambda v, scope={**os.environ, **out}: scope.get(v.group(1), ""),
                         value)
        out[m.group("key")] = value
    return out


@dataclass(frozen=True)
class CrossNode:
    """What one node saw of a pool-wide collective."""

    nodes: int
    world: int  # processes (GPU) or devices (TPU) in the collective
    result: AllReduce | None
    networks: tuple[str, ...] = ()  # as NCCL named them on this node, one per rank that said
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    nccl_logs: tuple[str, ...] = ()  # each local rank's NCCL log (not kept in the report)


@dataclass(frozen=True)
class Rendezvous:
    """Where this node sits in the pool: its rank among `nodes`, and node 0's address."""

    node_rank: int
    nodes: int
    coordinator: str
    port: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Rendezvous:
        """From the variables the workload sets: JOB_COMPLETION_INDEX (Kubernetes, Indexed
        Jobs), ACCELFLEET_NODES, ACCELFLEET_COORDINATOR, ACCELFLEET_COORDINATOR_PORT."""
        from fleet.errors import SetupError

        e = os.environ if env is None else env
        try:
            return cls(node_rank=int(e.get("JOB_COMPLETION_INDEX", "0")),
                       nodes=int(e["ACCELFLEET_NODES"]), coordinator=e["ACCELFLEET_COORDINATOR"],
                       port=int(e.get("ACCELFLEET_COORDINATOR_PORT", "29500")))
        except (KeyError, ValueError) as exc:
            raise SetupError(f"the cross-node tier needs the workload's rendezvous variables: "
                             f"{exc}", hint="run the agent from the manifests `accelfleet "
                             "smoke render` writes") from None


def torch_across_nodes(rdv: Rendezvous, local_devices: int, *, gpu: bool, mib: int,
                       timeout_s: float, env: Mapping[str, str] | None = None) -> CrossNode:
    """This node's share of a pool-wide all-reduce: `local_devices` ranks of
    `nodes x local_devices`, NCCL's transport read from every local rank's log. `env` is
    what `nccl_environment` gives (its logging settings are forced here too)."""
    from fleet.errors import CheckFailed
    from smoke.probes._torch_dist import Ranks, launch_ranks

    world = rdv.nodes * local_devices
    ranks = Ranks(local=local_devices, offset=rdv.node_rank * local_devices, world=world,
                  addr=rdv.coordinator, port=rdv.port)
    extra = {k: v for k, v in (env or {}).items() if k not in NCCL_LOGGING_KEYS}
    extra |= NCCL_DEBUG_ENV
    try:
        result, logs = launch_ranks(ranks, backend="nccl" if gpu else "gloo", mib=mib,
                                    timeout_s=timeout_s, env=extra)
    except CheckFailed as exc:
        return CrossNode(rdv.nodes, world, None, error=exc.message)
    from smoke.probes.nccl_log import parse

    networks = tuple(t for log in logs for r in parse(log).ranks for t in r.transports)
    if not gpu:
        networks = ("gloo",)  # gloo has one transport (TCP) and logs none
    return CrossNode(rdv.nodes, world, result, networks,
                     details={"node_rank": rdv.node_rank, "ranks_here": local_devices},
                     nccl_logs=tuple(logs) if gpu else ())


def init_jax_distributed(rdv: Rendezvous | None, *, timeout_s: int) -> None:
    """Join the JAX multi-controller runtime, bounded in time. On GKE TPU slices `rdv` is None:
    JAX reads TPU_WORKER_ID / TPU_WORKER_HOSTNAMES / MEGASCALE_* that GKE injects into JobSet
    pods (jax _src/clusters/cloud_tpu_cluster.py). Elsewhere (GPUs, CPUs) the rendezvous is
    explicit."""
    import jax

    if rdv is None:
        jax.distributed.initialize(initialization_timeout=timeout_s)
        return
    jax.distributed.initialize(coordinator_address=f"{rdv.coordinator}:{rdv.port}",
                               num_processes=rdv.nodes, process_id=rdv.node_rank,
                               initialization_timeout=timeout_s)


def jax_across_hosts(*, mib: int, expected_devices: int | None) -> CrossNode:
    """A psum of ones over every device of every host (must equal the device count), then the
    timed all-reduce of `mib` MiB per device across all of them."""
    import time

    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    from smoke.probes.backend import busbw

    devices = jax.devices()
    world = len(devices)
    hosts = jax.process_count()
    details: dict[str, Any] = {"process_index": jax.process_index(), "processes": hosts,
                               "device_count": world, "expected_devices": expected_devices}
    if expected_devices is not None and world != expected_devices:
        return CrossNode(hosts, world, None, ("jax",), details=details,
                         error=f"jax.device_count() = {world}, expected {expected_devices}")
    mesh = Mesh(np.array(devices), ("i",))
    sharding = NamedSharding(mesh, P("i"))
    numel = max(1, mib * 2**20 // 4)
    f = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                              out_specs=P("i")))
    local = [d for d in devices if d.process_index == jax.process_index()]
    x = jax.make_array_from_single_device_arrays(
        (world * numel,), sharding,
        [jax.device_put(np.ones((numel,), np.float32), d) for d in local])
    got = f(x)
    correct = all(bool(np.all(np.asarray(s.data) == world)) for s in got.addressable_shards)
    samples = []
    for repeat in range(2 + 5):
        t0 = time.perf_counter()
        for _ in range(5):
            y = f(x)
        y.block_until_ready()
        if repeat >= 2:
            samples.append((time.perf_counter() - t0) / 5)
    seconds = float(np.median(samples))
    bus, alg = busbw(numel * 4, seconds, world)
    result = AllReduce(busbw_gbps=bus, algbw_gbps=alg, seconds=seconds,
                       bytes_per_device=numel * 4, correct=correct,
                       details={"backend": "jax psum (multi-controller)", "world": world,
                                "samples_s": samples})
    return CrossNode(hosts, world, result, ("jax",), details=details)
