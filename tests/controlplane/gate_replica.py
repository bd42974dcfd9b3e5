"""One gate controller replica as a process of its own, for the leader-election tests on the
real control plane (a process can be stopped with SIGSTOP and resumed with SIGCONT, as a
hung or paused pod would be):

    python -m tests.controlplane.gate_replica KUBECONFIG IDENTITY LEASE_S LOG

It runs `smoke.gate.controller.Gate` on the example stack's gated inventory
(`tests.smoke.gate_cluster.gated_inventory`) against cluster `ml-gke` until SIGTERM, and
appends one JSON line to LOG for every leadership change it sees (`leader`), every node it
claims (`claim`) and every verdict it writes (`apply`), each with the wall clock (`t`); at the
end, `exit` with its counts. The test reads LOG to say what each replica did and when.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from smoke.gate.controller import Gate, GateOptions
from tests.smoke.gate_cluster import NAMESPACE, gated_inventory


class _Logged(Gate):
    """The controller, saying what it does (nothing else changed)."""

    log: Path

    def say(self, **what: Any) -> None:
        with self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"t": time.time(), **what}) + "\n")

    def _claim(self, unit: Any) -> Any:
        got = super()._claim(unit)
        if got is not None:
            self.say(event="claim", nodes=list(got.nodes),
                     run=self.inflight[got.nodes[0]][1])
        return got

    def _apply(self, unit: Any, pool: Any, run_id: str, outcome: Any, proof_s: float) -> None:
        self.say(event="apply", nodes=list(unit.nodes), run=run_id,
                 verdicts=dict(outcome.verdicts))
        super()._apply(unit, pool, run_id, outcome, proof_s)


def main(argv: list[str]) -> int:
    from kubernetes import config

    kubeconfig, identity, lease_s, log = argv[0], argv[1], float(argv[2]), Path(argv[3])
    client = config.new_client_from_config(config_file=kubeconfig)
    gate = _Logged(client, "ml-gke", gated_inventory(), GateOptions(
        namespace=NAMESPACE, identity=identity, lease_s=lease_s, timeout_s=60, poll_s=0.1,
        watch_timeout_s=30, retry_first_s=0.5))
    gate.log = log
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def watch_leadership() -> None:
        was, said = None, 0.0
        while not stop.is_set():
            now = gate.is_leader() if gate.elector is not None else False
            if now != was:
                gate.say(event="leader", leader=now)
                was = now
            elif time.monotonic() - said > 1.0:  # alive (a test sees a resumed replica run)
                gate.say(event="tick", leader=now)
            else:
                time.sleep(0.02)
                continue
            said = time.monotonic()
            time.sleep(0.02)

    threading.Thread(target=watch_leadership, daemon=True).start()
    gate.say(event="start", identity=identity)
    summary = gate.run(stop)
    gate.say(event="exit", proofs=summary.proofs,
             results={n: r.verdict for n, r in summary.results.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
