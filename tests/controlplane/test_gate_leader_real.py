"""Two gate controller replicas, each a process of its own, elect a leader on a real
coordination.k8s.io Lease (issue 34 item 3; issue 35 "Two leaders"): the leader is stopped
with SIGSTOP in the middle of a proof (a hung or paused pod), the standby takes over once the
Lease has not changed for its duration, adopts the abandoned proof and proves the nodes; the
stopped one, resumed with SIGCONT, steps down before acting: after its resume it claims no
node and writes no verdict (its renew deadline passed while it was stopped: client-go's
RenewDeadline, `smoke.gate._lease`).

Each replica is `python -m tests.controlplane.gate_replica`, which logs what it does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.cluster import RealCluster
from tests.controlplane.test_gate_real import node, proof, proven, state, wait_for
from tests.smoke.gate_cluster import NAMESPACE, gke_gated_node, h100_report

pytestmark = pytest.mark.controlplane
ROOT = Path(__file__).resolve().parents[2]
POOL = "h100-train"
LEASE_S = 6.0  # renew deadline 4 s, retry 0.8 s: no spurious step-down on a loaded machine


class Replica:
    def __init__(self, kubeconfig: Path, identity: str, log: Path) -> None:
        self.identity, self.log = identity, log
        self.out = log.with_suffix(".out").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.controlplane.gate_replica", str(kubeconfig),
             identity, str(LEASE_S), str(log)], cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)

    def lines(self) -> list[dict[str, Any]]:
        try:
            text = self.log.read_text(encoding="utf-8")
        except OSError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def claims(self) -> list[dict[str, Any]]:
        return [e for e in self.lines() if e["event"] == "claim"]

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.out.close()


@pytest.fixture
def start_replica(kube: RealCluster, tmp_path: Path) -> Iterator[Callable[[str], Replica]]:
    """Start a replica process by its identity; every one is stopped after the test."""
    kc = kube.kubeconfig(tmp_path / "kubeconfig")
    made: list[Replica] = []

    def start(identity: str) -> Replica:
        made.append(Replica(kc, identity, tmp_path / f"{identity}.jsonl"))
        return made[-1]

    try:
        yield start
    finally:
        for r in made:
            r.stop()


def holder(kube: RealCluster) -> str:
    lease = kube.get("leases", NAMESPACE, "accelfleet-gate") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def test_a_stopped_leader_is_replaced_and_once_resumed_acts_no_more(
        kube: RealCluster, start_replica: Callable[[str], Replica]) -> None:
    first, slow, late = "gke-h100-train-0", "gke-h100-train-1", "gke-h100-train-2"
    for n in (first, late):
        kube.set_node_output(n, h100_report(n, 800.0))
    report = h100_report(slow, 800.0)
    kube.set_node_command(slow, [sys.executable, "-c",
                                 f"import time; time.sleep(4); print({report!r})"])
    a = start_replica("replica-a")
    wait_for(lambda: holder(kube) == "replica-a")
    b = start_replica("replica-b")
    wait_for(lambda: any(e["event"] == "start" for e in b.lines()))
    kube.add_node_object(gke_gated_node(POOL, first))
    wait_for(lambda: proven(kube, first))
    # the leader claims the slow node and is stopped in the middle of its proof
    kube.add_node_object(gke_gated_node(POOL, slow))
    wait_for(lambda: any(slow in c["nodes"] for c in a.claims()))
    abandoned = next(c["run"] for c in a.claims() if slow in c["nodes"])
    a.signal(signal.SIGSTOP)
    stopped_at = time.time()
    wait_for(lambda: holder(kube) == "replica-b")
    took_over_s = time.time() - stopped_at
    kube.add_node_object(gke_gated_node(POOL, late), ready=False)
    # the new leader adopts the abandoned proof and proves the node afresh
    wait_for(lambda: proven(kube, slow))
    assert proof(kube, slow)["run"] != abandoned
    # resumed: the renew deadline passed long ago; the node turning Ready now is the new
    # leader's alone, and the resumed replica's own proof (abandoned) writes nothing
    a.signal(signal.SIGCONT)
    resumed_at = time.time()
    kube.set_ready(late)
    wait_for(lambda: proven(kube, late))
    wait_for(lambda: any(e["event"] == "leader" and not e["leader"] and
                         e["t"] >= resumed_at for e in a.lines()) or
             a.lines()[-1]["t"] >= resumed_at)  # the resumed replica has run again
    time.sleep(LEASE_S)  # whatever it was about to do, it has had the time to do it
    a.stop()  # and on its way out (its abandoned proof is cancelled) it writes nothing either
    assert any(e["event"] == "exit" for e in a.lines())
    after = [e for e in a.lines() if e["t"] >= resumed_at]
    assert not [e for e in after if e["event"] in ("claim", "apply")], after
    assert not [e for e in a.lines() if e["event"] == "leader" and e["leader"]
                and e["t"] >= stopped_at]
    b_runs = {c["run"] for c in b.claims()}
    assert proof(kube, slow)["run"] in b_runs and proof(kube, late)["run"] in b_runs
    assert holder(kube) == "replica-b"
    for n in (slow, late):  # the new leader's proof stands: nothing undid it
        assert proven(kube, n) and state(kube, n) == "proven"
        reasons = [e["reason"] for e in kube.events("Node", n)
                   if e["reason"].startswith("GateProof")]
        assert reasons == ["GateProofPassed"], (n, reasons)
    assert node(kube, first)["metadata"]["labels"]["accelfleet.io/gate"] == "proven"
    print(f"\nfigure: standby took the Lease over {took_over_s:.1f} s after the leader was "
          f"stopped (lease {LEASE_S:.0f} s)")
