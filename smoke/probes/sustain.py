"""The sustained phase (T2): every device of the host loaded at once, for a window.

The T2 matmul times each device alone for a fraction of a second, so a host that cannot feed
all its devices at once (power, cooling) or a device that throttles after a few seconds passes.
Here the same bf16 matmul runs on every device concurrently (`Backend.sustain`: a thread and
stream per GPU with PyTorch, one jitted program over all local devices with JAX) for `window_s`
(default 20 s on an accelerator), while a sampler reads each GPU's SM clock, temperature, power
and clock-event ("throttle") reasons (`smoke.probes._telemetry`: nvidia-ml-py where the image
has it, else nvidia-smi; with neither, the result says "not sampled" and why).

Judged per device (`judge_sustained`): the sustained TFLOP/s against the same device's burst
figure from the T2 matmul (`verdict.REGISTRY[("*", SUSTAINED)]`), and the throttle reasons seen
while loaded: a hardware slowdown, power brake or thermal slowdown fails; a clock held by a
setting warns; the SW power cap (a GPU at its power limit under a full load) and idle are
normal. Node-side code: the standard library and the smoke package only.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from fleet.words import all_of
from smoke.probes import verdict as V
from smoke.probes._telemetry import THROTTLE_REASONS, DeviceTelemetry, open_telemetry
from smoke.probes.backend import Backend, Device, Sizes, SustainedLoad
from smoke.probes.expect import Expectation
from smoke.probes.results import ProbeResult, Verdict


def run_sustained(be: Backend, devices: Sequence[Device], sizes: Sizes, window_s: float,
                  exp: Expectation, burst: Mapping[str, float],
                  nvml: ModuleType | None = None, smi: str | None = None) -> list[ProbeResult]:
    """Load every device at once for `window_s`, sample the GPUs meanwhile, judge each.
    `nvml` (a `pynvml` stand-in) and `smi` (an nvidia-smi path) are for tests."""
    sampler, not_sampled = open_telemetry(devices, min(0.5, max(0.05, window_s / 20)), nvml,
                                          smi)
    if sampler is not None:
        sampler.start()
    started = time.perf_counter()
    try:
        loads = be.sustain(devices, sizes, window_s)
    except Exception as exc:
        if sampler is not None:
            sampler.stop()
        return [ProbeResult(d.id, V.SUSTAINED, V.TIERS[V.SUSTAINED], Verdict.FAIL,
                            f"probe error under load of {all_of(len(devices), 'device')}: "
                            f"{type(exc).__name__}: {exc}", unit=V.UNITS[V.SUSTAINED])
                for d in devices]
    wall_s = time.perf_counter() - started
    telemetry = sampler.stop() if sampler is not None else {}
    mapping = f"{sampler.via}, by {sampler.mapping}" if sampler is not None else None
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
        loaded = f"all {len(loads)} devices" if len(loads) > 1 else "its one device"
        text = f"{value:,.3g} {unit} with {loaded} loaded for {window_s:g} s"
        checks: list[tuple[Verdict, str]] = [(Verdict.PASS, text)]
        b = burst.get(dev)
        floor = None
        if b and b > 0:
            details |= {"burst_tflops": b, "ratio_to_burst": value / b}
            checks[0] = (Verdict.PASS, f"{text} = {value / b:.2f} of its burst {b:,.3g}")
            if th.floor_ratio is not None:
                floor = th.floor_ratio * b
                checks += burst_checks(value, b, th)
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
        verdict, reason = V.worst_check(checks)
        out.append(ProbeResult(dev, V.SUSTAINED, V.TIERS[V.SUSTAINED], verdict, reason, value,
                               peak if ours else None, unit, details=details))
    return out


def burst_checks(value: float, burst: float, th: V.Threshold) -> list[tuple[Verdict, str]]:
    """The sustained figure `value` against the device's own `burst` figure: below
    `th.floor_ratio` fails (warns where not enforced), within the warning band warns. The
    agent and the launcher (smoke.cluster._rejudge) judge by this one rule."""
    if th.floor_ratio is None or not burst > 0:  # no rule, or no burst figure (NaN too)
        return []
    unit, ratio, floor = V.UNITS[V.SUSTAINED], value / burst, th.floor_ratio * burst
    if value < floor:
        return [(Verdict.FAIL if th.enforced else Verdict.WARN,
                 f"sustained {value:,.3g} {unit} is {ratio:.2f} of its burst {burst:,.3g} "
                 f"(< {th.floor_ratio:g}): the device slows down when the whole host is loaded")]
    if value < floor * th.warn_band:
        return [(Verdict.WARN, f"sustained {ratio:.2f} of its burst {burst:,.3g} "
                 f"(< {th.floor_ratio * th.warn_band:.2f})")]
    return []


def _throttle_checks(t: DeviceTelemetry) -> list[tuple[Verdict, str]]:
    seen = t.reasons_seen()
    out: list[tuple[Verdict, str]] = []
    for _, name, verdict in THROTTLE_REASONS:
        if name in seen and verdict is not Verdict.PASS:
            what = "throttled" if verdict is Verdict.FAIL else "clocks held"
            out.append((verdict, f"{what}: {name} active in {seen[name]} of {len(t.reasons)} "
                        "samples under load"))
    if t.sm_mhz and t.sm_max_mhz:  # the median: the first samples may catch the ramp-up
        out.append((Verdict.PASS, f"SM clock median {statistics.median(t.sm_mhz):.0f} of max "
                    f"{t.sm_max_mhz} MHz"))
    return out
