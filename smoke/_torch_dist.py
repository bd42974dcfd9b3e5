"""T3 with PyTorch: all-reduce across the host's devices (and, with `launch_ranks`, across
nodes: every node starts its share of the ranks), one process per device.

`launch` starts `python -m smoke._torch_dist` once per rank (argv lists, no shell); each rank
joins a torch.distributed group on loopback (NCCL on GPUs, gloo on CPUs), checks that the sum
is right, then times all-reduces of a zero buffer. Rank 0 prints one JSON line.
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

from fleet.errors import CheckFailed
from smoke._backend import AllReduce, busbw

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


def launch_ranks(ranks: Ranks, *, backend: str, mib: int, timeout_s: float = 300.0,
                 env: dict[str, str] | None = None) -> tuple[AllReduce, list[str]]:
    """Start this host's ranks (argv lists, no shell), wait for them, and return the timing of
    its first rank and every rank's stderr (where NCCL logs its transport)."""
    procs = []
    base = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    for local in range(ranks.local):
        argv = [sys.executable, "-m", "smoke._torch_dist", "--rank", str(ranks.offset + local),
                "--local-rank", str(local), "--world", str(ranks.world), "--addr", ranks.addr,
                "--port", str(ranks.port), "--backend", backend, "--mib", str(mib)]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=base))
    outputs: list[tuple[str, str]] = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout_s))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        raise CheckFailed(f"all-reduce across {ranks.world} processes did not finish in "
                          f"{timeout_s:.0f} s",
                          hint="a device, a peer or the fabric hangs; check each device "
                          "alone, then each node alone") from None
    logs = [err for _, err in outputs]
    bad = [(ranks.offset + r, p.returncode, err)
           for r, (p, (_, err)) in enumerate(zip(procs, outputs, strict=True))
           if p.returncode != 0]
    if bad:
        rank, code, err = bad[0]
        tail = err.strip().splitlines()[-1:] or ["(no output)"]
        raise CheckFailed(f"all-reduce rank {rank} exited {code}: {tail[0]}",
                          hint="run the probe on each device alone to find the bad one")
    data = json.loads(outputs[0][0].strip().splitlines()[-1])
    bus, alg = busbw(data["bytes"], data["seconds"], ranks.world)
    return AllReduce(busbw_gbps=bus, algbw_gbps=alg, seconds=data["seconds"],
                     bytes_per_device=data["bytes"], correct=bool(data["correct"]),
                     details={"backend": backend, "world": ranks.world, "iters": ITERS,
                              "samples_s": data["samples"]}), logs


def _worker(rank: int, local_rank: int, world: int, addr: str, port: int, backend: str,
            mib: int) -> None:
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
        print(json.dumps({"bytes": numel * 4, "seconds": statistics.median(samples),
                          "samples": samples, "correct": correct}))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m smoke._torch_dist")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--local-rank", type=int, default=None)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    ap.add_argument("--mib", type=int, required=True)
    args = ap.parse_args(argv)
    local = args.rank if args.local_rank is None else args.local_rank
    _worker(args.rank, local, args.world, args.addr, args.port, args.backend, args.mib)


if __name__ == "__main__":
    main()
