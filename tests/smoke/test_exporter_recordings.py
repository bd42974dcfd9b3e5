"""The exporter's text as real nodes print it, judged by the gate between proofs (issue 37):
recordings from public threads (tests/smoke/data/dcgm_exporter, each with its source), and
the exporter pod list read as hostile answers may shape it (smoke.gate._exporter)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from smoke.gate import _exporter as E
from smoke.gate import signals as S

DATA = Path(__file__).parent / "data" / "dcgm_exporter"


def _prom(name: str) -> list[S.Sample]:
    return S.parse_metrics((DATA / name).read_text(encoding="utf-8"))


def test_a_healthy_gb200_node_reads_and_nothing_is_said() -> None:
    samples = _prom("dcgm-exporter-581-gb200-nvlink-count.prom")
    assert {s.labels["gpu"] for s in samples} == {"0", "1", "2", "3"}
    assert all(s.labels["modelName"] == "NVIDIA GB200" for s in samples)
    assert S.judge_exporter(samples, samples, elapsed_s=60) == []


def test_a_blank_nvlink_crc_counter_is_no_count_and_no_increase() -> None:
    # DCGM#173: field 409 on an H100 reads DCGM's blank; read as a count it would be an
    # increase of 9.2e18 CRC errors after a zero
    blank = [line for line in (DATA / "dcgm-173-h100-nvlink-crc-blank.txt").read_text()
             .splitlines() if line.startswith("DCGM_FI_")]
    assert S.parse_metrics("\n".join(blank)) == []
    zero = S.parse_metrics('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{gpu="7"} 0')
    assert S.judge_exporter(S.parse_metrics("\n".join(blank)), zero, elapsed_s=60) == []


def test_the_derived_dbe_text_quarantines_gpu_1_only() -> None:
    found = S.judge_exporter(_prom("derived-a30-dbe-gpu1.prom"))
    assert [(s.gpu, s.action, s.value) for s in found] == [("1", S.QUARANTINE, 1.0)]


@pytest.mark.parametrize(("page", "want"), [
    ({"items": [{"metadata": {"name": "e"}, "status": {"phase": "Running"},
                 "spec": {"containers": [{"ports": [{"name": "metrics",
                                                     "containerPort": 9500}]}]}}]},
     ("e", 9500)),
    ({"items": [{"metadata": {"name": "e"}, "status": {"phase": "Running"},
                 "spec": {"containers": [{"ports": [{"name": "metrics",
                                                     "containerPort": "9500"}]}]}}]},
     ("e", 9400)),  # a port that is no number: the chart's default
    ({"items": [{"metadata": {"name": "e"}, "status": {"phase": "Running"},
                 "spec": {"containers": [{"ports": [{"name": "metrics", "containerPort": p}
                                                    for p in (True, 0, 70000)]}]}}]},
     ("e", 9400)),  # a bool, a port out of range: the default
    ({"items": [{"metadata": {"name": "e"}, "status": {"phase": "Pending"}}]}, None),
    ({"items": "not a list"}, None),
    ({"items": [None, 3, {"metadata": {"name": ""}, "status": {"phase": "Running"}},
                {"metadata": "x", "status": {"phase": "Running"}}]}, None),
    ([], None),
    ({"items": [{"metadata": {"name": "e"}, "status": {"phase": "Running"},
                 "spec": {"containers": ["x", {"ports": "y"}]}}]}, ("e", 9400)),
])
def test_the_exporter_pod_list_however_it_reads(page: Any, want: Any) -> None:
    assert E._running_pod(page) == want


def test_one_node_failing_to_act_on_leaves_the_others_read() -> None:
    """An API error while acting on one node's reading is said; the next node is still read."""
    from types import SimpleNamespace

    from smoke.gate import nodes as N

    read: list[str] = []
    problems: list[str] = []

    class Gate:
        def __init__(self) -> None:
            self.options = SimpleNamespace(exporter_namespace="ns", exporter_interval_s=60.0)
            self.pools = {"p": SimpleNamespace(kind="gpu", accelerator="h100-80gb")}
            self.inflight: dict[str, Any] = {}

        def _nodes(self) -> list[Any]:
            return [SimpleNamespace(name=n, pool="p", state=N.PROVEN, ready=True,
                                    quarantined=False) for n in ("a", "b")]

        def _problem(self, text: str) -> None:
            problems.append(text)

    ex = E.Exporters(Gate())  # type: ignore[arg-type]

    def read_node(n: Any, *_: Any) -> None:
        read.append(n.name)
        if n.name == "a":
            raise RuntimeError("the API went away")

    ex._read_node = read_node  # type: ignore[method-assign]
    ex.step(now=0.0)
    assert read == ["a", "b"] and ex.failures == 1
    assert problems == ["acting on the DCGM exporter of a: RuntimeError"]
    ex.step(now=1.0)  # within the interval: nothing read again
    assert read == ["a", "b"]


def test_an_xid_with_the_exporters_err_msg_labels_is_read_and_acted_on_once() -> None:
    # DCGM#235: commas and "--" inside a label value; Xid 45 is no devastating Xid
    samples = _prom("dcgm-235-xid-45-err-msg.prom")
    (s,) = samples
    assert s.labels["err_code"] == "45" and "-- Most likely" in s.labels["err_msg"]
    (sig,) = S.judge_exporter(samples)
    assert sig.action == S.REPROVE and sig.value == 45 and "Xid 45" in sig.text
    # the gauge keeps the last Xid (dcgm-exporter#500; a second Xid 45 is the same value to
    # it, dcgm-exporter#190): the next reading asks nothing more
    assert S.judge_exporter(samples, samples) == []


def test_the_eks_agents_row_remap_failure_condition_quarantines() -> None:
    import yaml

    (cond,) = yaml.safe_load((DATA.parent / "node_conditions" /
                              "eks-nma-246-row-remap-failure.yaml").read_text())
    (sig,) = S.judge_conditions([cond])
    assert sig.action == S.QUARANTINE and "NvidiaRowRemapFailure" in sig.text
