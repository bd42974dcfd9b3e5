"""Run the probes of tiers 0..N on this host's devices and judge them."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Protocol

from fleet import smoke_defaults as SD
from fleet.words import all_of
from smoke.probes import verdict as V
from smoke.probes.backend import Backend, Device, KnownAnswer, Sizes, choose, load
from smoke.probes.expect import Expectation, Resolver
from smoke.probes.results import HostReport, ProbeResult, Verdict

SEED = 20261122
MAX_SUSTAIN_S = SD.MAX_SUSTAIN_S  # a longer soak is a burn-in (T4), not a smoke test


class Progress(Protocol):
    """Told how many steps there are, then each step as it starts."""

    def start(self, total: int) -> None: ...

    def step(self, description: str) -> None: ...


class _Silent:
    def start(self, total: int) -> None:
        pass

    def step(self, description: str) -> None:
        pass


def host_name() -> str:
    """The Kubernetes node name when the launcher passes it (NODE_NAME), else the hostname."""
    return os.environ.get("NODE_NAME") or socket.gethostname()


def _error(device: str, probe: str, exc: Exception) -> ProbeResult:
    return ProbeResult(device, probe, V.TIERS[probe], Verdict.FAIL,
                       f"probe error: {type(exc).__name__}: {exc}", unit=V.UNITS[probe])


def run_local(
    *,
    backend: str = "auto",
    tier: int = SD.LOCAL_TIER,
    expect: str | None = None,
    min_tflops: float | None = None,
    min_gbps: float | None = None,
    progress: Progress | None = None,
    sizes: Sizes | None = None,
    expectation: Expectation | None = None,
    sustain_s: float | None = None,
    resolver: Resolver | None = None,
) -> HostReport:
    """Run tiers 0..`tier` on this machine with `backend` and return the judged report.

    `expect` names what the host should be (catalog words, resolved by `resolver`:
    `smoke.run_local` passes the catalog's); the in-pod agent passes a ready `expectation`
    instead and no resolver, so it never loads the catalog. Bad input (an unknown `expect`, a
    missing backend package) raises before any probe runs.
    """
    if expect is not None and not expect.strip():
        from fleet.errors import InputError

        raise InputError("--expect is empty", hint="name what this host should be (e.g. "
                         "a3-highgpu-8g, p5.48xlarge, 'v5p 2x2x1'), or leave --expect out to "
                         "judge the devices found")
    if sustain_s is not None and not 0 <= sustain_s <= MAX_SUSTAIN_S:
        from fleet.errors import InputError

        raise InputError(f"--sustain-s {sustain_s:g} is not between 0 and {MAX_SUSTAIN_S}",
                         hint="give the sustained phase's window in seconds (default "
                         f"{SD.SUSTAIN_S:g} on an accelerator), or 0 to skip it")
    started = time.perf_counter()
    when = datetime.now(UTC).isoformat(timespec="seconds")
    if expect and resolver is None:
        from fleet.errors import InputError

        raise InputError(f"--expect {expect!r} needs the catalog, which this runner was not "
                         "given", hint="call smoke.run_local (it resolves names through the "
                         "catalog), or pass a ready expectation")
    tpu = expectation.platform == "tpu" if expectation else \
        bool(expect) and resolver is not None and resolver.is_tpu(expect or "")
    name = choose(backend, tpu=tpu)
    exp = expectation if expectation and expectation.accelerator else (
        resolver.from_catalog(expect, name) if expect and resolver else None)
    be = load(name)
    prog = progress or _Silent()
    devices = be.devices()
    exp = exp or (resolver.detect(devices, name) if resolver else expectation or Expectation())
    sizes = sizes or Sizes.for_platform(devices[0].platform if devices else "cpu")
    platforms = {d.id: d.platform for d in devices}
    n = len(devices)
    window_s = sizes.sustain_s if sustain_s is None else sustain_s
    sustain = tier >= 2 and window_s > 0 and n > 0
    gpu = bool(devices) and devices[0].platform == "gpu"
    p2p = tier >= 3 and gpu and hasattr(be, "pair_copy_gbps")
    total = 1 + (n + 1 if tier >= 1 else 0) + (2 * n if tier >= 2 else 0) + sustain + (tier >= 3)
    prog.start(total + p2p)

    prog.step("T0 inventory")
    results = V.judge_inventory(devices, exp)
    if not gpu and (not devices or devices[0].platform == "cpu"):
        results += _gpus_unused(name)
    if not devices or devices[0].platform != "tpu":  # NVLink: GPUs; skipped on a CPU host
        results += _nvlink(gpu, exp, n)
    if gpu:  # ECC, remapped rows, retired pages, Xid, clock events: NVML's own counts
        results += _gpu_health(devices, exp)
    if tier >= 1:
        results += _tier1(be, devices, sizes, prog)
    if tier >= 2:
        for probe, fn, floor in ((V.MATMUL, _tflops, min_tflops), (V.MEMORY, _gbps, min_gbps)):
            results += _tier2(be, devices, sizes, exp, probe, fn, floor, platforms, prog)
    if sustain:
        from smoke.probes.sustain import run_sustained

        prog.step(f"T2 sustained: {all_of(n, 'device')} at once for {window_s:g} s")
        burst = {r.device: r.measured for r in results
                 if r.probe == V.MATMUL and r.measured is not None}
        results += run_sustained(be, devices, sizes, window_s, exp, burst)
    if tier >= 3:
        prog.step("T3 all-reduce")
        if n < 2:
            results.append(V.judge_allreduce(None, n, exp))
        else:
            try:
                results.append(V.judge_allreduce(be.allreduce(devices, sizes), n, exp))
            except Exception as exc:
                results.append(_error(V.HOST, V.ALLREDUCE, exc))
    if p2p:
        prog.step("T3 GPU pairs")
        results += _pairs(be, devices, exp)
    return HostReport(
        host=host_name(), backend=name,
        platform=devices[0].platform if devices else "none", versions=be.versions(),
        tier=tier, results=tuple(results), expect=expect or (exp.words if exp else None),
        accelerator=exp.accelerator.key if exp.accelerator else None,
        thresholds_version=V.THRESHOLDS_VERSION, started_at=when,
        duration_s=round(time.perf_counter() - started, 3),
    )


def _nvlink(gpu: bool, exp: Expectation, gpus_seen: int) -> list[ProbeResult]:
    """T0: every NVLink of every GPU up (smoke.probes.nvlink); skipped off a GPU host and on
    a host of one GPU (nvlink.ONE_GPU)."""
    from smoke.probes import nvlink

    if not gpu:
        return nvlink.judge_links([], None, skipped="no NVML: not a GPU host")
    if gpus_seen == 1:
        return nvlink.judge_links([], None, skipped=nvlink.ONE_GPU)
    expected = exp.accelerator.nvlinks if exp.accelerator is not None else None
    if expected == 0:
        return nvlink.judge_links([], 0)
    try:
        gpus, why = nvlink.read_links()
    except Exception as exc:
        return [_error(V.HOST, V.NVLINK, exc)]
    return nvlink.judge_links(gpus, expected, skipped=why)


def _gpus_unused(backend: str, pci_root: str | None = None) -> list[ProbeResult]:
    """A host whose PCI bus shows NVIDIA GPUs while the backend runs on the CPU (the driver
    not loaded, a torch without CUDA, the container not given the devices) fails: a CPU run
    there proves nothing about its GPUs, and it used to pass as "torch on cpu"."""
    from smoke.probes.backend import SYSFS_PCI, nvidia_gpus_on_pci

    gpus = nvidia_gpus_on_pci(pci_root or SYSFS_PCI)
    if not gpus:
        return []
    shown = ", ".join(f"{a} (10de:{d:04x})" for a, d in gpus[:4]) + (
        f" and {len(gpus) - 4} more" if len(gpus) > 4 else "")
    return [ProbeResult(V.HOST, V.INVENTORY, V.T0, Verdict.FAIL,
                        f"{len(gpus)} NVIDIA GPU(s) on this host's PCI bus ({shown}) but the "
                        f"{backend} backend sees none (CUDA unusable: no driver, a CPU-only "
                        "build, or the devices not given to this container), so the probes "
                        "would test the CPU", details={"pci_gpus": [a for a, _ in gpus]})]


def _gpu_health(devices: Sequence[Device], exp: Expectation | None = None
                ) -> list[ProbeResult]:
    """T0: every GPU's passive health signals (smoke.probes.gpu_health). NVML numbers GPUs in
    PCI bus order, as CUDA does on a node of one GPU model (its "fastest first" ties break by
    bus): where the counts agree each result carries the backend's device name, else
    `gpu<NVML index>`; the NVML index is in the details either way."""
    from smoke.probes import gpu_health

    try:
        gpus, why = gpu_health.read_all()
    except Exception as exc:
        return [_error(V.HOST, V.GPU_HEALTH, exc)]
    names = {i: d.id for i, d in enumerate(devices)} if len(gpus) == len(devices) else None
    return gpu_health.judge(gpus, why, names, _lacks(exp))


def _lacks(exp: Expectation | None) -> dict[str, str]:
    """The health signal groups the expected GPU part does not keep (its catalog record's
    `health_signals`, handed to the pod with the expectation); none when the part is unknown
    (judged whole then)."""
    from smoke.probes import gpu_health

    if exp is None or exp.accelerator is None:
        return {}
    return gpu_health.lacks_of(exp.accelerator.key, exp.accelerator.health_signals)


def _pairs(be: Backend, devices: Sequence[Device], exp: Expectation) -> list[ProbeResult]:
    """T3: every GPU pair's copy bandwidth against the SKU's floor and the node's own pairs."""
    from smoke.probes import nvlink

    if len(devices) < 2:
        return nvlink.judge_p2p({}, None)
    key = exp.accelerator.key if exp.accelerator is not None else None
    measure_pairs = be.pair_copy_gbps  # type: ignore[attr-defined]  # the torch backend's
    try:
        figures = measure_pairs(devices, nvlink.P2P_BYTES, nvlink.P2P_REPEATS)
    except Exception as exc:
        return [_error(V.HOST, V.P2P, exc)]
    return nvlink.judge_p2p(figures, V.threshold(key, V.P2P, exp.machine),
                            nbytes=nvlink.P2P_BYTES)


def _tier1(be: Backend, devices: Sequence[Device], sizes: Sizes,
           prog: Progress) -> list[ProbeResult]:
    answers: dict[str, KnownAnswer] = {}
    errors = []
    for d in devices:
        prog.step(f"T1 known answer {d.id}")
        try:
            answers[d.id] = be.known_answer(d, sizes.known_n, SEED)
        except Exception as exc:
            errors.append(_error(d.id, V.KNOWN_ANSWER, exc))
    out = V.judge_known_answer(answers) + errors
    prog.step("T1 psum")
    try:
        value = be.psum(devices)
    except Exception as exc:
        return [*out, _error(V.HOST, V.PSUM, exc)]
    if value is not None:
        out.append(V.judge_psum(value, len(devices)))
    return out


def _tflops(be: Backend, d: Device, sizes: Sizes) -> tuple[float, dict[str, object]]:
    seconds, samples = be.matmul_seconds(d, sizes)
    n = sizes.matmul_n
    return 2 * n**3 / seconds / 1e12, {"n": n, "dtype": "bfloat16", "seconds": seconds,
                                       "samples_s": samples}


def _gbps(be: Backend, d: Device, sizes: Sizes) -> tuple[float, dict[str, object]]:
    seconds, samples = be.copy_seconds(d, sizes)
    nbytes = sizes.copy_mib * 2**20
    return 2 * nbytes / seconds / 1e9, {"bytes_copied": nbytes, "counts": "read + write",
                                        "seconds": seconds, "samples_s": samples}


Measure = Callable[[Backend, Device, Sizes], tuple[float, dict[str, object]]]


def _tier2(be: Backend, devices: Sequence[Device], sizes: Sizes, exp: Expectation, probe: str,
           fn: Measure, floor: float | None, platforms: dict[str, str],
           prog: Progress) -> list[ProbeResult]:
    values: dict[str, float] = {}
    details: dict[str, dict[str, object]] = {}
    errors = []
    for d in devices:
        prog.step(f"T2 {probe} {d.id}")
        try:
            values[d.id], details[d.id] = fn(be, d, sizes)
        except Exception as exc:
            errors.append(_error(d.id, probe, exc))
    judged = V.judge_perf(probe, values, exp, floor, platforms=platforms)
    failed = [r.device for r in judged if r.verdict is Verdict.FAIL]
    if failed:  # one retry before a fail: measure again, judge with the new figures
        by_id = {d.id: d for d in devices}
        for dev in failed:
            try:
                values[dev], details[dev] = fn(be, by_id[dev], sizes)
            except Exception as exc:
                errors.append(_error(dev, probe, exc))
                del values[dev]
        judged = V.judge_perf(probe, values, exp, floor, platforms=platforms,
                              attempts={dev: 2 for dev in failed})
    return [_with_details(r, details.get(r.device, {})) for r in judged] + errors


def _with_details(r: ProbeResult, extra: dict[str, object]) -> ProbeResult:
    from dataclasses import replace

    return replace(r, details={**r.details, **extra})
