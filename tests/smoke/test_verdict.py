"""The verdict engine on recorded GPU-like measurements (no GPU needed)."""

from __future__ import annotations

from smoke.expectations import detect, from_catalog
from smoke.probes.backend import AllReduce, Device, KnownAnswer
from smoke.probes.expect import Expectation
from smoke.probes.results import Verdict
from smoke.probes.verdict import (
    MATMUL,
    MEMORY,
    REGISTRY,
    THRESHOLDS_VERSION,
    judge_allreduce,
    judge_inventory,
    judge_known_answer,
    judge_perf,
    judge_psum,
)


def h100s(n: int) -> list[Device]:
    return [Device(f"cuda{i}", i, "gpu", "NVIDIA H100 80GB HBM3", 79.19) for i in range(n)]


def a3() -> Expectation:
    return from_catalog("a3-highgpu-8g", "torch")


def test_expectation_from_catalog() -> None:
    exp = a3()
    assert exp.devices == 8 and exp.accelerator is not None
    assert exp.accelerator.key == "h100-80gb"
    tpu = from_catalog("tpu7x 2x2x1", "jax")
    assert tpu.devices == 8 and tpu.chips == 4  # 2 JAX devices per tpu7x chip
    assert from_catalog("v5p 2x2x1", "jax").devices == 4
    assert from_catalog("p5.48xlarge", "torch").devices == 8


def test_full_host_passes_inventory() -> None:
    results = judge_inventory(h100s(8), a3())
    assert [r.verdict for r in results] == [Verdict.PASS] * 8


def test_missing_device_fails_t0_by_name() -> None:
    results = judge_inventory(h100s(7), a3())
    failed = [r for r in results if r.verdict is Verdict.FAIL]
    assert [r.device for r in failed] == ["cuda7"]
    assert "missing" in failed[0].reason and "found 7" in failed[0].reason


def test_small_memory_fails_and_odd_name_only_warns() -> None:
    devs = h100s(8)
    devs[3] = Device("cuda3", 3, "gpu", "NVIDIA H100 80GB HBM3", 39.5)
    devs[5] = Device("cuda5", 5, "gpu", "NVIDIA Hopper Renamed", 79.19)
    by = {r.device: r for r in judge_inventory(devs, a3())}
    assert by["cuda3"].verdict is Verdict.FAIL and "39.5 GiB" in by["cuda3"].reason
    assert by["cuda5"].verdict is Verdict.WARN


def test_detect_recognises_devices() -> None:
    exp = detect(h100s(2), "torch")
    assert exp.accelerator is not None and exp.accelerator.key == "h100-80gb"
    a100 = detect([Device("cuda0", 0, "gpu", "NVIDIA A100-SXM4-40GB", 39.4)], "torch")
    assert a100.accelerator is not None and a100.accelerator.key == "a100-40gb"
    assert detect([Device("cpu0", 0, "cpu", "AMD EPYC")], "torch").accelerator is None


def test_slow_device_among_peers_is_flagged() -> None:
    values = {f"cuda{i}": 800.0 + i for i in range(8)}
    values["cuda4"] = 0.8 * 800.0  # 20% slower than its peers, still above the peak floor
    by = {r.device: r for r in judge_perf(MATMUL, values, a3())}
    assert by["cuda4"].verdict is Verdict.FAIL
    assert "outlier" in by["cuda4"].reason
    assert all(r.verdict is Verdict.PASS for d, r in by.items() if d != "cuda4")
    assert by["cuda0"].expected == 989


def test_floor_and_warn_band_from_catalog_peak() -> None:
    exp = a3()
    floor = REGISTRY[("*", MATMUL)].floor_ratio
    assert floor is not None
    low = {"cuda0": floor * 989 * 0.9}
    near = {"cuda0": floor * 989 * 1.02}
    assert judge_perf(MATMUL, low, exp)[0].verdict is Verdict.FAIL
    assert judge_perf(MATMUL, near, exp)[0].verdict is Verdict.WARN


def test_dcgm_memory_floor_applies_to_h100() -> None:
    exp = a3()
    assert judge_perf(MEMORY, {"cuda0": 3000.0}, exp)[0].verdict is Verdict.PASS
    bad = judge_perf(MEMORY, {"cuda0": 1800.0}, exp)[0]
    assert bad.verdict is Verdict.FAIL and "1,905" in bad.reason


def test_unverified_catalog_figures_never_fail() -> None:
    exp = from_catalog("p6-b200.48xlarge", "torch")
    assert exp.accelerator is not None and not exp.accelerator.verified
    r = judge_perf(MATMUL, {"cuda0": 10.0}, exp)[0]
    assert r.verdict is Verdict.WARN and "unverified" in r.reason


def test_cpu_passes_unless_explicit_floor_missed() -> None:
    cpu = Expectation()
    assert judge_perf(MATMUL, {"cpu0": 0.01}, cpu)[0].verdict is Verdict.PASS
    r = judge_perf(MATMUL, {"cpu0": 0.01}, cpu, 1_000_000)[0]
    assert r.verdict is Verdict.FAIL and "--min" in r.reason


def test_known_answer_catches_a_wrong_device() -> None:
    good = KnownAnswer(1e-7, 1234.5)
    answers = {f"cuda{i}": good for i in range(4)}
    answers["cuda2"] = KnownAnswer(1e-7, 1300.0)
    answers["cuda3"] = KnownAnswer(0.2, 1234.5)
    by = {r.device: r for r in judge_known_answer(answers)}
    assert by["cuda0"].verdict is Verdict.PASS
    assert by["cuda2"].verdict is Verdict.FAIL and "checksum" in by["cuda2"].reason
    assert by["cuda3"].verdict is Verdict.FAIL and "wrong answer" in by["cuda3"].reason


def test_psum_must_equal_device_count() -> None:
    assert judge_psum(8.0, 8).verdict is Verdict.PASS
    assert judge_psum(7.0, 8).verdict is Verdict.FAIL


def test_allreduce_on_one_device_is_skipped() -> None:
    r = judge_allreduce(None, 1, a3())
    assert r.verdict is Verdict.SKIPPED
    ok = AllReduce(busbw_gbps=400.0, algbw_gbps=228.6, seconds=0.001, bytes_per_device=2**28,
                   correct=True)
    assert judge_allreduce(ok, 8, a3()).verdict is Verdict.PASS
    wrong = AllReduce(400.0, 228.6, 0.001, 2**28, correct=False)
    assert judge_allreduce(wrong, 8, a3()).verdict is Verdict.FAIL


def test_registry_carries_provenance() -> None:
    assert THRESHOLDS_VERSION
    assert all(th.source for th in REGISTRY.values())


def test_a_tpu7x_device_is_judged_against_its_half_of_the_chip() -> None:
    """JAX shows each TPU7x chip as two devices; the catalog's peaks are per chip, so a device
    doing half the chip's work is at full speed, not at half."""
    exp = from_catalog("tpu7x 2x2x1", "jax")
    acc = exp.accelerator
    assert acc is not None and exp.devices_per_chip == 2
    half = acc.bf16_tflops / 2
    [r] = judge_perf(MATMUL, {"tpu0": 0.9 * half}, exp, platforms={"tpu0": "tpu"})
    assert r.expected == half and r.verdict is Verdict.PASS, r.reason
    [slow] = judge_perf(MATMUL, {"tpu0": 0.3 * half}, exp, platforms={"tpu0": "tpu"})
    assert slow.verdict is not Verdict.PASS
    assert Expectation.from_dict(exp.to_dict()) == exp
    assert detect([Device("tpu0", 0, "tpu", "TPU7x", acc.memory_gib / 2)], "jax"
                  ).devices_per_chip == 2
    h100 = from_catalog("a3-highgpu-8g", "torch")
    assert h100.devices_per_chip == 1
