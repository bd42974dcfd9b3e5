"""The PyTorch probes (GPU through CUDA, or the CPU). Imported only when chosen."""

from __future__ import annotations

import contextlib
import platform as _platform
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from smoke.probes.backend import (
    AllReduce,
    BackendName,
    Device,
    KnownAnswer,
    Sizes,
    SustainedLoad,
    chunk_iters,
    measure,
    pci_product_id,
)

BARRIER_TIMEOUT_S = 120.0  # every device's thread reaches the start line within this


class TorchBackend:
    name: BackendName = "torch"

    def __init__(self) -> None:
        self._cuda = torch.cuda.is_available()

    def versions(self) -> dict[str, str]:
        out = {"python": _platform.python_version(), "torch": str(torch.__version__)}
        if self._cuda:
            out["cuda"] = str(torch.version.cuda)
            out["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        return out

    def devices(self) -> list[Device]:
        if not self._cuda:
            return [Device(id="cpu0", index=0, platform="cpu", kind=_cpu_name())]
        out = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            pci = _pci(props)
            out.append(Device(id=f"cuda{i}", index=i, platform="gpu", kind=props.name,
                              memory_gib=props.total_memory / 2**30, pci=pci,
                              pci_device_id=pci_product_id(pci)))
        return out

    def _device(self, device: Device) -> torch.device:
        return torch.device("cuda", device.index) if device.platform == "gpu" else torch.device(
            "cpu")

    def known_answer(self, device: Device, n: int, seed: int) -> KnownAnswer:
        gen = torch.Generator().manual_seed(seed)
        a = torch.randn(n, n, generator=gen, dtype=torch.float32)
        b = torch.randn(n, n, generator=gen, dtype=torch.float32)
        ref = a.double() @ b.double()
        dev = self._device(device)
        got = (a.to(dev) @ b.to(dev)).cpu().double()
        err = float((got - ref).abs().max() / ref.abs().max())
        return KnownAnswer(max_rel_error=err, checksum=float(got.sum()))

    def psum(self, devices: Sequence[Device]) -> float | None:
        return None  # PyTorch's collective is the T3 all-reduce, one process per GPU

    def _timer(self, device: Device) -> _Timer:
        return _CudaTimer(device.index) if device.platform == "gpu" else _Timer()

    def _matmul_run(self, device: Device, n: int) -> Callable[[int], float]:
        """`run(iters)`: seconds for `iters` bf16 products n x n on `device`, operands
        allocated once (on the current stream) and nothing but the products timed."""
        dev = self._device(device)
        a = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
        b = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
        c = torch.empty(n, n, dtype=torch.bfloat16, device=dev)
        timer = self._timer(device)
        matmul = torch.matmul

        def run(iters: int) -> float:
            timer.start()
            for _ in range(iters):
                matmul(a, b, out=c)
            return timer.stop()

        return run

    def matmul_seconds(self, device: Device, sizes: Sizes) -> tuple[float, list[float]]:
        with torch.inference_mode():
            return measure(self._matmul_run(device, sizes.matmul_n), sizes)

    def copy_seconds(self, device: Device, sizes: Sizes) -> tuple[float, list[float]]:
        dev = self._device(device)
        src = torch.ones(sizes.copy_mib * 2**20, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        timer = self._timer(device)

        def run(iters: int) -> float:
            timer.start()
            for _ in range(iters):
                dst.copy_(src)
            return timer.stop()

        return measure(run, sizes)

    def allreduce(self, devices: Sequence[Device], sizes: Sizes) -> AllReduce:
        from smoke.probes._torch_dist import launch

        backend = "nccl" if devices[0].platform == "gpu" else "gloo"
        return launch(len(devices), backend=backend, mib=sizes.allreduce_mib)


    def pair_copy_gbps(self, devices: Sequence[Device], nbytes: int,
                 repeats: int) -> dict[tuple[int, int], float]:
        """Copy bandwidth of every ordered GPU pair, as CUDA's p2pBandwidthLatencyTest times
        it: `repeats` copies of `nbytes` from one GPU to the other (torch copies across
        devices on the source's current stream, with peer access enabled), timed with the
        source's CUDA events after one untimed copy."""
        gpus = [d for d in devices if d.platform == "gpu"]
        src = {d.index: torch.ones(nbytes, dtype=torch.uint8, device=self._device(d))
               for d in gpus}
        dst = {d.index: torch.empty(nbytes, dtype=torch.uint8, device=self._device(d))
               for d in gpus}
        out: dict[tuple[int, int], float] = {}
        for a in gpus:
            for b in gpus:
                if a.index == b.index:
                    continue
                dst[b.index].copy_(src[a.index])
                torch.cuda.synchronize(b.index)
                timer = _CudaTimer(a.index)
                timer.start()
                for _ in range(repeats):
                    dst[b.index].copy_(src[a.index])
                seconds = timer.stop()
                torch.cuda.synchronize(b.index)
                out[(a.index, b.index)] = nbytes * repeats / seconds / 1e9
        return out

    def sustain(self, devices: Sequence[Device], sizes: Sizes,
                window_s: float) -> dict[str, SustainedLoad]:
        """Every device loaded at once: a thread per device (its own CUDA device and stream)
        runs the T2 matmul in timed chunks from a common start until `window_s` has passed.
        A device whose thread fails raises its error after the others finish."""
        start = threading.Barrier(len(devices))
        loads: dict[str, SustainedLoad] = {}
        errors: dict[str, BaseException] = {}

        def work(device: Device) -> None:
            try:
                loads[device.id] = self._sustain_one(device, sizes, window_s, start)
            except BaseException as exc:  # reported below, in the caller's thread
                errors[device.id] = exc
                start.abort()

        threads = [threading.Thread(target=work, args=(d,), name=f"sustain-{d.id}", daemon=True)
                   for d in devices]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            dev, exc = next(iter(errors.items()))
            raise RuntimeError(f"{dev}: {type(exc).__name__}: {exc}") from exc
        return loads

    def _sustain_one(self, device: Device, sizes: Sizes, window_s: float,
                     start: threading.Barrier) -> SustainedLoad:
        dev, n = self._device(device), sizes.matmul_n
        gpu = device.platform == "gpu"
        stream = torch.cuda.Stream(device=dev) if gpu else None
        with torch.inference_mode(), (torch.cuda.stream(stream) if stream is not None
                                      else contextlib.nullcontext()):
            run = self._matmul_run(device, n)
            run(1)  # warm-up: kernels chosen, memory allocated
            per_chunk = chunk_iters(run(1), window_s)
            try:
                start.wait(BARRIER_TIMEOUT_S)
            except threading.BrokenBarrierError:
                pass  # another device failed: this one still runs its window, then reports
            chunks: list[tuple[int, float]] = []
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < window_s:
                chunks.append((per_chunk, run(per_chunk)))
        return SustainedLoad(flops_per_iter=2.0 * n**3, chunks=tuple(chunks),
                             span=(t0, time.perf_counter()))


def _pci(props: Any) -> str | None:
    """`domain:bus:device` of a CUDA device, as NVML's bus id begins (hex, lower case)."""
    try:
        domain = int(props.pci_domain_id)
        bus = int(props.pci_bus_id)
        dev = int(props.pci_device_id)
    except (AttributeError, TypeError, ValueError):
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}"


class _Timer:
    """Wall clock; the CPU runs the work synchronously."""

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        return time.perf_counter() - self._t0


class _CudaTimer(_Timer):
    """CUDA events on the device's current stream: the GPU's own clock."""

    def __init__(self, index: int) -> None:
        self._index = index
        with torch.cuda.device(index):
            self._begin = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        with torch.cuda.device(self._index):
            self._begin.record()

    def stop(self) -> float:
        with torch.cuda.device(self._index):
            self._end.record()
        self._end.synchronize()
        return float(self._begin.elapsed_time(self._end)) / 1e3


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or "cpu"
