"""The probes for real on this CPU, with PyTorch and with JAX, at tiny sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from smoke import Verdict, run_local
from smoke.probes.backend import Sizes

TINY = Sizes(matmul_n=128, known_n=64, copy_mib=4, allreduce_mib=1, repeats=3,
             target_repeat_s=0.005)


def test_torch_cpu_probes_are_sane() -> None:
    pytest.importorskip("torch")
    report = run_local(backend="torch", tier=3, sizes=TINY)
    assert report.ok and report.backend == "torch" and report.platform == "cpu"
    res = {(r.device, r.probe): r for r in report.results}
    assert res[("cpu0", "known_answer")].measured is not None
    assert res[("cpu0", "known_answer")].measured < 1e-5
    for probe in ("matmul_tflops", "memory_gbps"):
        r = res[("cpu0", probe)]
        assert r.measured is not None and r.measured > 0 and r.verdict is Verdict.PASS
        assert r.details["seconds"] > 0
    assert res[("host", "allreduce_busbw")].verdict is Verdict.SKIPPED


def test_explicit_floor_fails_the_named_device_and_probe() -> None:
    pytest.importorskip("torch")
    report = run_local(backend="torch", tier=2, min_tflops=1e6, sizes=TINY)
    assert [(r.device, r.probe, r.attempts) for r in report.failures] == [
        ("cpu0", "matmul_tflops", 2)]


_JAX_SCRIPT = """
import json
from smoke import run_local
from smoke.probes.backend import Sizes
sizes = Sizes(matmul_n=128, known_n=64, copy_mib=2, allreduce_mib=1, repeats=3,
              target_repeat_s=0.005)
print(json.dumps(run_local(backend="jax", tier=3, sizes=sizes).to_dict()))
"""


def test_jax_cpu_four_devices_agree() -> None:
    pytest.importorskip("jax")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", _JAX_SCRIPT], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    res = {(r["device"], r["probe"]): r for r in doc["results"]}
    devices = [f"cpu{i}" for i in range(4)]
    sums = {res[(d, "known_answer")]["details"]["checksum"] for d in devices}
    assert len(sums) == 1  # every 'device' computed the same seeded product
    assert res[("host", "psum")]["measured"] == 4.0
    assert all(res[(d, "matmul_tflops")]["measured"] > 0 for d in devices)
    assert all(res[(d, "memory_gbps")]["measured"] > 0 for d in devices)
    ar = res[("host", "allreduce_busbw")]
    assert ar["verdict"] == "pass" and ar["measured"] > 0
    assert ar["details"]["world"] == 4
    assert doc["summary"]["fail"] == 0


def test_torch_gloo_allreduce_across_two_processes() -> None:
    pytest.importorskip("torch")
    from smoke.probes._torch_dist import launch

    result = launch(2, backend="gloo", mib=1, timeout_s=120)
    assert result.correct and result.busbw_gbps > 0
    assert result.busbw_gbps == pytest.approx(result.algbw_gbps)  # 2(n-1)/n = 1 for n = 2


def test_importing_smoke_imports_neither_pulumi_nor_backends() -> None:
    code = ("import sys, smoke, smoke.probes.verdict, smoke.reports.text, smoke.probes.runner, "
            "smoke.probes.expect, smoke.probes.results, smoke.probes.backend, "
            "smoke.probes._torch_dist, cli.smoke\n"
            "print(sorted(m for m in ('pulumi', 'torch', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_jax_gpu_memory_is_the_device_not_the_allocators_share() -> None:
    """On the lent H100 (2026-11-27) JAX's bytes_limit was 59.38 GiB where torch saw 79.18 GiB:
    the allocator's default 0.75 share. Read as the device's memory, it failed a healthy GPU's
    inventory (59.4 < 0.85 x 80)."""
    pytest.importorskip("jax")
    from smoke.probes._jax import memory_gib

    limit = int(59.384765625 * 2**30)  # the recorded bytes_limit
    assert memory_gib("gpu", {"bytes_limit": limit}, {}) == pytest.approx(79.18, abs=0.01)
    assert memory_gib("gpu", {"bytes_limit": limit},
                      {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.5"}) == pytest.approx(118.77, 1e-3)
    assert memory_gib("tpu", {"bytes_limit": 2**34}, {}) == 16.0  # a TPU's limit is its HBM
    assert memory_gib("gpu", {}, {}) is None
