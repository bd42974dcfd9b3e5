"""`accelfleet gate run --once`, `gate status`, `gate open` and `gate close` on the fake
cluster (CliRunner; the controller killed mid-proof runs as a real process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.main import app
from fleet.labels import GATE_OPEN_ANNOTATION, GATE_PROOF_ANNOTATION, RUN_LABEL
from tests.smoke.gate_cluster import NAMESPACE, gated_inventory, gke_gated_node, h100_report
from tests.smoke.test_gate import events, gate_state, node, tainted, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _files(cluster: Any, tmp_path: Path) -> list[str]:
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(gated_inventory().to_dict()), encoding="utf-8")
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    return ["--inventory", str(inv), "--kubeconfig", str(kc), "--context", "ml-gke=fake",
            "--cluster", "ml-gke", "--namespace", NAMESPACE]


def _gate(*args: str) -> Any:
    return CliRunner().invoke(app, ["gate", *args])


def test_run_once_exits_0_when_every_gated_node_passed_then_status_shows_them(
        fake_cluster: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))
    names = ["gke-h100-train-0", "gke-h100-train-1"]
    for n in names:
        fake_cluster.set_node_output(n, h100_report(n, 800.0))
        fake_cluster.add_node_object(gke_gated_node("h100-train", n))
    files = _files(fake_cluster, tmp_path)
    result = _gate("run", "--once", "--lease-s", "2", *files)
    assert result.exit_code == 0, result.output
    for n in names:
        assert f"PASS ml-gke/h100-train {n}" in result.output
        assert not tainted(fake_cluster, n)
    status = _gate("status", "--json", *files)
    assert status.exit_code == 1, status.output  # no controller renews the Lease now
    doc = json.loads(status.stdout)
    assert [(r["node"], r["state"]) for r in doc["nodes"]] == [(n, "proven") for n in names]
    assert doc["controllers"] == [{"cluster": "ml-gke", "holder": "", "renewed": doc[
        "controllers"][0]["renewed"], "up": False, "problem": "no holder: released"}]
    # released on exit: none is up now
    from smoke.history import History

    with History.open(tmp_path / "history.sqlite", create=False) as h:  # the same history
        assert h.count()[0] == 1  # as smoke run: one run per proof (the two nodes, Ready
        # together, are proven in one batch)
    table = _gate("status", *files)
    assert "DOWN" in table.output and "proven" in table.output
    assert f"read inventory {tmp_path.as_posix()}/inventory.json" in table.output  # issue 38
    assert "read " in result.output


def test_run_once_exits_1_when_a_node_failed(fake_cluster: Any, tmp_path: Path,
                                              monkeypatch: Any) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))
    good, bad = "gke-h100-train-0", "gke-h100-train-1"
    fake_cluster.set_node_output(good, h100_report(good, 800.0))
    fake_cluster.set_node_output(bad, h100_report(bad, 300.0))
    for n in (good, bad):
        fake_cluster.add_node_object(gke_gated_node("h100-train", n))
    result = _gate("run", "--once", "--lease-s", "2", *_files(fake_cluster, tmp_path))
    assert result.exit_code == 1, result.output
    assert f"PASS ml-gke/h100-train {good}" in result.output
    assert f"FAIL ml-gke/h100-train {bad}" in result.output and "below floor" in result.output
    status = json.loads(_gate("status", "--json", *_files(fake_cluster, tmp_path)).stdout)
    row = next(r for r in status["nodes"] if r["node"] == bad)
    assert row["state"] == "failed" and row["quarantined"] and "matmul" in row["reason"]


def test_bad_input_exits_2(fake_cluster: Any, tmp_path: Path) -> None:
    files = _files(fake_cluster, tmp_path)
    result = _gate("run", "--once", *files[:-4], "--cluster", "nowhere")
    assert result.exit_code == 2, result.output
    assert "no pool of the inventory is gated on cluster nowhere" in result.output
    result = _gate("run", "--in-cluster", "--cluster", "ml-gke")
    assert result.exit_code == 2 and "--inventory" in result.output


def test_open_lifts_the_gate_with_a_record_and_close_restores_it(
        fake_cluster: Any, tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    fake_cluster.add_node_object(gke_gated_node("h100-train", n))
    files = [f for f in _files(fake_cluster, tmp_path)]
    files = files[:6]  # --inventory, --kubeconfig, --context
    assert _gate("open", "h100-train", *files).exit_code == 2  # a reason is required
    opened = _gate("open", "h100-train", "--reason", "INC-42: proofs blocked", *files)
    assert opened.exit_code == 0, opened.output
    assert not tainted(fake_cluster, n)
    record = json.loads(node(fake_cluster, n)["metadata"]["annotations"][GATE_OPEN_ANNOTATION])
    assert record["reason"] == "INC-42: proofs blocked" and record["by"]
    assert "GateOpened" in [e["reason"] for e in events(fake_cluster, n)]
    closed = _gate("close", "h100-train", *files)
    assert closed.exit_code == 0, closed.output
    assert tainted(fake_cluster, n)
    assert GATE_OPEN_ANNOTATION not in (node(fake_cluster, n)["metadata"].get("annotations")
                                        or {})


def test_a_controller_killed_mid_proof_and_restarted_proves_the_node_exactly_once(
        fake_cluster: Any, tmp_path: Path) -> None:
    n = "gke-h100-train-0"
    report = tmp_path / "report.json"
    report.write_text(h100_report(n, 800.0), encoding="utf-8")
    marker = tmp_path / "starts"
    # each proof pod on the node appends to `marker`; the first one hangs (mid-proof). The
    # paths go by the environment: the TCPX pool mounts /tmp, where a pod's arguments are
    # remapped to the mount
    fake_cluster.base_env.update(GATE_MARKER=str(marker), GATE_REPORT=str(report))
    fake_cluster.set_node_command(n, ["python", "-c", (
        "import os, time\n"
        "marker = os.environ['GATE_MARKER']\n"
        "first = not os.path.exists(marker)\n"
        "open(marker, 'a').write('x')\n"
        "time.sleep(120 if first else 0)\n"
        "print(open(os.environ['GATE_REPORT']).read())")])
    fake_cluster.add_node_object(gke_gated_node("h100-train", n))
    files = _files(fake_cluster, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACCELFLEET_HISTORY":
           str(tmp_path / "history.sqlite")}
    proc = subprocess.Popen([sys.executable, "-m", "cli", "gate", "run", "--lease-s", "2",
                             *files], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        try:
            wait_for(lambda: marker.exists() or proc.poll() is not None, 120)
        except AssertionError:
            proc.kill()
            logs = [p.read_text() for p in (tmp_path / "fake-cluster").rglob("log")]
            raise AssertionError(proc.communicate()[0].decode()[-3000:] + repr(
                [k for k in fake_cluster.store if k[0] in ("pods", "leases")]) + repr(logs)
                + repr(node(fake_cluster, n)["status"]["conditions"])) from None
        assert proc.poll() is None, proc.communicate()[0].decode()[-3000:]
        first_run = node(fake_cluster, n)["metadata"]["annotations"]["accelfleet.io/gate-run"]
        assert gate_state(fake_cluster, n) == "proving"
    finally:
        proc.send_signal(signal.SIGKILL)  # no cleanup: its proof is left running
        proc.wait(30)
    assert fake_cluster.objects(f"{RUN_LABEL}={first_run}") != []
    result = _gate("run", "--once", "--lease-s", "2", *files)
    assert result.exit_code == 0, result.output
    proof = json.loads(node(fake_cluster, n)["metadata"]["annotations"][GATE_PROOF_ANNOTATION])
    assert proof["run"] != first_run
    assert fake_cluster.objects(f"{RUN_LABEL}={first_run}") == []  # the dead one's, gone
    assert marker.read_text() == "xx"  # two proofs started, never at once:
    first_gone = max(rv for rv, kind, (plural, _, _), obj in fake_cluster.changes()
                     if plural == "pods" and kind == "DELETED"
                     and obj["metadata"]["labels"].get(RUN_LABEL) == first_run)
    second_made = min(rv for rv, kind, (plural, _, _), obj in fake_cluster.changes()
                      if plural == "pods" and kind == "ADDED"
                      and obj["metadata"]["labels"].get(RUN_LABEL) == proof["run"])
    assert first_gone < second_made
    assert [e["reason"] for e in events(fake_cluster, n)] == ["GateProofPassed"]


def test_the_deployment_command_line_parses_to_an_in_cluster_request(
        monkeypatch: Any, tmp_path: Path) -> None:
    """Exactly the argv the Deployment runs (docs/gate.md) reaches the library as one
    in-cluster request."""
    import smoke.gate.session as session

    seen = []
    monkeypatch.setattr(session, "run_gate", lambda request, stop: seen.append(request) or [])
    result = _gate("run", "--in-cluster", "--inventory", "/etc/accelfleet/inventory.json",
                   "--cluster", "ml-gke", "--namespace", "accelfleet-gate",
                   "--health-port", "8080", "--metrics-port", "9090")
    assert result.exit_code == 0, result.output
    (request,) = seen
    assert (request.in_cluster, request.inventory, request.cluster, request.namespace,
            request.health_port, request.metrics_port, request.once) == (
        True, Path("/etc/accelfleet/inventory.json"), "ml-gke", "accelfleet-gate", 8080, 9090,
        False)


def test_in_cluster_the_controller_serves_health_and_metrics_and_proves(
        fake_cluster: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """In the cluster: the ServiceAccount's config (here: the fake's address, as
    load_incluster_config would set it), the inventory file, /healthz, /readyz, /metrics."""
    import socket
    import threading
    import urllib.request

    from kubernetes import client as k
    from kubernetes import config

    from smoke.gate.session import GateRequest, run_gate

    def incluster() -> None:
        conf = k.Configuration()
        conf.host = fake_cluster.url
        k.Configuration.set_default(conf)

    monkeypatch.setattr(config, "load_incluster_config", incluster)
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "history.sqlite"))
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(gated_inventory().to_dict()), encoding="utf-8")
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    n = "gke-h100-train-0"
    fake_cluster.set_node_output(n, h100_report(n, 800.0))
    stop = threading.Event()
    request = GateRequest(in_cluster=True, inventory=inv, cluster="ml-gke",
                          namespace=NAMESPACE, health_port=ports[0], metrics_port=ports[1],
                          lease_s=2.0)
    thread = threading.Thread(target=run_gate, args=(request, stop), daemon=True)
    thread.start()
    try:
        fake_cluster.join([gke_gated_node("h100-train", n)])
        wait_for(lambda: gate_state(fake_cluster, n) == "proven")

        def get(port: int, path: str) -> tuple[int, str]:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}") as resp:
                return resp.status, resp.read().decode()

        assert get(ports[0], "/healthz")[0] == 200 and get(ports[0], "/readyz")[0] == 200
        code, text = get(ports[1], "/metrics")
        assert code == 200 and 'accelfleet_gate_nodes{cluster="ml-gke",pool="h100-train",' \
            'team="research",state="proven"} 1' in text
    finally:
        stop.set()
        thread.join(60)
        k.Configuration.set_default(None)
