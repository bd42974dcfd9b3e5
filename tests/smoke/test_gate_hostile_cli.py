"""`gate status` and `gate run --once` against a hostile or broken API server (issue 35; split
from test_gate_hostile.py): a Lease renewed ahead of the clock, one that does not read, a
dripping Lease read, a malformed node listed as skipped; `--once` exits 2 on a node it could
not judge or a node list that never answers, and 130 on ctrl-C."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.smoke.gate_cluster import (
    NAMESPACE,
    client_of,
    gated_inventory,
    gke_gated_node,
    h100_report,
)
from tests.smoke.test_gate import gate_state, tainted, wait_for
from tests.smoke.test_gate_hostile import _bad, _lease, _proven_by_hand, _status


@pytest.fixture(autouse=True)
def _no_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))


def test_status_is_up_only_while_the_lease_is_renewed_within_its_duration(
        fake_cluster: Any, tmp_path: Path) -> None:
    _lease(fake_cluster, datetime.now(UTC) - timedelta(seconds=2))
    result = _status(fake_cluster, tmp_path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["controllers"][0]["up"] is True


@pytest.mark.parametrize("renew", ["a year ahead", "a minute ahead", "a minute ago",
                                   "2026-11-28T10:00:00", "never"])
def test_status_exits_1_when_no_controller_renewed_and_future_renewals_are_skew(
        fake_cluster: Any, tmp_path: Path, renew: str) -> None:
    now = datetime.now(UTC)
    when: datetime | str = {"a year ahead": now + timedelta(days=365),
                            "a minute ahead": now + timedelta(minutes=1),
                            "a minute ago": now - timedelta(minutes=1)}.get(renew, renew)
    _lease(fake_cluster, when)
    result = _status(fake_cluster, tmp_path, "--json")
    assert result.exit_code == 1, result.output
    row = json.loads(result.stdout)["controllers"][0]
    assert row["up"] is False and row["problem"]
    if "ahead" in renew:
        assert "clock skew" in row["problem"]


def test_status_survives_a_lease_that_does_not_read(fake_cluster: Any,
                                                    tmp_path: Path) -> None:
    _lease(fake_cluster, "", spec={"holderIdentity": ["gate-0"], "renewTime": 5,
                                   "leaseDurationSeconds": "15"})
    result = _status(fake_cluster, tmp_path, "--json")
    assert result.exit_code == 1, result.output
    assert "does not read" in json.loads(result.stdout)["controllers"][0]["problem"]


def test_status_is_bounded_on_a_dripping_lease_read(fake_cluster: Any, tmp_path: Path) -> None:
    _lease(fake_cluster, datetime.now(UTC))
    fake_cluster.hostile("GET", "/leases/accelfleet-gate", "drip", delay_s=0.5)
    done: list[Any] = []
    t = threading.Thread(target=lambda: done.append(_status(fake_cluster, tmp_path, "--json")),
                         daemon=True)
    t.start()
    t.join(120)  # a drip of 0.5 s a byte: the answer would take ten minutes
    assert done, "gate status still waits on a dripping Lease read"
    result = done[0]
    assert result.exit_code == 1, result.output
    assert "not read within" in json.loads(result.stdout)["controllers"][0]["problem"]


def test_status_lists_a_malformed_node_as_skipped_and_a_future_proof_as_skew(
        fake_cluster: Any, tmp_path: Path) -> None:
    _lease(fake_cluster, datetime.now(UTC))
    ahead = (datetime.now(UTC) + timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fake_cluster.add_node_object(_proven_by_hand("gke-h100-train-0", ahead))
    fake_cluster.add_node_object(_bad("gke-h100-train-1", "spec.taints", "gpu"))
    result = _status(fake_cluster, tmp_path, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["node"] for r in doc["nodes"]] == ["gke-h100-train-0"]
    assert "clock skew" in doc["nodes"][0]["reason"]
    assert any(s.startswith("ml-gke/gke-h100-train-1: spec.taints") for s in doc["skipped"])
    table = _status(fake_cluster, tmp_path)
    assert "skipped" in table.output


# -- gate run --once ---------------------------------------------------------------------------
def test_once_exits_2_when_a_node_does_not_read_though_the_good_one_passed(
        fake_cluster: Any, tmp_path: Path) -> None:
    """The issue's: the controller died on the bad node and `--once` exited 0 with the good
    node unproven. Now: the good node is proven, the bad one named, exit 2 (an API problem:
    a node the gate could not judge)."""
    from tests.smoke.test_gate_cli import _files, _gate

    good, bad = "gke-h100-train-0", "gke-h100-train-1"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    fake_cluster.add_node_object(gke_gated_node("h100-train", good))
    fake_cluster.add_node_object(_bad(bad, "spec.taints", "gpu"))
    result = _gate("run", "--once", "--lease-s", "2", *_files(fake_cluster, tmp_path))
    assert result.exit_code == 2, result.output
    assert f"PASS ml-gke/h100-train {good}" in result.output
    assert f"SKIPPED ml-gke/h100-train {bad}" in result.output and "spec.taints" in result.output
    assert not tainted(fake_cluster, good)


def test_once_exits_2_when_the_node_list_never_answers(fake_cluster: Any,
                                                       tmp_path: Path) -> None:
    from smoke.gate.controller import Gate, GateOptions

    fake_cluster.add_node_object(gke_gated_node("h100-train", "gke-h100-train-0"))
    fake_cluster.fail_next(10**6, status=403, path_contains="/api/v1/nodes")
    gate = Gate(client_of(fake_cluster, tmp_path), "ml-gke", gated_inventory(), GateOptions(
        namespace=NAMESPACE, once=True, elect=False, sync_wait_s=3.0, once_wait_s=60.0))
    done: list[Any] = []
    t = threading.Thread(target=lambda: done.append(gate.run(threading.Event())), daemon=True)
    t.start()
    t.join(120)
    assert done, "--once still runs with no node list"
    summary = done[0]
    assert not summary.ok and any("node list" in p for p in summary.api_problems)


def test_ctrl_c_ends_run_once_with_130(fake_cluster: Any, tmp_path: Path) -> None:
    """ctrl-C (SIGINT) to `gate run --once` mid-proof: it cleans up and exits 130, as every
    interrupted command does (it exited 1, as if a node had failed)."""
    import os
    import signal
    import subprocess
    import sys

    from tests.smoke.test_gate_cli import ROOT, _files

    n = "gke-h100-train-0"
    fake_cluster.set_node_command(n, ["python", "-c", "import time; time.sleep(120)"])
    fake_cluster.add_node_object(gke_gated_node("h100-train", n))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACCELFLEET_HISTORY":
           str(tmp_path / "history.sqlite")}
    proc = subprocess.Popen([sys.executable, "-m", "cli", "gate", "run", "--once",
                             "--lease-s", "2", *_files(fake_cluster, tmp_path)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: gate_state(fake_cluster, n) == "proving" or proc.poll() is not None,
                 120)
        assert proc.poll() is None, proc.communicate()[0].decode()[-3000:]
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=120)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 130, out[-3000:]
    assert "interrupted" in out
    assert gate_state(fake_cluster, n) != "proving"  # its claim given back
