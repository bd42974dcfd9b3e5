"""Does the T2 matmul probe measure the hardware and not its own overhead?

Compares the probe's bf16 matmul TFLOP/s (smoke's own code path: calibration, timer, median)
with a bare tight loop of the same matmul, in the same process, on the same device, and prints
the ratio probe / bare (target >= 0.95). Rounds alternate probe and bare loop so that load from
other processes hits both alike; the figure is the median ratio over the rounds.

    .venv/bin/python benchmarks/bench_probe_fidelity.py [--backend torch|jax] [--rounds 5]
        [--n N]

The device is detected: the first CUDA GPU (torch) or JAX's first device (TPU, GPU), else the
CPU, at the sizes `accelfleet smoke local` uses there (8192^3 on an accelerator). Not part of
the test run.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable

from smoke.probes.backend import Device, Sizes, load


def bare_torch(device: Device, n: int, iters: int, repeats: int) -> float:
    import torch

    dev = torch.device("cuda", device.index) if device.platform == "gpu" else torch.device("cpu")
    a = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
    c = torch.empty(n, n, dtype=torch.bfloat16, device=dev)

    def sync() -> None:
        if device.platform == "gpu":
            torch.cuda.synchronize(dev)

    for _ in range(3):
        torch.matmul(a, b, out=c)
    samples = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            torch.matmul(a, b, out=c)
        sync()
        samples.append((time.perf_counter() - t0) / iters)
    return statistics.median(samples)


def bare_jax(device: Device, n: int, iters: int, repeats: int) -> float:
    import jax
    import jax.numpy as jnp

    d = jax.local_devices()[device.index]
    # random data, as the probe's: a matmul of ones ran 830 TFLOP/s on an H100 where random
    # data ran 700 (2026-11-27), which read as a probe 14% slow
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.device_put(jax.random.normal(ka, (n, n), jnp.bfloat16), d)
    b = jax.device_put(jax.random.normal(kb, (n, n), jnp.bfloat16), d)
    mm = jax.jit(jnp.matmul)
    for _ in range(3):
        c = mm(a, b)
    c.block_until_ready()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            c = mm(a, b)
        c.block_until_ready()
        samples.append((time.perf_counter() - t0) / iters)
    return statistics.median(samples)


BARE: dict[str, Callable[[Device, int, int, int], float]] = {"torch": bare_torch, "jax": bare_jax}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["torch", "jax"], default="torch")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=None, help="matmul size (default: the probe's)")
    args = ap.parse_args()

    backend = load(args.backend)
    device = backend.devices()[0]
    sizes = Sizes.for_platform(device.platform)
    if args.n:
        sizes = dataclasses.replace(sizes, matmul_n=args.n)
    n = sizes.matmul_n
    flops = 2 * n**3
    print(f"device {device.id}: {device.kind} ({backend.name}), {n}^3 bf16, "
          f"{args.rounds} rounds")
    ratios = []
    for i in range(args.rounds):
        probe_s, _ = backend.matmul_seconds(device, sizes)
        iters = max(1, round(sizes.target_repeat_s / probe_s))
        bare_s = BARE[backend.name](device, n, iters, sizes.repeats)
        probe_tf, bare_tf = flops / probe_s / 1e12, flops / bare_s / 1e12
        ratios.append(probe_tf / bare_tf)
        print(f"round {i}: probe {probe_tf:.4g} TFLOP/s, bare loop {bare_tf:.4g} TFLOP/s "
              f"({iters} iters), ratio {probe_tf / bare_tf:.3f}")
    ratio = statistics.median(ratios)
    print(f"fidelity (median probe / bare): {ratio:.3f}  target >= 0.95: "
          f"{'met' if ratio >= 0.95 else 'NOT met'}")


if __name__ == "__main__":
    main()
