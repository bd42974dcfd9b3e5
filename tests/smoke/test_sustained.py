"""The sustained phase (issue 19 item 7): every device loaded at once for a window, GPUs
sampled through NVML, the sustained figure judged against the burst one.

Runs for real on this CPU (torch, jax with four host 'devices'); the NVML path runs against a
fake `pynvml` module object with nvidia-ml-py's function names, argument order, units (mW, MHz,
C) and error class, and values from a real H100 (`nvidia-smi -q` in data/nvidia-smi-q-h100.txt:
max SM clock 1980 MHz, power limit 700 W, PCI bus 00000000:04:00.0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from fleet.errors import InputError
from fleet.inventory import Inventory
from smoke import Verdict, run_local
from smoke.cluster.workload import RenderOptions, render_run
from smoke.expectations import from_catalog
from smoke.probes._telemetry import DeviceTelemetry, open_telemetry
from smoke.probes.backend import Device, Sizes, SustainedLoad
from smoke.probes.expect import Expectation
from smoke.probes.sustain import judge_sustained, run_sustained
from smoke.probes.verdict import SUSTAINED, TIERS, UNITS, threshold
from tests.smoke.workload_stack import agent_of, arg_of, inventory, job_of, pod_of

__all__ = ["inventory"]  # a fixture

TINY = Sizes(matmul_n=96, known_n=32, copy_mib=2, allreduce_mib=1, repeats=3,
             target_repeat_s=0.005)
SMI = Path(__file__).parent / "data" / "nvidia-smi-q-h100.txt"


def _smi(field: str, section: str = "") -> str:
    """A value of the recorded H100's `nvidia-smi -q` (the first after `section`)."""
    lines = SMI.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == section) if section else 0
    for line in lines[start:]:
        key, sep, value = line.partition(":")
        if sep and key.strip() == field:
            return value.strip()
    raise KeyError(field)


def _h100() -> Expectation:
    return from_catalog("a3-highgpu-8g", "torch")


def _load(tflops: float, chunks: int = 8, iters: int = 100) -> SustainedLoad:
    """A device's load at a steady `tflops` (8192^3 bf16 products)."""
    flops = 2.0 * 8192**3
    return SustainedLoad(flops, ((iters, iters * flops / (tflops * 1e12)),) * chunks)


# -- the registry ----------------------------------------------------------------------------
def test_probe_is_registered_with_its_unit_tier_and_threshold() -> None:
    assert (UNITS[SUSTAINED], TIERS[SUSTAINED]) == ("TFLOP/s", 2)
    th = threshold("h100-80gb", SUSTAINED)
    assert th.floor_ratio == 0.80 and th.enforced and "burst" in th.source
    assert threshold(None, SUSTAINED).floor_ratio is None  # a CPU is never judged on it


# -- judged against the burst figure ---------------------------------------------------------
@pytest.mark.parametrize(("sustained", "verdict"), [
    (760.0, Verdict.PASS), (690.0, Verdict.WARN), (560.0, Verdict.FAIL)])
def test_sustained_is_judged_against_the_same_devices_burst(sustained: float,
                                                            verdict: Verdict) -> None:
    loads = {"cuda0": _load(800.0), "cuda1": _load(sustained)}
    by = {r.device: r for r in judge_sustained(loads, {"cuda0": 800.0, "cuda1": 800.0},
                                               _h100(), window_s=20,
                                               platforms={"cuda0": "gpu", "cuda1": "gpu"})}
    r = by["cuda1"]
    assert r.verdict is verdict, r.reason
    assert r.probe == SUSTAINED and r.tier == 2 and r.expected == 989.0  # H100 bf16 peak
    assert r.measured == pytest.approx(sustained)
    assert r.details["ratio_to_burst"] == pytest.approx(sustained / 800.0)
    assert r.details["floor"] == pytest.approx(640.0)
    assert by["cuda0"].verdict is Verdict.PASS
    if verdict is Verdict.FAIL:
        assert "0.70 of its burst" in r.reason


def test_no_burst_figure_still_reports_the_sustained_one() -> None:
    r = judge_sustained({"cuda0": _load(700.0)}, {}, _h100(), window_s=20)[0]
    assert r.verdict is Verdict.PASS and "no burst figure" in r.reason
    assert r.measured == pytest.approx(700.0)


def test_a_decline_over_the_window_is_recorded() -> None:
    flops = 2.0 * 8192**3
    fast, slow = flops / 800e12, flops / 400e12
    load = SustainedLoad(flops, ((1, fast),) * 4 + ((1, slow),) * 4)
    r = judge_sustained({"cuda0": load}, {"cuda0": 800.0}, _h100(), window_s=20)[0]
    assert r.details["first_quarter_tflops"] == pytest.approx(800.0)
    assert r.details["last_quarter_tflops"] == pytest.approx(400.0)


# -- NVML, faked from nvidia-ml-py's surface with a real H100's values ---------------------
class NVMLError(Exception):
    """nvidia-ml-py's `pynvml.NVMLError` prints its code's text, e.g. 'Not Supported'."""


def _fake_nvml(gpus: int, reasons: Sequence[int], *, power_supported: bool = True,
               bus_ids: Sequence[str] | None = None,
               init_error: str | None = None) -> types.ModuleType:
    """A `pynvml` stand-in: each GPU reports, sample after sample, the clock-event reason
    masks in `reasons` (the last repeats), 1755 MHz under load of 1980 max, 690 W of 700."""
    base = _smi("Bus Id")  # 00000000:04:00.0
    buses = list(bus_ids) if bus_ids is not None else [
        f"{base[:9]}{int(base[9:11], 16) + i:02X}{base[11:]}" for i in range(gpus)]
    max_mhz = int(_smi("SM", section="Max Clocks").split()[0])  # 1980
    limit_mw = int(float(_smi("Current Power Limit").split()[0]) * 1000)
    calls: dict[int, int] = {}
    m = types.ModuleType("pynvml")
    m.NVMLError = NVMLError  # type: ignore[attr-defined]
    m.log = []  # type: ignore[attr-defined]

    def init() -> None:
        if init_error:
            raise NVMLError(init_error)
        m.log.append("init")  # type: ignore[attr-defined]

    def reasons_of(h: int) -> int:
        i = calls.get(h, 0)
        calls[h] = i + 1
        return reasons[min(i, len(reasons) - 1)]

    def power(h: int) -> int:
        if not power_supported:
            raise NVMLError("Not Supported")
        return 690_000

    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: m.log.append("shutdown")  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: gpus  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: 1000 + i  # type: ignore[attr-defined]
    m.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(  # type: ignore[attr-defined]
        busId=buses[h - 1000].encode())
    mem_mhz = int(_smi("Memory", section="Max Clocks").split()[0])  # 2619
    # nvmlClockType_t: NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2
    m.nvmlDeviceGetClockInfo = lambda h, kind: 1755 if kind == 1 else mem_mhz  # type: ignore
    m.nvmlDeviceGetMaxClockInfo = lambda h, kind: max_mhz if kind == 1 else mem_mhz  # type: ignore
    m.nvmlDeviceGetTemperature = lambda h, sensor: 61  # type: ignore[attr-defined]
    m.nvmlDeviceGetPowerUsage = power  # type: ignore[attr-defined]
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: limit_mw  # type: ignore[attr-defined]
    m.nvmlDeviceGetCurrentClocksEventReasons = reasons_of  # type: ignore[attr-defined]
    return m


def _gpus(n: int, *, pci: bool = True) -> list[Device]:
    return [Device(id=f"cuda{i}", index=i, platform="gpu", kind="NVIDIA H100 80GB HBM3",
                   memory_gib=79.6, pci=f"0000:{4 + i:02x}:00" if pci else None)
            for i in range(n)]


class _LoadedBackend:
    """A backend whose sustained phase holds the 'GPUs' for `seconds` at `tflops`."""

    def __init__(self, tflops: dict[str, float], seconds: float) -> None:
        self._tflops, self._seconds = tflops, seconds

    def sustain(self, devices: Sequence[Device], sizes: Sizes,
                window_s: float) -> dict[str, SustainedLoad]:
        time.sleep(self._seconds)
        return {d.id: _load(self._tflops[d.id]) for d in devices}


def test_nvml_sampled_during_the_load_and_power_brake_fails() -> None:
    # cuda1 reports HW slowdown + HW power brake (0x8 | 0x80) from its third sample on
    nvml = _fake_nvml(2, [0x4])
    brake = _fake_nvml(2, [0x4, 0x4, 0x88])
    nvml.nvmlDeviceGetCurrentClocksEventReasons = (  # type: ignore[attr-defined]
        lambda h: brake.nvmlDeviceGetCurrentClocksEventReasons(h) if h == 1001 else 0x4)
    be = _LoadedBackend({"cuda0": 790.0, "cuda1": 780.0}, seconds=0.4)
    results = run_sustained(be, _gpus(2), TINY, 0.4, _h100(),  # type: ignore[arg-type]
                            {"cuda0": 800.0, "cuda1": 800.0}, nvml=nvml)
    by = {r.device: r for r in results}
    ok, bad = by["cuda0"], by["cuda1"]
    assert ok.verdict is Verdict.PASS, ok.reason
    t = ok.details["telemetry"]
    assert t["samples"] >= 3  # sampled while loaded, not once
    assert t["sm_max_mhz"] == 1980 and t["power_limit_w"] == 700.0
    assert t["power_w"]["max"] == 690.0 and t["temp_c"]["max"] == 61
    assert t["reasons_seen"] == {"SW power cap": t["samples"]}  # normal at the power cap
    assert t["mapped_by"] == "nvidia-ml-py, by pci bus id"
    assert bad.verdict is Verdict.FAIL
    assert "HW power brake slowdown" in bad.reason and "HW slowdown" in bad.reason
    assert nvml.log == ["init", "shutdown"]  # type: ignore[attr-defined]


def test_clocks_held_by_a_setting_warn() -> None:
    nvml = _fake_nvml(1, [0x4 | 0x2])
    r = run_sustained(_LoadedBackend({"cuda0": 790.0}, 0.1), _gpus(1),  # type: ignore[arg-type]
                      TINY, 0.1, _h100(), {"cuda0": 800.0}, nvml=nvml)[0]
    assert r.verdict is Verdict.WARN and "applications clocks setting" in r.reason


def test_an_unsupported_metric_is_named_not_fatal() -> None:
    nvml = _fake_nvml(1, [0x4], power_supported=False)
    r = run_sustained(_LoadedBackend({"cuda0": 790.0}, 0.1), _gpus(1),  # type: ignore[arg-type]
                      TINY, 0.1, _h100(), {"cuda0": 800.0}, nvml=nvml)[0]
    t = r.details["telemetry"]
    assert r.verdict is Verdict.PASS and t["power_w"] is None
    assert t["unreadable"] == {"power_w": "Not Supported"}


def test_devices_map_to_nvml_by_pci_bus_not_by_order() -> None:
    # NVML lists the GPUs in another order than CUDA: the sampler follows the bus ids
    nvml = _fake_nvml(2, [0x4], bus_ids=["00000000:05:00.0", "00000000:04:00.0"])
    sampler, why = open_telemetry(_gpus(2), 0.05, nvml)
    assert sampler is not None, why
    sampler.sample()
    data = sampler.stop()
    assert (data["cuda0"].nvml_index, data["cuda1"].nvml_index) == (1, 0)


@pytest.mark.parametrize(("nvml", "devices", "why"), [
    (None, [Device("cpu0", 0, "cpu", "x")], "CPU devices"),
    (_fake_nvml(1, [0], init_error="Driver Not Loaded"), _gpus(1), "Driver Not Loaded"),
    (_fake_nvml(4, [0], bus_ids=["00000000:0a:00.0"] * 4), _gpus(2), "NVML shows 4 GPUs"),
])
def test_not_sampled_says_why(nvml: types.ModuleType | None, devices: list[Device],
                              why: str) -> None:
    sampler, reason = open_telemetry(devices, 0.1, nvml)
    assert sampler is None and reason.startswith("not sampled") and why in reason


def test_missing_pynvml_is_not_sampled_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import smoke.probes._telemetry

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    monkeypatch.setattr(smoke.probes._telemetry, "_find_smi", lambda: None)  # and no nvidia-smi
    sampler, reason = open_telemetry(_gpus(1), 0.1)
    assert sampler is None and "pip install nvidia-ml-py" in reason


def test_telemetry_summary_counts_each_reason() -> None:
    t = DeviceTelemetry(nvml_index=0, reasons=[0x4, 0x4 | 0x40, 0x1])
    assert t.reasons_seen() == {"SW power cap": 2, "HW thermal slowdown": 1, "GPU idle": 1}


# -- for real on this CPU --------------------------------------------------------------------
def test_torch_cpu_runs_the_sustained_phase_after_the_burst() -> None:
    pytest.importorskip("torch")
    report = run_local(backend="torch", tier=2, sizes=TINY, sustain_s=0.2)
    by = {(r.device, r.probe): r for r in report.results}
    r = by[("cpu0", SUSTAINED)]
    assert r.measured is not None and r.measured > 0 and r.verdict is Verdict.PASS
    assert r.details["chunks"] >= 1 and r.details["seconds"] > 0
    assert r.details["burst_tflops"] == by[("cpu0", "matmul_tflops")].measured
    assert r.details["telemetry"].startswith("not sampled: CPU")
    assert [p.probe for p in report.results].index(SUSTAINED) > [
        p.probe for p in report.results].index("matmul_tflops")


def test_sustain_zero_disables_and_a_bad_window_is_bad_input() -> None:
    pytest.importorskip("torch")
    report = run_local(backend="torch", tier=2, sizes=TINY, sustain_s=0)
    assert SUSTAINED not in {r.probe for r in report.results}
    assert SUSTAINED not in {r.probe for r in run_local(backend="torch", tier=1, sizes=TINY,
                                                          sustain_s=1).results}
    with pytest.raises(InputError, match="sustain"):
        run_local(backend="torch", tier=2, sizes=TINY, sustain_s=-1)


def test_torch_loads_every_device_at_once() -> None:
    pytest.importorskip("torch")
    from smoke.probes._torch import TorchBackend

    devices = [Device(f"cpu{i}", i, "cpu", "cpu") for i in range(3)]
    loads = TorchBackend().sustain(devices, TINY, 0.3)
    assert set(loads) == {"cpu0", "cpu1", "cpu2"}
    starts = [ld.span[0] for ld in loads.values()]
    ends = [ld.span[1] for ld in loads.values()]
    assert max(starts) < min(ends)  # the three loads overlapped: concurrent, not in turn
    assert all(ld.iters > 0 and ld.tflops() for ld in loads.values())


_JAX_SCRIPT = """
import json
from smoke import run_local
from smoke.probes.backend import Sizes
sizes = Sizes(matmul_n=96, known_n=32, copy_mib=2, allreduce_mib=1, repeats=3,
              target_repeat_s=0.005)
print(json.dumps(run_local(backend="jax", tier=2, sizes=sizes, sustain_s=0.3).to_dict()))
"""


def test_jax_loads_four_devices_with_one_program() -> None:
    pytest.importorskip("jax")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", _JAX_SCRIPT], env=env, capture_output=True,
                         text=True, check=True, timeout=180)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    sus = [r for r in doc["results"] if r["probe"] == SUSTAINED]
    assert sorted(r["device"] for r in sus) == [f"cpu{i}" for i in range(4)]
    assert all(r["details"]["devices_loaded"] == 4 for r in sus)
    assert len({r["measured"] for r in sus}) == 1 and sus[0]["measured"] > 0  # lockstep


# -- the option, from the CLI through the manifests to the agent ------------------------------
def test_agent_passes_its_window_to_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from smoke.probes import agent

    seen: dict[str, object] = {}

    def fake_run_local(**kwargs: object) -> object:
        seen.update(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr(agent, "run_local", fake_run_local)
    with pytest.raises(SystemExit):
        agent.run(agent.parse_args(["--tier", "2", "--sustain-s", "7.5"]))
    assert seen["sustain_s"] == 7.5
    assert agent.parse_args([]).sustain_s is None  # the platform's default (20 s on a GPU)


def test_rendered_pods_carry_the_window_and_it_must_fit_the_deadline(inventory: Inventory) -> None:
    inv = inventory
    run = render_run(inv, RenderOptions(run_id="s1", tier=2, sustain_s=45),
                     pools=["tcpxo", "v6e"])
    assert arg_of(agent_of(job_of(run, "tcpxo")["spec"]["template"]), "--sustain-s") == "45"
    assert arg_of(agent_of(pod_of(run, "v6e")), "--sustain-s") == "45"
    default = render_run(inv, RenderOptions(run_id="s2", tier=2), pools=["tcpxo"])
    assert arg_of(agent_of(job_of(default, "tcpxo")["spec"]["template"]), "--sustain-s") is None
    with pytest.raises(InputError, match="deadline"):
        RenderOptions(run_id="s3", timeout_s=60, sustain_s=60)


def test_cli_offers_the_option() -> None:
    from typer.testing import CliRunner

    from cli.main import app

    for cmd in ("local", "run", "render"):
        result = CliRunner().invoke(app, ["smoke", cmd, "--help"], terminal_width=200)
        assert result.exit_code == 0 and "--sustain-s" in result.output, cmd
    bad = CliRunner().invoke(app, ["smoke", "local", "--sustain-s", "-1"])
    assert bad.exit_code == 2


def test_a_cuda_devices_pci_location_matches_nvmls_bus_id() -> None:
    pytest.importorskip("torch")
    from smoke.probes._telemetry import _bus
    from smoke.probes._torch import _pci

    props = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=4, pci_device_id=0)
    assert _pci(props) == _bus(_smi("Bus Id").encode()) == "0000:04:00"
    assert _pci(object()) is None  # an old torch without the fields: mapped by index


# -- nvidia-smi, where the image has no nvidia-ml-py ------------------------------------------
_SMI = '''#!{python}
"""A stand-in for nvidia-smi --query-gpu=... --format=csv,noheader,nounits: two H100s, the
recorded one's bus id, max SM clock and power limit; each call takes the next reason mask."""
import pathlib, sys
state = pathlib.Path({state!r})
query = next(a for a in sys.argv if a.startswith("--query-gpu="))
if {old_driver} and "clocks_event_reasons.active" in query:
    print('Field "clocks_event_reasons.active" is not a valid field to query.')
    sys.exit(2)
calls = int(state.read_text()) if state.exists() else 0
state.write_text(str(calls + 1))
reasons = {reasons!r}
for gpu, bus in enumerate(("00000000:04:00.0", "00000000:05:00.0")):
    mask = reasons[gpu][min(calls, len(reasons[gpu]) - 1)]
    print(f"{{bus}}, 1755, {max_mhz}, 61, {power}, {limit}, 0x{{mask:016x}}")
'''


def _fake_smi(tmp_path: Path, reasons: list[list[int]], *, old_driver: bool = False,
              power: str = "690.12") -> str:
    path = tmp_path / "nvidia-smi"
    path.write_text(_SMI.format(
        python=sys.executable, state=str(tmp_path / "calls"), old_driver=old_driver,
        reasons=reasons, power=power,
        max_mhz=_smi("SM", section="Max Clocks").split()[0],  # 1980
        limit=_smi("Current Power Limit").split()[0]), encoding="utf-8")  # 700.00
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("old_driver", [False, True])
def test_nvidia_smi_samples_when_nvidia_ml_py_is_absent(tmp_path: Path,
                                                        old_driver: bool) -> None:
    smi = _fake_smi(tmp_path, [[0x4], [0x4, 0x4, 0x40]], old_driver=old_driver)
    be = _LoadedBackend({"cuda0": 790.0, "cuda1": 785.0}, seconds=0.5)
    by = {r.device: r for r in run_sustained(be, _gpus(2), TINY, 0.5,  # type: ignore[arg-type]
                                             _h100(), {"cuda0": 800.0, "cuda1": 800.0},
                                             smi=smi)}
    t = by["cuda0"].details["telemetry"]
    assert by["cuda0"].verdict is Verdict.PASS, by["cuda0"].reason
    assert t["mapped_by"] == "nvidia-smi, by pci bus id" and t["samples"] >= 3
    assert (t["sm_max_mhz"], t["power_limit_w"], t["power_w"]["max"]) == (1980, 700.0, 690.12)
    assert by["cuda1"].verdict is Verdict.FAIL and "HW thermal slowdown" in by["cuda1"].reason


def test_nvidia_smi_not_available_fields_are_named(tmp_path: Path) -> None:
    smi = _fake_smi(tmp_path, [[0x4], [0x4]], power="[N/A]")
    r = run_sustained(_LoadedBackend({"cuda0": 790.0, "cuda1": 790.0}, 0.1),  # type: ignore
                      _gpus(2), TINY, 0.1, _h100(), {}, smi=smi)[0]
    assert r.details["telemetry"]["unreadable"] == {"power_w": "[N/A]"}
    assert r.details["telemetry"]["power_w"] is None and r.verdict is Verdict.PASS


def test_a_broken_nvidia_smi_is_not_sampled_with_its_message(tmp_path: Path) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate "
                   "with the NVIDIA driver.'\nexit 9\n", encoding="utf-8")
    smi.chmod(0o755)
    sampler, why = open_telemetry(_gpus(1), 0.1, smi=str(smi))
    assert sampler is None and "could not communicate with the NVIDIA driver" in why


def test_the_pod_bundle_runs_the_sustained_phase_with_only_stdlib_and_torch(
        tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from smoke.probes.expect import Expectation as Exp
    from smoke.probes.results import HostReport
    from tests.smoke.test_agent import _agent, _bundle

    p = _agent(_bundle(tmp_path), "--tier", "2", "--backend", "torch", "--sustain-s", "0.2",
               "--expect-json", json.dumps(Exp().to_dict()))
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    report = HostReport.from_dict(json.loads(out.strip().splitlines()[-1]))
    (sus,) = [r for r in report.results if r.probe == SUSTAINED]
    assert sus.measured and sus.details["window_s"] == 0.2 and "blocked" not in err
