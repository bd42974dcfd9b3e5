"""The gate reads the DCGM exporter of each proven GPU node between proofs (issue 37,
smoke.gate._exporter), on the fake API server where the answers are hostile: a drip, an endless
body, garbage, a refused proxy; each says why in the summary and never stops the loop. (The
scenario itself, DBE -> quarantine and a healthy text -> nothing, runs on the real control
plane: tests/controlplane/test_gate_exporter_real.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet.gate import DCGM_EXPORTER_NAMESPACE
from fleet.inventory import InventoryGate
from smoke.gate import _exporter as E
from smoke.gate import signals as S
from tests.smoke.exporter_pods import DBE, HEALTHY, exporter_pod
from tests.smoke.gate_cluster import controller, gated_inventory, gke_gated_node, h100_report
from tests.smoke.test_gate import events, gate_state, wait_for

NAME, POOL, PORT = "gke-h100-train-0", "h100-train", 9400
PROXY = "/pods/dcgm-exporter-abcde%3A9400/proxy/metrics"  # as the client encodes it


def _setup(fake: Any, text: str | None, tmp_path: Path, **options: Any) -> Any:
    inventory = gated_inventory({POOL: InventoryGate(quarantine_cap="1")})
    fake.set_node_output(NAME, h100_report(NAME, 800.0))
    fake.create("namespaces", "", {"metadata": {"name": DCGM_EXPORTER_NAMESPACE}})
    fake.create("pods", DCGM_EXPORTER_NAMESPACE, exporter_pod("dcgm-exporter-abcde", NAME,
                                                               PORT, HEALTHY, daemonset=True))
    fake.patch("pods", DCGM_EXPORTER_NAMESPACE, "dcgm-exporter-abcde",
               {"status": {"phase": "Running"}}, kind="application/merge-patch+json",
               subresource="status")
    if text is not None:
        fake.set_pod_proxy(DCGM_EXPORTER_NAMESPACE, f"dcgm-exporter-abcde:{PORT}", text)
    return controller(fake, tmp_path, inventory, "ml-gke",
                      **{"exporter_namespace": DCGM_EXPORTER_NAMESPACE,
                         "exporter_interval_s": 0.5, "exporter_timeout_s": 2.0, **options})


def _reads(fake: Any) -> int:
    return sum(1 for m, p in fake.requests if m == "GET" and PROXY in p)


def test_a_dbe_on_the_exporter_fails_and_quarantines_the_node_naming_the_counter(
        fake_cluster: Any, tmp_path: Path) -> None:
    with _setup(fake_cluster, DBE.read_text(), tmp_path) as running:
        fake_cluster.add_node_object(gke_gated_node(POOL, NAME))
        wait_for(lambda: gate_state(fake_cluster, NAME) == "failed", 90)

        def said() -> list[str]:
            return [e["message"] for e in events(fake_cluster, NAME)
                    if e["reason"] == "GateHealthSignal"]

        messages = wait_for(said, 30)
        assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=1 on GPU 1" in messages[0], messages
        assert running.gate.summary.results[NAME].verdict == "fail"
        wait_for(lambda: (fake_cluster.get("nodes", "", NAME)["metadata"]["labels"] or {})
                 .get("accelfleet.io/smoke") == "failed", 30)


@pytest.mark.parametrize("how", ["drip", "endless"])
def test_a_hostile_exporter_answer_is_cut_and_said(fake_cluster: Any, tmp_path: Path,
                                                    how: str) -> None:
    fake_cluster.hostile("GET", PROXY, how, delay_s=0.05)
    with _setup(fake_cluster, HEALTHY.read_text(), tmp_path,
                exporter_max_bytes=256 * 2**10) as running:
        fake_cluster.add_node_object(gke_gated_node(POOL, NAME))
        wait_for(lambda: gate_state(fake_cluster, NAME) == "proven", 90)
        wait_for(lambda: _reads(fake_cluster) >= 2, 60)
        wait_for(lambda: any("DCGM exporter" in p for p in running.gate.summary.errors), 30)
        assert gate_state(fake_cluster, NAME) == "proven"  # nothing judged on a cut answer
        assert running.gate.ready.is_set() and running.thread.is_alive()


@pytest.mark.parametrize("text", ["\x00\xff garbage {{{ \n" * 1000,
                                  'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0"} NaN\n'
                                  'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1"} 9.223372036854776e+18\n'
                                  'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="' + "9" * 5000 + '"} '
                                  'not-a-number\n'])
def test_garbage_or_blank_values_judge_nothing(fake_cluster: Any, tmp_path: Path,
                                               text: str) -> None:
    with _setup(fake_cluster, text, tmp_path):
        fake_cluster.add_node_object(gke_gated_node(POOL, NAME))
        wait_for(lambda: gate_state(fake_cluster, NAME) == "proven", 90)
        wait_for(lambda: _reads(fake_cluster) >= 2, 60)
        assert gate_state(fake_cluster, NAME) == "proven"
        assert not [e for e in events(fake_cluster, NAME) if e["reason"] == "GateHealthSignal"]


def test_no_exporter_answer_is_no_verdict_and_one_read_per_interval(
        fake_cluster: Any, tmp_path: Path) -> None:
    """The pod's port refuses (503 through the proxy): nothing judged; reads stay one per
    node per interval."""
    with _setup(fake_cluster, None, tmp_path, exporter_interval_s=3600.0):
        fake_cluster.add_node_object(gke_gated_node(POOL, NAME))
        wait_for(lambda: gate_state(fake_cluster, NAME) == "proven", 90)
        wait_for(lambda: _reads(fake_cluster) >= 1, 60)
        import time

        time.sleep(3.0)  # several loop ticks: still one read in the hour's interval
        assert _reads(fake_cluster) == 1
        assert gate_state(fake_cluster, NAME) == "proven"


def test_signals_a_part_does_not_keep_are_dropped_not_judged() -> None:
    """An L4 keeps no NVLink counters (catalog): an NVLink increase is not judged on it; on an
    H100 it is."""
    from fleet.inventory import InventoryPool

    before = S.parse_metrics('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{gpu="0"} 0\n')
    after = S.parse_metrics('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{gpu="0"} 3\n')
    found = S.judge_exporter(after, before, elapsed_s=60)
    assert [s.action for s in found] == [S.QUARANTINE]
    assert found[0].value == 3 and found[0].gpu == "0"

    class P:
        def __init__(self, acc: str) -> None:
            self.accelerator = acc

    l4: Any = P("l4")
    h100: Any = P("h100-80gb")
    assert E._known(found, l4) == [] and E._known(found, h100) == found
    assert InventoryPool  # the real record carries `accelerator` too


def test_the_event_words_name_the_counter_value_and_gpu() -> None:
    (s,) = S.judge_exporter(S.parse_metrics(DBE.read_text()))
    assert E.signal_words(s).startswith("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=1 on GPU 1 (")



def _exporter_on(fake: Any, pod: str, node: str, text: str) -> None:
    fake.create("pods", DCGM_EXPORTER_NAMESPACE, exporter_pod(pod, node, PORT, HEALTHY,
                                                             daemonset=True))
    fake.patch("pods", DCGM_EXPORTER_NAMESPACE, pod, {"status": {"phase": "Running"}},
               kind="application/merge-patch+json", subresource="status")
    fake.set_pod_proxy(DCGM_EXPORTER_NAMESPACE, f"{pod}:{PORT}", text)


def test_a_warning_counter_reproves_the_node_once(fake_cluster: Any, tmp_path: Path) -> None:
    """Rows remapped past DCGM's 512 (a WARN rule; an H100 remaps rows): the node is proven
    again (its proof's run changes), the Event names the counter, and it stays proven."""
    import json

    from fleet.labels import GATE_PROOF_ANNOTATION

    rows = ('DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu="2",modelName="NVIDIA H100 80GB HBM3"}'
            " 600\n")
    with _setup(fake_cluster, rows, tmp_path):
        fake_cluster.add_node_object(gke_gated_node(POOL, NAME))
        wait_for(lambda: gate_state(fake_cluster, NAME) == "proven", 90)

        def run() -> str:
            got = fake_cluster.get("nodes", "", NAME)["metadata"].get("annotations") or {}
            return str(json.loads(got.get(GATE_PROOF_ANNOTATION, "{}")).get("run", ""))

        first = run()
        said = wait_for(lambda: [e["message"] for e in events(fake_cluster, NAME)
                                 if e["reason"] == "GateHealthSignal"], 60)
        assert "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS=600 on GPU 2" in said[0]
        assert "re-proof due" in said[0]
        wait_for(lambda: run() not in ("", first) and gate_state(fake_cluster, NAME) == "proven",
                 120)
        second = run()
        wait_for(lambda: _reads(fake_cluster) >= 4, 60)
        assert run() == second  # acted on once: the same reading asks nothing more


def test_two_failing_exporters_quarantine_within_the_cap(fake_cluster: Any,
                                                         tmp_path: Path) -> None:
    """Cap 1 of the pool: both nodes are failed and held, one is quarantined."""
    other = "gke-h100-train-1"
    fake_cluster.set_node_output(other, h100_report(other, 800.0))
    with _setup(fake_cluster, DBE.read_text(), tmp_path):
        _exporter_on(fake_cluster, "dcgm-exporter-fghij", other, DBE.read_text())
        for n in (NAME, other):
            fake_cluster.add_node_object(gke_gated_node(POOL, n))
        wait_for(lambda: all(gate_state(fake_cluster, n) == "failed" for n in (NAME, other)),
                 120)

        def quarantined() -> list[str]:
            return [n for n in (NAME, other) if (fake_cluster.get("nodes", "", n)["metadata"]
                                                 ["labels"] or {}).get("accelfleet.io/smoke")
                    == "failed"]

        wait_for(quarantined, 30)
        import time

        time.sleep(2.0)  # the second one's quarantine had its chance: the cap held it
        assert len(quarantined()) == 1
