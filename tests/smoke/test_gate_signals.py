"""Between proofs (issue 37): the node conditions other agents set and the DCGM exporter's
counters, judged (smoke.gate.signals) on real outputs copied from public threads
(tests/smoke/data/node_conditions, tests/smoke/data/dcgm_exporter, each with its source)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from smoke.gate import signals as S

DATA = Path(__file__).parent / "data"
_GO = re.compile(r"^\{Type:(?P<type>\S+) Status:(?P<status>\S+) Reason:(?P<reason>\S+) "
                 r"Message:(?P<message>.*)\}$")


def _eks() -> list[dict[str, str]]:
    lines = (DATA / "node_conditions" / "eks-nma-conditions.txt").read_text().splitlines()
    return [m.groupdict() for line in lines if (m := _GO.match(line))]


def test_a_healthy_aks_gpu_node_says_nothing() -> None:
    doc = json.loads((DATA / "node_conditions" / "aks-agentbaker-8797.json").read_text())
    assert S.judge_conditions(doc["conditions"]) == []


def test_gke_xid_critical_error_reproves_or_quarantines_by_its_xids() -> None:
    (cond,) = yaml.safe_load((DATA / "node_conditions" / "gke-xid-critical-cea-497.yaml")
                             .read_text())
    (sig,) = S.judge_conditions([cond])
    assert sig.action == S.REPROVE and sig.source == "XidCriticalError"  # Xid 31: MMU, WARN
    assert "Xids [31]" in sig.cite
    (worse,) = S.judge_conditions([{**cond, "reason": '{"31":true,"79":true}'}])
    assert worse.action == S.QUARANTINE  # 79: fallen off the bus


def test_eks_agent_state_reproves_never_quarantines() -> None:
    imex, dcgm = _eks()
    assert len(_eks()) == 2
    for cond in (imex, dcgm):
        (sig,) = S.judge_conditions([cond])
        assert sig.action == S.REPROVE, cond
    # on a multi-node NVLink node the IMEX fault is the fabric's
    (mnnvl,) = S.judge_conditions([imex], mnnvl=True)
    assert mnnvl.action == S.QUARANTINE
    # its hardware reasons quarantine (a critical Xid, a GPU that fell off the bus)
    xid79 = {"type": "AcceleratedHardwareReady", "status": "False", "reason": "NvidiaXID79Error"}
    assert S.judge_conditions([xid79])[0].action == S.QUARANTINE
    xid13 = {**xid79, "reason": "NvidiaXID13Error"}
    assert S.judge_conditions([xid13])[0].action == S.REPROVE
    ready = {**xid79, "status": "True", "reason": "NvidiaAcceleratedHardwareIsReady"}
    assert S.judge_conditions([ready]) == []


def test_nvsentinel_imex_on_an_idle_node_is_only_noted() -> None:
    lines = (DATA / "node_conditions" / "nvsentinel-aicr-2641.txt").read_text().splitlines()
    body = [line for line in lines if not line.startswith("#")]
    head = re.match(r"(?P<type>\S+) = (?P<status>\S+)\s+reason=(?P<reason>\S+)", body[0])
    assert head is not None
    cond = {**head.groupdict(), "message": " ".join(x.strip() for x in body[1:])}
    (sig,) = S.judge_conditions([cond])
    assert sig.action == S.NOTE and "DCGM_FR_IMEX_UNHEALTHY" in sig.text
    assert S.judge_conditions([cond], mnnvl=True)[0].action == S.REPROVE
    fatal = {"type": "GpuNvswitchFatalWatch", "status": "True", "reason": "x", "message": "y"}
    assert S.judge_conditions([fatal])[0].action == S.QUARANTINE


@pytest.mark.parametrize(("ctype", "action"), [
    ("GPUMissing", S.QUARANTINE), ("NVLinkStatusInactive", S.QUARANTINE),
    ("XIDErrors", S.REPROVE), ("IBLinkFlapping", S.REPROVE), ("GPUClockThrottling", S.REPROVE),
])
def test_aks_npd_gpu_conditions(ctype: str, action: str) -> None:
    (sig,) = S.judge_conditions([{"type": ctype, "status": "True", "reason": ctype}])
    assert sig.action == action and "node-problem-detector" in sig.cite
    assert S.judge_conditions([{"type": ctype, "status": "False"}]) == []


# -- the exporter ------------------------------------------------------------------------------
def _prom(name: str) -> list[S.Sample]:
    return S.parse_metrics((DATA / "dcgm_exporter" / name).read_text(encoding="utf-8"))


def test_a_healthy_mig_node_reads_and_passes() -> None:
    samples = _prom("dcgm-exporter-317-a30-mig.prom")
    assert len(samples) == 6 and {s.labels["GPU_I_ID"] for s in samples} == {"3", "4", "5", "6"}
    assert samples[0].labels["modelName"] == "NVIDIA A30"
    assert S.judge_exporter(samples) == []


def test_an_active_xid_names_the_gpu_and_the_xid() -> None:
    (sig,) = S.judge_exporter(_prom("dcgm-exporter-239-xid-42.prom"))
    assert sig.action == S.REPROVE and sig.text.startswith("GPU 0: Xid 42 x1")


def test_the_last_xid_gauge_acts_once_per_event() -> None:
    line = 'DCGM_FI_DEV_XID_ERRORS{gpu="3",UUID="GPU-x",err_code="79"} 79\n'
    now = S.parse_metrics(line)
    (sig,) = S.judge_exporter(now)
    assert sig.action == S.QUARANTINE and sig.text == "GPU 3: Xid 79"
    # the gauge keeps the last Xid until the exporter restarts (dcgm-exporter#500)
    assert S.judge_exporter(now, previous=now) == []


def test_memory_counters_by_dcgms_limits() -> None:
    text = "\n".join([
        'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0"} 0',
        'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1"} 2',
        'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="2"} 1',
        'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu="3"} 512',
        'DCGM_FI_DEV_RETIRED_PENDING{gpu="4"} 1',
        'DCGM_FI_DEV_RETIRED_SBE{gpu="5"} 60', 'DCGM_FI_DEV_RETIRED_DBE{gpu="5"} 3',
        # DCGM's blank (a field the GPU lacks) is no value
        'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="6"} 9.223372036854776e+18'])
    got = {(s.text.split(":")[0], s.action) for s in S.judge_exporter(S.parse_metrics(text))}
    assert got == {("GPU 1", S.QUARANTINE), ("GPU 2", S.QUARANTINE), ("GPU 3", S.REPROVE),
                   ("GPU 4", S.REPROVE), ("GPU 5", S.QUARANTINE)}
    assert S.strongest(S.judge_exporter(S.parse_metrics(text))) == S.QUARANTINE


def test_nvlink_counters_are_judged_by_their_increase() -> None:
    def reading(replay: int, crc: int) -> list[S.Sample]:
        return S.parse_metrics(
            f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{gpu="0"}} {replay}\n'
            f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{gpu="0"}} {crc}\n')

    assert S.judge_exporter(reading(5, 10)) == []  # one reading: no window
    assert S.judge_exporter(reading(5, 10), reading(5, 10)) == []
    (replay,) = S.judge_exporter(reading(6, 10), reading(5, 10))
    assert replay.action == S.QUARANTINE
    (slow,) = S.judge_exporter(reading(5, 110), reading(5, 10), elapsed_s=60)
    assert slow.action == S.REPROVE  # 1.7/s
    (fast,) = S.judge_exporter(reading(5, 7000), reading(5, 10), elapsed_s=60)
    assert fast.action == S.QUARANTINE  # 116.5/s


def test_the_exporter_is_read_through_its_pod_proxy() -> None:
    assert S.pod_proxy_path("gpu-operator", "nvidia-dcgm-exporter-abcde") == (
        "/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-abcde:9400/proxy/metrics")
    with pytest.raises(ValueError, match="read up to"):
        S.parse_metrics("x 1\n" * (S.MAX_METRICS_BYTES // 4 + 1))


# -- the gate acts on them ---------------------------------------------------------------------
def test_a_proven_node_is_reproven_when_its_gpu_agent_raises_an_xid(
        fake_cluster: Any, tmp_path: Path) -> None:
    """A pool re-proven hourly: a fresh `XidCriticalError` (GKE's device plugin, the recorded
    condition) makes the proven node due at once; one older than the proof does not."""
    from datetime import UTC, datetime

    from fleet.inventory import InventoryGate
    from fleet.labels import GATE_PROOF_ANNOTATION
    from smoke.gate import nodes as N
    from tests.smoke.gate_cluster import controller, gated_inventory, gke_gated_node, h100_report
    from tests.smoke.test_gate import gate_state, node, wait_for

    (cond,) = yaml.safe_load((DATA / "node_conditions" / "gke-xid-critical-cea-497.yaml")
                             .read_text())
    inventory = gated_inventory({"h100-train": InventoryGate(reprove_interval_s=3600)})
    name = "gke-h100-train-0"
    fake_cluster.set_node_output(name, h100_report(name, 800.0))

    def run() -> str:
        return str(json.loads(node(fake_cluster, name)["metadata"]["annotations"][
            GATE_PROOF_ANNOTATION])["run"])

    with controller(fake_cluster, tmp_path, inventory, "ml-gke"):
        fake_cluster.add_node_object(gke_gated_node("h100-train", name))
        wait_for(lambda: gate_state(fake_cluster, name) == "proven")
        first = run()
        # as it was before the proof (recorded timestamps, 2025): no re-proof
        fake_cluster.patch("nodes", "", name, {"status": {"conditions": [cond]}},
                           kind="application/strategic-merge-patch+json", subresource="status")
        assert N.GateNode.of(node(fake_cluster, name)).signal is None
        now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        fresh = {**cond, "lastTransitionTime": now, "lastHeartbeatTime": now}
        fake_cluster.patch("nodes", "", name, {"status": {"conditions": [fresh]}},
                           kind="application/strategic-merge-patch+json", subresource="status")
        got = N.GateNode.of(node(fake_cluster, name))
        assert got.signal == "reprove", (got.conditions, got.proof)
        wait_for(lambda: run() != first, 60)
