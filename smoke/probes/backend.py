"""What every backend (PyTorch, JAX) offers the runner, the probe sizes, and the timing rule.

Timing rule: a probe hands `measure` a `run(iters)` that executes the measured work `iters`
times in a tight loop and returns the elapsed seconds, synchronised with the backend's own
mechanism (CUDA events, `block_until_ready`). `measure` warms up (which also picks `iters` so
one repeat lasts long enough to time), then returns the median seconds per iteration over
the repeats. Nothing else (allocation, host copies) happens inside the timed loop.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from fleet import smoke_defaults as SD
from fleet.errors import SetupError

BackendName = Literal["torch", "jax"]
BACKENDS: tuple[BackendName, ...] = ("torch", "jax")
PIP_EXTRA = {"torch": "accelfleet[torch]", "jax": "accelfleet[jax]"}


@dataclass(frozen=True, slots=True)
class Device:
    """One device as the backend sees it."""

    id: str  # "cuda0", "tpu3", "cpu0": how results name it
    index: int
    platform: str  # "gpu", "tpu" or "cpu"
    kind: str  # the backend's own name for it, e.g. "NVIDIA H100 80GB HBM3", "TPU v5"
    memory_gib: float | None = None  # None where the backend cannot tell (CPU)
    pci: str | None = None  # "0000:04:00" (domain:bus:device) where the backend tells it
    # the PCI device ID (vendor 0x10de's product: 0x2330 H100 SXM, 0x2331 H100 PCIe, 0x2321
    # H100 NVL), from sysfs: what tells the parts of one chip apart (catalog pci_device_ids)
    pci_device_id: int | None = None


# Linux sysfs: every PCI function's `vendor`, `device` and `class` (hex), readable in containers
SYSFS_PCI = "/sys/bus/pci/devices"
NVIDIA_VENDOR = 0x10DE
# PCI class codes (base class 0x03 display): 0x0300 VGA (GeForce, RTX PRO), 0x0302 3D
# controller (the data-center GPUs)
GPU_CLASSES = (0x0300, 0x0302)


def _hex_file(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().strip(), 16)
    except (OSError, ValueError):
        return None


def pci_product_id(address: str | None, root: str = SYSFS_PCI) -> int | None:
    """The PCI device ID at `address` (`0000:04:00` or `0000:04:00.0`), from sysfs; None
    where it cannot be read (no sysfs, a VM that hides it)."""
    if not address:
        return None
    full = address if "." in address else f"{address}.0"
    return _hex_file(os.path.join(root, full.lower(), "device"))


def nvidia_gpus_on_pci(root: str = SYSFS_PCI) -> list[tuple[str, int]]:
    """(address, PCI device ID) of every NVIDIA GPU the host's PCI bus shows, whether or not
    a driver or CUDA works: the evidence that a host is a GPU host."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    out = []
    for name in names:
        base = os.path.join(root, name)
        cls = _hex_file(os.path.join(base, "class"))
        if _hex_file(os.path.join(base, "vendor")) == NVIDIA_VENDOR and cls is not None and \
                cls >> 8 in GPU_CLASSES:
            out.append((name, _hex_file(os.path.join(base, "device")) or 0))
    return out


@dataclass(frozen=True, slots=True)
class Sizes:
    """Problem sizes: large enough to saturate an accelerator, small on a CPU."""

    matmul_n: int
    known_n: int
    copy_mib: int
    allreduce_mib: int
    repeats: int
    target_repeat_s: float
    max_iters: int = 1 << 16
    # The sustained all-device window (`--sustain-s` overrides): SD.SUSTAIN_S on an accelerator.
    sustain_s: float = SD.SUSTAIN_S_CPU

    @classmethod
    def for_platform(cls, platform: str) -> Sizes:
        if platform == "cpu":
            # A CPU has no throttle telemetry here and its 'devices' share cores: a short
            # sustained window shows the phase runs, and keeps `smoke local` on a laptop quick.
            return cls(matmul_n=512, known_n=128, copy_mib=32, allreduce_mib=4, repeats=5,
                       target_repeat_s=0.02, sustain_s=SD.SUSTAIN_S_CPU)
        # the sustained window: fleet.smoke_defaults.SUSTAIN_S says why it is that long.
        # 8192^3 bf16 saturates an H100 (about 1.4 ms a product); 1 GiB copies dwarf launch cost.
        # GPU all-reduce: 2 GiB per device, the message nccl-tests' published figures use
        # (smoke.probes.thresholds.BANDWIDTH_BYTES), so our busbw reads against their floors.
        return cls(matmul_n=8192, known_n=1024, copy_mib=1024,
                   allreduce_mib=2048 if platform == "gpu" else 256, repeats=5,
                   target_repeat_s=0.05, sustain_s=SD.SUSTAIN_S)


@dataclass(frozen=True, slots=True)
class KnownAnswer:
    """A seeded float32 product on one device against the float64 reference."""

    max_rel_error: float  # max |C - C_ref| / max |C_ref|
    checksum: float  # float64 sum of the device's product, to compare across devices


@dataclass(frozen=True, slots=True)
class SustainedLoad:
    """One device's share of the sustained phase: every device of the host ran the same bf16
    matmul at once; `chunks` are (iterations, seconds) in order, timed by the device's clock."""

    flops_per_iter: float
    chunks: tuple[tuple[int, float], ...]
    span: tuple[float, float] = (0.0, 0.0)  # time.perf_counter() at the load's start and end

    @property
    def iters(self) -> int:
        return sum(i for i, _ in self.chunks)

    @property
    def seconds(self) -> float:
        return sum(s for _, s in self.chunks)

    def tflops(self, part: slice = slice(None)) -> float | None:
        """TFLOP/s over the chunks in `part` (all by default); None when nothing ran."""
        chunks = self.chunks[part]
        seconds = sum(s for _, s in chunks)
        if seconds <= 0:
            return None
        return self.flops_per_iter * sum(i for i, _ in chunks) / seconds / 1e12


@dataclass(frozen=True, slots=True)
class AllReduce:
    busbw_gbps: float
    algbw_gbps: float
    seconds: float
    bytes_per_device: int
    correct: bool
    details: dict[str, Any] = field(default_factory=dict)


def measure(run: Callable[[int], float], sizes: Sizes) -> tuple[float, list[float]]:
    """Median seconds per iteration of `run`, warm-up excluded; also every repeat's figure."""
    iters = 1
    run(1)  # first call: compilation, allocator warm-up, lazy init
    while True:
        elapsed = run(iters)
        if elapsed >= sizes.target_repeat_s or iters >= sizes.max_iters:
            break
        grow = sizes.target_repeat_s / max(elapsed, 1e-9)
        iters = min(sizes.max_iters, max(iters * 2, int(iters * grow * 1.2) + 1))
    samples = [run(iters) / iters for _ in range(sizes.repeats)]
    return statistics.median(samples), samples


def chunk_iters(one_iter_s: float, window_s: float) -> int:
    """Iterations per timed chunk of the sustained phase: about an eighth of the window, at
    most half a second, so the phase ends close to its window and the figure over time shows."""
    chunk_s = min(0.5, window_s / 8)
    return max(1, int(chunk_s / max(one_iter_s, 1e-9)))


def busbw(bytes_per_device: int, seconds: float, world: int) -> tuple[float, float]:
    """(busbw, algbw) in GB/s by the nccl-tests formula: busbw = algbw x 2(n-1)/n."""
    algbw = bytes_per_device / seconds / 1e9
    return algbw * 2 * (world - 1) / world, algbw


class Backend(Protocol):
    """The probes one backend implements. Sizes come from `Sizes.for_platform`."""

    name: BackendName

    def versions(self) -> dict[str, str]: ...

    def devices(self) -> list[Device]: ...

    def known_answer(self, device: Device, n: int, seed: int) -> KnownAnswer: ...

    def psum(self, devices: Sequence[Device]) -> float | None: ...

    def matmul_seconds(self, device: Device, sizes: Sizes) -> tuple[float, list[float]]: ...

    def copy_seconds(self, device: Device, sizes: Sizes) -> tuple[float, list[float]]: ...

    def allreduce(self, devices: Sequence[Device], sizes: Sizes) -> AllReduce: ...

    def sustain(self, devices: Sequence[Device], sizes: Sizes,
                window_s: float) -> dict[str, SustainedLoad]: ...


def available(name: BackendName) -> bool:
    """Whether a backend's package is installed, without importing it."""
    return importlib.util.find_spec(name) is not None


def choose(name: str, *, tpu: bool = False) -> BackendName:
    """`auto` picks torch when installed, else jax (jax first for a TPU)."""
    if name == "auto":
        for candidate in (("jax", "torch") if tpu else BACKENDS):
            if available(candidate):
                return candidate
        raise SetupError(
            "neither PyTorch nor JAX is installed, so there is nothing to run the probes with",
            hint="pip install 'accelfleet[torch]' (GPU, CPU) or 'accelfleet[jax]' (TPU, GPU, CPU)",
        )
    if name not in BACKENDS:
        raise SetupError(f"unknown backend {name!r}", hint="use --backend torch or jax")
    return name  # type: ignore[return-value]


def load(name: BackendName) -> Backend:
    """Import the backend's package (only now) and return its probes."""
    try:
        if name == "torch":
            from smoke.probes._torch import TorchBackend

            return TorchBackend()
        from smoke.probes._jax import JaxBackend

        return JaxBackend()
    except ImportError as exc:
        raise SetupError(
            f"the {name} backend needs the {name!r} package, which cannot be imported ({exc})",
            hint=f"pip install '{PIP_EXTRA[name]}', or choose the other backend with --backend",
        ) from None
    except Exception as exc:  # e.g. OSError: libcudart.so.12 missing, RuntimeError from a plugin
        raise SetupError(
            f"the {name} backend is installed but failed to load: {type(exc).__name__}: {exc}",
            hint=f"the {name} install does not match this machine's drivers or libraries "
            f"(a missing CUDA library, a CPU/GPU build mix-up): reinstall it as "
            f"'{PIP_EXTRA[name]}' for this machine, or choose the other backend with --backend",
        ) from None
