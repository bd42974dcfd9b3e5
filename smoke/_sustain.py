"""The sustained phase (T2): every device of the host loaded at once, for a window.

The T2 matmul times each device alone for a fraction of a second, so a host that cannot feed
all its devices at once (power, cooling) or a device that throttles after a few seconds passes.
Here the same bf16 matmul runs on every device concurrently (`Backend.sustain`: a thread and
stream per GPU with PyTorch, one jitted program over all local devices with JAX) for `window_s`
(default 20 s on an accelerator), while a sampler reads each GPU's SM clock, temperature, power
and clock-event ("throttle") reasons through NVML (nvidia-ml-py's `pynvml`, imported only here
and optional: without it the result says "not sampled" and why).

Judged per device (`judge_sustained`): the sustained TFLOP/s against the same device's burst
figure from the T2 matmul (`verdict.REGISTRY[("*", SUSTAINED)]`), and the throttle reasons seen
while loaded: a hardware slowdown, power brake or thermal slowdown fails; a clock held by a
setting warns; the SW power cap (a GPU at its power limit under a full load) and idle are
normal. Node-side code: the standard library and the smoke package only.
"""

from __future__ import annotations

import importlib
import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from smoke import verdict as V
from smoke._backend import Backend, Device, Sizes, SustainedLoad
from smoke._expect import Expectation
from smoke._results import ProbeResult, Verdict

# NVML's clock event reasons (nvidia-ml-py `nvmlClocksEventReason*`, the same bits as the older
# `nvmlClocksThrottleReason*`): bit -> (name as `nvidia-smi -q` prints it, verdict when seen
# under load). Judged as Azure's node health check does (Azure/azurehpc-health-checks@6f50b1f
# customTests/azure_gpu_clock_throttling.nhc: any active reason but idle and SW power cap is
# flagged); the hardware and thermal ones fail here, the settings only warn.
THROTTLE_REASONS: tuple[tuple[int, str, Verdict], ...] = (
    (0x0001, "GPU idle", Verdict.PASS),
    (0x0002, "applications clocks setting", Verdict.WARN),
    (0x0004, "SW power cap", Verdict.PASS),
    (0x0008, "HW slowdown", Verdict.FAIL),
    (0x0010, "sync boost", Verdict.WARN),
    (0x0020, "SW thermal slowdown", Verdict.FAIL),
    (0x0040, "HW thermal slowdown", Verdict.FAIL),
    (0x0080, "HW power brake slowdown", Verdict.FAIL),
    (0x0100, "display clock setting", Verdict.WARN),
)
NVML_CLOCK_SM = 1  # nvmlClockType_t NVML_CLOCK_SM
NVML_TEMPERATURE_GPU = 0  # nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU


def reason_names(mask: int) -> list[str]:
    return [name for bit, name, _ in THROTTLE_REASONS if mask & bit]


@dataclass
class DeviceTelemetry:
    """What NVML said about one GPU while the host was loaded."""

    nvml_index: int
    sm_mhz: list[int] = field(default_factory=list)
    temp_c: list[int] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)
    reasons: list[int] = field(default_factory=list)
    sm_max_mhz: int | None = None
    power_limit_w: float | None = None
    unreadable: dict[str, str] = field(default_factory=dict)  # metric -> NVML's error

    @property
    def samples(self) -> int:
        return max(len(self.sm_mhz), len(self.temp_c), len(self.power_w), len(self.reasons))

    def reasons_seen(self) -> dict[str, int]:
        """Reason name -> in how many samples it was active."""
        out: dict[str, int] = {}
        for mask in self.reasons:
            for name in reason_names(mask):
                out[name] = out.get(name, 0) + 1
        return out

    def summary(self) -> dict[str, Any]:
        def stats(values: Sequence[float]) -> dict[str, float] | None:
            if not values:
                return None
            return {"min": min(values), "median": statistics.median(values), "max": max(values)}

        return {"nvml_index": self.nvml_index, "samples": self.samples,
                "sm_mhz": stats(self.sm_mhz), "sm_max_mhz": self.sm_max_mhz,
                "temp_c": stats(self.temp_c), "power_w": stats(self.power_w),
                "power_limit_w": self.power_limit_w, "reasons_seen": self.reasons_seen(),
                "unreadable": dict(self.unreadable)}


class NvmlSampler:
    """Reads every mapped GPU's SM clock, temperature, power and clock event reasons every
    `interval_s` in a thread of its own, from `start()` until `stop()`."""

    def __init__(self, nvml: ModuleType, handles: Mapping[str, tuple[int, Any]], mapping: str,
                 interval_s: float) -> None:
        self._nvml = nvml
        self._handles = dict(handles)
        self.mapping = mapping
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.data = {dev: DeviceTelemetry(nvml_index=i) for dev, (i, _) in self._handles.items()}
        self._reasons_fn = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                            or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)
        for dev, (_, h) in self._handles.items():
            t = self.data[dev]
            t.sm_max_mhz = self._read(t, "sm_max_mhz", nvml.nvmlDeviceGetMaxClockInfo, h,
                                      NVML_CLOCK_SM)
            limit = self._read(t, "power_limit_w", nvml.nvmlDeviceGetEnforcedPowerLimit, h)
            t.power_limit_w = None if limit is None else limit / 1000.0

    def _read(self, t: DeviceTelemetry, metric: str, fn: Any, *args: Any) -> Any:
        if metric in t.unreadable:
            return None
        try:
            return fn(*args)
        except self._nvml.NVMLError as exc:  # e.g. Not Supported on this GPU: say so once
            t.unreadable[metric] = str(exc) or type(exc).__name__
            return None

    def sample(self) -> None:
        nvml = self._nvml
        for dev, (_, h) in self._handles.items():
            t = self.data[dev]
            for metric, values, fn, args, scale in (
                    ("sm_mhz", t.sm_mhz, nvml.nvmlDeviceGetClockInfo, (h, NVML_CLOCK_SM), None),
                    ("temp_c", t.temp_c, nvml.nvmlDeviceGetTemperature,
                     (h, NVML_TEMPERATURE_GPU), None),
                    ("power_w", t.power_w, nvml.nvmlDeviceGetPowerUsage, (h,), 1000.0),
                    ("reasons", t.reasons, self._reasons_fn, (h,), None)):
                value = self._read(t, metric, fn, *args)
                if value is not None:
                    values.append(value / scale if scale else int(value))

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self._interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, DeviceTelemetry]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()  # one reading at the end of the load, whatever the interval
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass
        return self.data


def _bus(bus_id: object) -> str:
    """NVML's `00000000:04:00.0` (bytes or str) -> `0000:04:00`, as `Device.pci` has it."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    domain, bus, rest = text.strip().lower().split(":")
    return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(rest.split('.')[0], 16):02x}"


def open_telemetry(devices: Sequence[Device], interval_s: float,
                   nvml: ModuleType | None = None) -> tuple[NvmlSampler | None, str]:
    """A sampler for the GPUs among `devices`, or None and why nothing will be sampled.
    `nvml` stands in for the `pynvml` module (tests); by default it is imported here."""
    gpus = [d for d in devices if d.platform == "gpu"]
    if not gpus:
        kinds = ", ".join(sorted({d.platform.upper() for d in devices})) or "no"
        return None, (f"not sampled: {kinds} devices; clocks, power and throttle reasons are "
                      "read through NVML, which only NVIDIA GPUs have")
    if nvml is None:
        try:
            nvml = importlib.import_module("pynvml")  # nvidia-ml-py, optional
        except ImportError:
            return None, ("not sampled: nvidia-ml-py (`pynvml`) is not installed in this "
                          "image; `pip install nvidia-ml-py` to sample SM clocks, temperature, "
                          "power and throttle reasons")
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"not sampled: NVML did not initialise ({type(exc).__name__}: {exc})"
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        by_bus = {_bus(nvml.nvmlDeviceGetPciInfo(h).busId): (i, h)
                  for i, h in enumerate(handles)}
    except Exception as exc:
        _shutdown(nvml)
        return None, f"not sampled: NVML listed no devices ({type(exc).__name__}: {exc})"
    if all(d.pci in by_bus for d in gpus):
        mapped, how = {d.id: by_bus[d.pci] for d in gpus if d.pci}, "pci bus id"
    elif len(handles) == len(gpus):
        mapped, how = {d.id: (d.index, handles[d.index]) for d in gpus}, "index"
    else:
        _shutdown(nvml)
        return None, (f"not sampled: NVML shows {len(handles)} GPUs and the framework "
                      f"{len(gpus)}, and their PCI bus ids do not match")
    return NvmlSampler(nvml, mapped, how, interval_s), ""


def _shutdown(nvml: ModuleType) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass


def run_sustained(be: Backend, devices: Sequence[Device], sizes: Sizes, window_s: float,
                  exp: Expectation, burst: Mapping[str, float],
                  nvml: ModuleType | None = None) -> list[ProbeResult]:
    """Load every device at once for `window_s`, sample the GPUs meanwhile, judge each."""
    sampler, not_sampled = open_telemetry(devices, min(0.5, max(0.05, window_s / 20)), nvml)
    if sampler is not None:
        sampler.start()
    started = time.perf_counter()
    try:
        loads = be.sustain(devices, sizes, window_s)
    except Exception as exc:
        if sampler is not None:
            sampler.stop()
        return [ProbeResult(d.id, V.SUSTAINED, V.TIERS[V.SUSTAINED], Verdict.FAIL,
                            f"probe error under load of all {len(devices)} devices: "
                            f"{type(exc).__name__}: {exc}", unit=V.UNITS[V.SUSTAINED])
                for d in devices]
    wall_s = time.perf_counter() - started
    telemetry = sampler.stop() if sampler is not None else {}
    mapping = sampler.mapping if sampler is not None else None
    return judge_sustained(loads, burst, exp, window_s=window_s, wall_s=wall_s,
                           telemetry=telemetry, not_sampled=not_sampled, mapping=mapping,
                           platforms={d.id: d.platform for d in devices})


def judge_sustained(loads: Mapping[str, SustainedLoad], burst: Mapping[str, float],
                    exp: Expectation, *, window_s: float, wall_s: float | None = None,
                    telemetry: Mapping[str, DeviceTelemetry] | None = None,
                    not_sampled: str = "", mapping: str | None = None,
                    platforms: Mapping[str, str] | None = None) -> list[ProbeResult]:
    """Each device's sustained TFLOP/s against its own burst figure, and its throttle reasons."""
    acc = exp.accelerator
    th = V.threshold(acc.key if acc else None, V.SUSTAINED)
    chip_peak = None if acc is None else acc.bf16_tflops
    peak = None if chip_peak is None else chip_peak / exp.devices_per_chip
    unit = V.UNITS[V.SUSTAINED]
    out = []
    for dev, load in loads.items():
        ours = acc is not None and (platforms is None or platforms.get(dev) == acc.kind)
        value = load.tflops()
        details: dict[str, Any] = {
            "window_s": window_s, "wall_s": wall_s, "devices_loaded": len(loads),
            "iters": load.iters, "seconds": load.seconds, "chunks": len(load.chunks),
            "threshold_source": th.source}
        quarter = max(1, len(load.chunks) // 4)
        details["first_quarter_tflops"] = load.tflops(slice(0, quarter))
        details["last_quarter_tflops"] = load.tflops(slice(-quarter, None))
        if value is None:
            out.append(ProbeResult(dev, V.SUSTAINED, V.TIERS[V.SUSTAINED], Verdict.FAIL,
                                   "no timed chunk completed under load", unit=unit,
                                   details=details))
            continue
        text = f"{value:,.3g} {unit} with all {len(loads)} devices loaded for {window_s:g} s"
        checks: list[tuple[Verdict, str]] = [(Verdict.PASS, text)]
        b = burst.get(dev)
        floor = None
        if b and b > 0:
            details |= {"burst_tflops": b, "ratio_to_burst": value / b}
            checks[0] = (Verdict.PASS, f"{text} = {value / b:.2f} of its burst {b:,.3g}")
            if th.floor_ratio is not None:
                floor = th.floor_ratio * b
                if value < floor:
                    checks.append((Verdict.FAIL if th.enforced else Verdict.WARN,
                                   f"sustained {value:,.3g} {unit} is {value / b:.2f} of its "
                                   f"burst {b:,.3g} (< {th.floor_ratio:g}): the device slows "
                                   "down when the whole host is loaded"))
                elif value < floor * th.warn_band:
                    checks.append((Verdict.WARN, f"sustained {value / b:.2f} of its burst "
                                   f"{b:,.3g} (< {th.floor_ratio * th.warn_band:.2f})"))
        else:
            details["burst_tflops"] = None
            checks.append((Verdict.PASS, "no burst figure to compare with"))
        details["floor"] = floor
        t = (telemetry or {}).get(dev)
        if t is None:
            details["telemetry"] = not_sampled or "not sampled: this device was not mapped " \
                "to an NVML device"
        else:
            details["telemetry"] = t.summary() | {"mapped_by": mapping}
            checks += _throttle_checks(t)
        verdict, reason = V._worst(checks)
        out.append(ProbeResult(dev, V.SUSTAINED, V.TIERS[V.SUSTAINED], verdict, reason, value,
                               peak if ours else None, unit, details=details))
    return out


def _throttle_checks(t: DeviceTelemetry) -> list[tuple[Verdict, str]]:
    seen = t.reasons_seen()
    out: list[tuple[Verdict, str]] = []
    for _, name, verdict in THROTTLE_REASONS:
        if name in seen and verdict is not Verdict.PASS:
            what = "throttled" if verdict is Verdict.FAIL else "clocks held"
            out.append((verdict, f"{what}: {name} active in {seen[name]} of {len(t.reasons)} "
                        "samples under load"))
    if t.sm_mhz and t.sm_max_mhz:
        low = min(t.sm_mhz)
        out.append((Verdict.PASS, f"SM clock {low}-{max(t.sm_mhz)} of max {t.sm_max_mhz} MHz"))
    return out
