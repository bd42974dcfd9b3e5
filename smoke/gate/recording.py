"""Whether the gate controller records its proofs in the smoke history (smoke.history), and
what it says about it: `gate run` (cli/gate.py) says the line once at the start, `run_gate`
(smoke.gate.session) passes the choice to the controller (GateOptions.record_history)."""

from __future__ import annotations

from pathlib import Path

IN_CLUSTER_HISTORY_OFF = (
    "history: not recorded in the cluster (the controller's root filesystem is read-only and "
    "its /tmp is lost with the pod); pass --history FILE on a mounted volume to record each "
    "proof, or read the proofs on the nodes (`accelfleet gate status`)")


def history_choice(in_cluster: bool, history: Path | None, record: bool
                   ) -> tuple[bool, str]:
    """Whether the controller records its proofs in the smoke history, and the one line to
    say about it ('' for nothing). Out of the cluster: as asked (`--no-history` turns it off).
    In the cluster: off unless `--history FILE` names where (a mounted volume), said once at
    the start, never once per proof (issue 35: every proof logged a history error there)."""
    if not record:
        return False, ""
    if in_cluster and history is None:
        return False, IN_CLUSTER_HISTORY_OFF
    return True, ""
