"""T3 with PyTorch: all-reduce across the host's devices (and, with `launch_ranks`, across
nodes: every node starts its share of the ranks), one process per device.

`launch` starts `python -m smoke.probes._torch_dist` once per rank (argv lists, no shell); each rank
joins a torch.distributed group on loopback (NCCL on GPUs, gloo on CPUs), checks that the sum
is right, then times all-reduces of a zero buffer. The first local rank writes its JSON result
to its own file (`--result-file`); NCCL's log goes to a file per rank (`NCCL_DEBUG_FILE`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.errors import CheckFailed
from smoke.probes.backend import AllReduce, busbw

ITERS = 10
WARMUP = 2
REPEATS = 5
INIT_TIMEOUT_S = 300  # peers on other nodes may start a little later than this one


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(world: int, *, backend: str, mib: int, timeout_s: float = 300.0) -> AllReduce:
    """All-reduce across this host's `world` devices, one process each, on loopback."""
    result, _ = launch_ranks(Ranks(local=world, offset=0, world=world, addr="127.0.0.1",
                                   port=free_port()), backend=backend, mib=mib,
                             timeout_s=timeout_s)
    return result


@dataclass(frozen=True)
class Ranks:
    """This host's share of a process group: `local` processes, global ranks `offset` ..
    `offset + local - 1` of `world`, rendezvous at `addr:port` (rank 0's host)."""

    local: int
    offset: int
    world: int
    addr: str
    port: int


RANK_MODULE = "smoke.probes._torch_dist"  # the program each rank runs (`python -m`)
RESULT_PREFIX = "ACCELFLEET_ALLREDUCE_RESULT "  # stdout fallback when no --result-file
_TAIL_BYTES = 4096


@dataclass(frozen=True)
class RankOutput:
    """What one rank left behind: its exit code, its stdout/stderr (tails) and its NCCL log
    (every `NCCL_DEBUG_FILE` it wrote, plus any NCCL line that still reached stdout)."""

    rank: int
    returncode: int | None
    stdout_tail: str
    stderr_tail: str
    nccl_log: str


def launch_ranks(ranks: Ranks, *, backend: str, mib: int, timeout_s: float = 300.0,
                 env: dict[str, str] | None = None) -> tuple[AllReduce, list[str]]:
    """Start this host's ranks (argv lists, no shell), wait for them, and return the timing of
    its first rank and every rank's NCCL log.

    NCCL writes its log to stdout (NVIDIA/nccl src/debug.cc `ncclDebugFile = stdout`, v2.18 to
    today) unless `NCCL_DEBUG_FILE` names a file, so each rank gets a file of its own
    (`nccl-rank<N>.%p.log`, NCCL expands %p) and the agent reads them back. A rank's result is
    a file of its own too, and its stdout and stderr go to files: a rank that writes more than
    a pipe holds never blocks the collective, and a C-library-buffered log that lands on
    stdout after the result cannot be mistaken for it."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="accelfleet-ranks-"))
    try:
        outputs = _run_ranks(ranks, backend=backend, mib=mib, timeout_s=timeout_s,
                             env=env, work=work)
        bad = [o for o in outputs if o.returncode != 0]
        if bad:
            o = bad[0]
            tail = (o.stderr_tail.strip().splitlines() or o.stdout_tail.strip().splitlines()
                    or ["(no output)"])[-1]
            raise CheckFailed(f"all-reduce rank {o.rank} exited {o.returncode}: {tail}",
                              hint="run the probe on each device alone to find the bad one")
        data = _result(work / f"result-rank{ranks.offset}.json", outputs[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bus, alg = busbw(data["bytes"], data["seconds"], ranks.world)
    logs = [o.nccl_log for o in outputs]
    details: dict[str, Any] = {"backend": backend, "world": ranks.world, "iters": ITERS,
                               "samples_s": data["samples"]}
    nccl = _nccl_used(logs)
    if nccl:
        details["nccl"] = nccl
    return AllReduce(busbw_gbps=bus, algbw_gbps=alg, seconds=data["seconds"],
                     bytes_per_device=data["bytes"], correct=bool(data["correct"]),
                     details=details), logs


def _nccl_used(logs: list[str]) -> dict[str, Any]:
    """The NCCL version, net plugin and transport the ranks' logs name (empty: no log)."""
    from smoke.probes.nccl_log import Expect, judge, parse

    log = parse("".join(logs))
    if not log.ranks:
        return {}
    details = judge(log, Expect()).details
    return {k: details[k] for k in ("nccl_versions", "net_plugins", "transports", "gdrdma")}


def _run_ranks(ranks: Ranks, *, backend: str, mib: int, timeout_s: float,
               env: dict[str, str] | None, work: Path) -> list[RankOutput]:
    base = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    procs: list[tuple[int, subprocess.Popen[bytes]]] = []
    try:
        for local in range(ranks.local):
            rank = ranks.offset + local
            argv = [sys.executable, "-m", RANK_MODULE, "--rank", str(rank),
                    "--local-rank", str(local), "--world", str(ranks.world),
                    "--addr", ranks.addr, "--port", str(ranks.port), "--backend", backend,
                    "--mib", str(mib), "--result-file", str(work / f"result-rank{rank}.json")]
            rank_env = {**base, "NCCL_DEBUG_FILE": str(work / f"nccl-rank{rank}.%p.log")}
            with open(work / f"rank{rank}.out", "wb") as out, \
                    open(work / f"rank{rank}.err", "wb") as err:
                procs.append((rank, subprocess.Popen(argv, stdout=out, stderr=err,
                                                     env=rank_env)))
        deadline = time.monotonic() + timeout_s
        for _, p in procs:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        hung = [rank for rank, p in procs if p.poll() is None]
        for _, p in procs:
            p.kill()
        for _, p in procs:
            p.wait()
        raise CheckFailed(f"all-reduce across {ranks.world} processes did not finish in "
                          f"{timeout_s:.0f} s (rank(s) {', '.join(map(str, hung))} still "
                          "running)",
                          hint="a device, a peer or the fabric hangs; check each device "
                          "alone, then each node alone") from None
    except BaseException:
        for _, p in procs:
            p.kill()
        raise
    return [_collect(rank, p.returncode, work) for rank, p in procs]


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _collect(rank: int, code: int | None, work: Path) -> RankOutput:
    out, err = _read(work / f"rank{rank}.out"), _read(work / f"rank{rank}.err")
    files = sorted(work.glob(f"nccl-rank{rank}.*.log"))
    stray = [line for line in (out + err).splitlines() if " NCCL " in line]
    log = "".join(_read(f) for f in files) + "".join(f"{line}\n" for line in stray)
    return RankOutput(rank, code, out[-_TAIL_BYTES:], err[-_TAIL_BYTES:], log)


def _result(path: Path, first: RankOutput) -> dict[str, Any]:
    """The first rank's result: its --result-file, else its sentinel line on stdout."""
    text = _read(path)
    if not text:
        lines = [line for line in first.stdout_tail.splitlines()
                 if line.startswith(RESULT_PREFIX)]
        text = lines[-1][len(RESULT_PREFIX):] if lines else ""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not {"bytes", "seconds", "samples",
                                              "correct"} <= set(data):
            raise ValueError("missing fields")
        return data
    except ValueError:
        raise CheckFailed(f"all-reduce rank {first.rank} exited 0 but left no result",
                          hint="the rank program and the agent must be the same accelfleet "
                          "version") from None


def write_result(path: str, data: dict[str, Any]) -> None:
    """A rank's result, written whole or not at all (rename)."""
    if not path:
        sys.stdout.write(RESULT_PREFIX + json.dumps(data) + "\n")
        sys.stdout.flush()
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def _worker(rank: int, local_rank: int, world: int, addr: str, port: int, backend: str,
            mib: int, result_file: str = "") -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    gpu = backend == "nccl"
    if gpu:
        torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank) if gpu else torch.device("cpu")
    dist.init_process_group(backend, init_method=f"tcp://{addr}:{port}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=INIT_TIMEOUT_S))

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize(dev)

    numel = mib * 2**20 // 4
    x = torch.full((numel,), float(rank + 1), dtype=torch.float32, device=dev)
    dist.all_reduce(x)
    want = world * (world + 1) / 2
    correct = bool(torch.all(x == want).item())
    x.zero_()
    samples = []
    for repeat in range(WARMUP + REPEATS):
        sync()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(ITERS):
            dist.all_reduce(x)
        sync()
        if repeat >= WARMUP:
            samples.append((time.perf_counter() - t0) / ITERS)
    dist.destroy_process_group()
    if local_rank == 0:
        write_result(result_file, {"bytes": numel * 4, "seconds": statistics.median(samples),
                                   "samples": samples, "correct": correct})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m smoke.probes._torch_dist")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--local-rank", type=int, default=None)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    ap.add_argument("--mib", type=int, required=True)
    ap.add_argument("--result-file", default="",
                    help="where the first local rank writes its JSON result (default: a "
                    f"line starting {RESULT_PREFIX.strip()!r} on stdout)")
    args = ap.parse_args(argv)
    local = args.rank if args.local_rank is None else args.local_rank
    _worker(args.rank, local, args.world, args.addr, args.port, args.backend, args.mib,
            args.result_file)


if __name__ == "__main__":
    main()
