"""T0's passive GPU health signals (issue 37): ECC, remapped rows, retired pages, Xid events and
clock event reasons read through NVML (a stand-in answering from values recorded on real GPUs,
tests/smoke/fake_nvml.py) and judged by DCGM's health-watch rules (smoke.probes.gpu_health)."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoke.probes import gpu_health as H
from smoke.probes.names import GPU_HEALTH
from smoke.probes.results import ProbeResult, Verdict
from tests.smoke.fake_nvml import FakeGpu, FakeNvml, gpu_from_smi_q

DATA = Path(__file__).parent / "data"
H100 = (DATA / "nvidia-smi-q-h100.txt").read_text(encoding="utf-8")


def _judge(*gpus: FakeGpu, without: tuple[str, ...] = ()) -> list[ProbeResult]:
    read, why = H.read_all(FakeNvml(list(gpus), without=without))
    return H.judge(read, why)


def test_a_healthy_h100_passes_and_says_what_nvml_lacked() -> None:
    # the recorded H100 (driver 535): ECC 0, rows 0, no remap pending, idle; "Retired Pages:
    # N/A" (page retirement is Volta's; A100 and later remap rows instead)
    gpu = gpu_from_smi_q(H100)
    assert gpu.rows == (0, 0, 0, 0) and gpu.retired is None and gpu.reasons == 0x1
    (r,) = _judge(gpu)
    assert r.probe == GPU_HEALTH and r.tier == 0 and r.verdict is Verdict.PASS
    assert "not on this GPU: retired_pages" in r.reason
    assert r.details["signals"]["ecc_dbe_volatile"] == 0
    assert "retired_pages" in r.details["signals"]["skipped"]


def test_a_pending_row_remap_warns_naming_it() -> None:
    # leptonai/gpud#80: 4 rows remapped for uncorrectable errors, pending a reset
    gpu = gpu_from_smi_q((DATA / "gpu_health" / "nvidia-smi-q-remap-pending-gpud-80.txt")
                         .read_text(encoding="utf-8"))
    assert gpu.rows == (0, 4, 1, 0)
    (r,) = _judge(gpu)
    assert r.verdict is Verdict.WARN
    assert r.reason.startswith("yes: a row remapping waits for a GPU reset")
    assert r.details["rules"] == ["row_remap_pending"]


def test_a_volatile_double_bit_error_fails_that_gpu_only() -> None:
    # NVIDIA/k8s-device-plugin#267: "GPU 1 has 1 Volatile Uncorr. ECC" (the plugin kept it)
    healthy = gpu_from_smi_q(H100)
    bad = gpu_from_smi_q(H100)
    assert bad.ecc is not None
    bad.ecc[(1, 0)] = 1
    r0, r1 = _judge(healthy, bad)
    assert r0.verdict is Verdict.PASS
    assert r1.verdict is Verdict.FAIL and r1.device == "gpu1"
    assert r1.reason == "1 uncorrectable (double-bit) ECC errors since the driver loaded"


@pytest.mark.parametrize(("gpu", "verdict", "rule"), [
    # DCGM MonitorMem's limits, each side of the edge
    (FakeGpu(rows=(0, 511, 0, 0)), Verdict.PASS, None),
    (FakeGpu(rows=(0, 512, 0, 0)), Verdict.WARN, "row_remap_uncorrectable"),
    (FakeGpu(rows=(3, 8, 0, 1)), Verdict.FAIL, "row_remap_failure"),
    (FakeGpu(retired={0: 40, 1: 22}, retired_pending=0), Verdict.WARN, "retired_pages_dbe"),
    (FakeGpu(retired={0: 53, 1: 10}, retired_pending=0), Verdict.FAIL, "retired_pages_total"),
    (FakeGpu(retired={0: 2, 1: 0}, retired_pending=1), Verdict.WARN, "retired_pages_pending"),
    (FakeGpu(ecc={(1, 0): 0, (1, 1): 2}), Verdict.WARN, "ecc_dbe_aggregate"),
    (FakeGpu(ecc={(0, 0): 10_000, (1, 0): 0}), Verdict.PASS, None),  # SBE: recorded only
    (FakeGpu(reasons=0x8), Verdict.FAIL, "throttle"),  # HW slowdown at idle
    (FakeGpu(reasons=0x4 | 0x1), Verdict.PASS, None),  # SW power cap, idle
    (FakeGpu(rows=(0, 0, 0, 0), xids=[79]), Verdict.FAIL, "xid_critical"),  # fell off the bus
    (FakeGpu(rows=(0, 0, 0, 0), xids=[43]), Verdict.WARN, "xid_other"),
])
def test_each_signal_is_judged_by_its_dcgm_rule(gpu: FakeGpu, verdict: Verdict,
                                                rule: str | None) -> None:
    (r,) = _judge(gpu)
    assert r.verdict is verdict, r.reason
    assert r.details["rules"] == ([rule] if rule else [])


def test_what_nvml_lacks_is_skipped_never_healthy() -> None:
    # an older nvidia-ml-py: no remapped rows, no clock *event* reasons (the throttle name
    # answers), no event set
    gpu = FakeGpu(ecc={(0, 0): 0, (1, 0): 0}, reasons=0x40)
    (r,) = _judge(gpu, without=("nvmlDeviceGetRemappedRows",
                                "nvmlDeviceGetCurrentClocksEventReasons", "nvmlEventSetWait_v2"))
    assert r.verdict is Verdict.FAIL and "HW thermal slowdown" in r.reason
    skipped = r.details["signals"]["skipped"]
    assert skipped["row_remap"] == "this nvidia-ml-py has no nvmlDeviceGetRemappedRows"
    assert "nvmlEventSetWait_v2" in skipped["xid"]
    # a GPU that answers nothing is skipped, and so is a host without NVML
    (none,) = _judge(FakeGpu(), without=("nvmlEventSetWait_v2",))
    assert none.verdict is Verdict.SKIPPED and "NVML answered no health signal" in none.reason
    (host,) = H.judge([], "pynvml (nvidia-ml-py) not installed")
    assert host.verdict is Verdict.SKIPPED and "not installed" in host.reason


def test_every_rule_names_its_source_and_day() -> None:
    for rule in H.RULES:
        assert rule.source and rule.as_of == "2026-11-28", rule.signal
    assert {"ecc_dbe_volatile", "row_remap_failure", "retired_pages_total", "nvlink_replay",
            "nvlink_recovery", "nvlink_crc", "xid_critical", "throttle"} <= set(H.RULE)


def test_t0_runs_them_on_a_gpu_host_naming_each_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from smoke.probes import runner
    from smoke.probes.backend import Device

    bad = gpu_from_smi_q(H100)
    bad.rows = (0, 4, 1, 0)
    fake = FakeNvml([gpu_from_smi_q(H100), bad])
    real = H.read_all
    monkeypatch.setattr(H, "read_all", lambda nvml=None: real(fake))
    devices = [Device(id=f"cuda{i}", index=i, platform="gpu", kind="NVIDIA H100 80GB HBM3",
                      memory_gib=79.6) for i in range(2)]
    r0, r1 = runner._gpu_health(devices)
    assert (r0.device, r0.verdict) == ("cuda0", Verdict.PASS)
    assert (r1.device, r1.verdict) == ("cuda1", Verdict.WARN)
