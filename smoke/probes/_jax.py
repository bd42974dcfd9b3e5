"""The JAX probes (TPU, GPU or CPU). Imported only when chosen.

Each device is timed alone: its inputs are committed to it, so the jitted work runs there.
XLA runs one device's work in order, so blocking on the last output times the whole loop.
"""

from __future__ import annotations

import os
import platform as _platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from smoke.probes.backend import (
    AllReduce,
    BackendName,
    Device,
    KnownAnswer,
    Sizes,
    SustainedLoad,
    busbw,
    chunk_iters,
    measure,
)

ALLREDUCE_ITERS = 10
# On a GPU, JAX's memory_stats()["bytes_limit"] is its allocator's share of the device, not the
# device: XLA_PYTHON_CLIENT_MEM_FRACTION of it, 0.75 unless set (JAX's "GPU memory allocation"
# page). Seen on an H100 80GB HBM3, 2026-11-27: bytes_limit 59.38 GiB where torch saw 79.18 GiB
# (exactly 0.75), which failed the inventory of a healthy GPU.
JAX_GPU_MEM_FRACTION = 0.75


def memory_gib(platform: str, stats: dict[str, Any],
               env: dict[str, str] | None = None) -> float | None:
    """The device's memory from JAX's memory_stats: a TPU's `bytes_limit` as it is; a GPU's
    divided by the allocator's fraction (JAX_GPU_MEM_FRACTION, or the one set in
    XLA_PYTHON_CLIENT_MEM_FRACTION)."""
    limit = stats.get("bytes_limit")
    if not limit:
        return None
    gib = float(limit) / 2**30
    if platform != "gpu":
        return gib
    e = os.environ if env is None else env
    try:
        fraction = float(e.get("XLA_PYTHON_CLIENT_MEM_FRACTION", JAX_GPU_MEM_FRACTION))
    except ValueError:
        fraction = JAX_GPU_MEM_FRACTION
    return gib / fraction if 0 < fraction <= 1 else gib


class JaxBackend:
    name: BackendName = "jax"

    def __init__(self) -> None:
        self._by_id: dict[str, jax.Device] = {}

    def versions(self) -> dict[str, str]:
        import jaxlib

        return {"python": _platform.python_version(), "jax": jax.__version__,
                "jaxlib": jaxlib.__version__, "jax_backend": jax.default_backend()}

    def devices(self) -> list[Device]:
        out = []
        for i, d in enumerate(jax.local_devices()):
            plat = "gpu" if d.platform in ("gpu", "cuda", "rocm") else d.platform
            dev = Device(id=f"{plat}{i}", index=i, platform=plat, kind=str(d.device_kind),
                         memory_gib=memory_gib(plat, d.memory_stats() or {}))
            self._by_id[dev.id] = d
            out.append(dev)
        return out

    def _dev(self, device: Device) -> jax.Device:
        if not self._by_id:
            self.devices()
        return self._by_id[device.id]

    def known_answer(self, device: Device, n: int, seed: int) -> KnownAnswer:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        d = self._dev(device)
        mm = jax.jit(lambda x, y: jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST))
        got = np.asarray(mm(jax.device_put(a, d), jax.device_put(b, d)), dtype=np.float64)
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        return KnownAnswer(max_rel_error=err, checksum=float(got.sum()))

    def _mesh(self, devices: Sequence[Device]) -> Mesh:
        return Mesh(np.array([self._dev(d) for d in devices]), ("i",))

    def psum(self, devices: Sequence[Device]) -> float | None:
        mesh = self._mesh(devices)
        f = jax.jit(jax.shard_map(lambda x: jax.lax.psum(x, "i"), mesh=mesh, in_specs=P("i"),
                                  out_specs=P("i")))
        ones = jax.device_put(np.ones((len(devices),), np.float32), NamedSharding(mesh, P("i")))
        values = np.asarray(f(ones))
        # every device must hold the count; report the value farthest from it, so one wrong
        # device shows up
        want = float(len(devices))
        return float(max(values.tolist(), key=lambda v: abs(v - want)))

    def matmul_seconds(self, device: Device, sizes: Sizes) -> tuple[float, list[float]]:
        d, n = self._dev(device), sizes.matmul_n
        ka, kb = jax.random.split(jax.random.key(0))
        a = jax.device_put(jax.random.normal(ka, (n, n), jnp.bfloat16), d)
        b = jax.device_put(jax.random.normal(kb, (n, n), jnp.bfloat16), d)
        mm = jax.jit(jnp.matmul)
        a.block_until_ready()
        b.block_until_ready()

        run = _timed(mm, a, b)

        return measure(run, sizes)

    def copy_seconds(self, device: Device, sizes: Sizes) -> tuple[float, list[float]]:
        d = self._dev(device)
        # x + 1 reads and writes every byte once: a device-to-device copy XLA cannot elide.
        x = jax.device_put(np.zeros(sizes.copy_mib * 2**20 // 4, np.float32), d)
        step = jax.jit(lambda v: v + 1.0)
        x.block_until_ready()

        def run(iters: int) -> float:
            t0 = time.perf_counter()
            for _ in range(iters):
                y = step(x)
            y.block_until_ready()
            return time.perf_counter() - t0

        return measure(run, sizes)

    def allreduce(self, devices: Sequence[Device], sizes: Sizes) -> AllReduce:
        mesh = self._mesh(devices)
        world = len(devices)
        numel = sizes.allreduce_mib * 2**20 // 4
        sharding = NamedSharding(mesh, P("i"))
        f = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                                  out_specs=P("i")))
        ranks = np.repeat(np.arange(1, world + 1, dtype=np.float32)[:, None], numel, axis=1)
        x = jax.device_put(ranks.reshape(world * numel), sharding)
        got = np.asarray(f(x))
        correct = bool(np.all(got == world * (world + 1) / 2))
        samples = []
        for repeat in range(2 + sizes.repeats):
            t0 = time.perf_counter()
            for _ in range(ALLREDUCE_ITERS):
                y = f(x)
            y.block_until_ready()
            if repeat >= 2:
                samples.append((time.perf_counter() - t0) / ALLREDUCE_ITERS)
        seconds = float(np.median(samples))
        bus, alg = busbw(numel * 4, seconds, world)
        return AllReduce(busbw_gbps=bus, algbw_gbps=alg, seconds=seconds,
                         bytes_per_device=numel * 4, correct=correct,
                         details={"backend": "jax psum (shard_map)", "world": world,
                                  "iters": ALLREDUCE_ITERS, "samples_s": samples})

    def sustain(self, devices: Sequence[Device], sizes: Sizes,
                window_s: float) -> dict[str, SustainedLoad]:
        """Every device loaded at once by ONE jitted program: a batch of products, one per
        device, sharded over the local devices, run in timed chunks until `window_s` has
        passed. The devices run in lockstep, so each gets the same figure: the slowest one's."""
        mesh = self._mesh(devices)
        sharding = NamedSharding(mesh, P("i"))
        k, n = len(devices), sizes.matmul_n
        ka, kb = jax.random.split(jax.random.key(1))
        a = jax.device_put(jax.random.normal(ka, (k, n, n), jnp.bfloat16), sharding)
        b = jax.device_put(jax.random.normal(kb, (k, n, n), jnp.bfloat16), sharding)
        mm = jax.jit(lambda x, y: jnp.einsum("bij,bjk->bik", x, y), out_shardings=sharding)

        run = _timed(mm, a, b)

        run(1)  # compilation
        per_chunk = chunk_iters(run(1), window_s)
        chunks: list[tuple[int, float]] = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < window_s:
            chunks.append((per_chunk, run(per_chunk)))
        load = SustainedLoad(flops_per_iter=2.0 * n**3, chunks=tuple(chunks),
                             span=(t0, time.perf_counter()))
        return {d.id: load for d in devices}


def _timed(mm: Callable[[Any, Any], Any], a: Any, b: Any) -> Callable[[int], float]:
    """`run(iters)`: wall seconds for `iters` calls of the jitted `mm(a, b)`, the last result
    waited for (JAX dispatches asynchronously)."""
    def run(iters: int) -> float:
        t0 = time.perf_counter()
        c = None
        for _ in range(iters):
            c = mm(a, b)
        if c is not None:
            c.block_until_ready()
        return time.perf_counter() - t0

    return run
