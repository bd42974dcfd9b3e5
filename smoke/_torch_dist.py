"""T3 with PyTorch: all-reduce across the host's devices, one process per device.

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

from fleet.errors import CheckFailed
from smoke._backend import AllReduce, busbw

ITERS = 10
WARMUP = 2
REPEATS = 5


def launch(world: int, *, backend: str, mib: int, timeout_s: float = 300.0) -> AllReduce:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(world):
        argv = [sys.executable, "-m", "smoke._torch_dist", "--rank", str(rank), "--world",
                str(world), "--port", str(port), "--backend", backend, "--mib", str(mib)]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}))
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout_s))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        raise CheckFailed(f"all-reduce across {world} processes did not finish in "
                          f"{timeout_s:.0f} s",
                          hint="a device or the fabric hangs; check each device alone") from None
    bad = [(r, p.returncode, err) for r, (p, (_, err)) in enumerate(zip(procs, outputs,
                                                                         strict=True))
           if p.returncode != 0]
    if bad:
        rank, code, err = bad[0]
        tail = err.strip().splitlines()[-1:] or ["(no output)"]
        raise CheckFailed(f"all-reduce rank {rank} exited {code}: {tail[0]}",
                          hint="run the probe on each device alone to find the bad one")
    data = json.loads(outputs[0][0].strip().splitlines()[-1])
    bus, alg = busbw(data["bytes"], data["seconds"], world)
    return AllReduce(busbw_gbps=bus, algbw_gbps=alg, seconds=data["seconds"],
                     bytes_per_device=data["bytes"], correct=bool(data["correct"]),
                     details={"backend": backend, "world": world, "iters": ITERS,
                              "samples_s": data["samples"]})


def _worker(rank: int, world: int, port: int, backend: str, mib: int) -> None:
    import torch
    import torch.distributed as dist

    gpu = backend == "nccl"
    if gpu:
        torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank) if gpu else torch.device("cpu")
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)

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
    if rank == 0:
        print(json.dumps({"bytes": numel * 4, "seconds": statistics.median(samples),
                          "samples": samples, "correct": correct}))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m smoke._torch_dist")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    ap.add_argument("--mib", type=int, required=True)
    args = ap.parse_args(argv)
    _worker(args.rank, args.world, args.port, args.backend, args.mib)


if __name__ == "__main__":
    main()
