"""Issue 35 "Identity": a gate verdict belongs to the Node object (metadata.uid) and the boot
(status.nodeInfo.bootID) it was proven on (smoke.gate.nodes). The end-to-end cases run on the
real control plane (tests/controlplane/test_gate_real.py); these are the rules themselves."""

from __future__ import annotations

import json
from typing import Any

from fleet.labels import GATE_LABEL, GATE_PROOF_ANNOTATION, GATE_RUN_ANNOTATION, GATE_TAINT_KEY
from smoke.gate import nodes as N


def _node(*, uid: str = "uid-1", boot: str = "boot-1", proof: dict[str, Any] | None = None,
          label: str | None = None, tainted: bool = False, run: str = "") -> dict[str, Any]:
    annotations = {}
    if proof is not None:
        annotations[GATE_PROOF_ANNOTATION] = json.dumps(proof)
    if run:
        annotations[GATE_RUN_ANNOTATION] = run
    return {"metadata": {"name": "n1", "uid": uid, "resourceVersion": "7",
                         "labels": {"accelfleet.io/pool": "p", **(
                             {GATE_LABEL: label} if label else {})},
                         "annotations": annotations},
            "spec": {"taints": [N.gate_taint()] if tainted else []},
            "status": {"nodeInfo": {"bootID": boot},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


PROOF = {"run": "r2611281200-ab12", "verdict": "pass", "at": "2026-11-28T12:00:00Z", "uid": "uid-1",
         "boot": "boot-1"}


def test_a_proof_of_this_node_and_this_boot_holds() -> None:
    g = N.GateNode.of(_node(proof=PROOF, label="proven"))
    assert g.proof_holds and g.state == N.PROVEN


def test_a_proof_of_another_node_object_of_the_name_does_not_hold() -> None:
    g = N.GateNode.of(_node(uid="uid-2", proof=PROOF, label="proven"))
    assert not g.proof_holds and g.state == N.UNPROVEN


def test_a_proof_from_before_a_reboot_does_not_hold() -> None:
    g = N.GateNode.of(_node(boot="boot-2", proof=PROOF, label="proven"))
    assert g.state == N.UNPROVEN


def test_a_proof_that_names_no_node_holds_for_none() -> None:
    # written before verdicts named their node: it holds for no node, so the node is due
    # for its re-proof at once (idle, never evicted), its label standing until then
    legacy = N.GateNode.of(_node(proof={k: v for k, v in PROOF.items()
                                        if k not in ("uid", "boot")}, label="proven"))
    assert not legacy.proof_holds and N.proof_age_s(legacy) == float("inf")
    bare = N.GateNode.of(_node(label="proven"))  # a label, no proof
    assert not bare.proof_holds and N.proof_age_s(bare) == float("inf")
    other = N.GateNode.of(_node(proof={**PROOF, "uid": "uid-0"}, label="proven"))
    assert other.state == N.UNPROVEN  # another Node object's pass: proven afresh now


def test_claiming_an_untainted_unproven_node_puts_the_gate_taint_back() -> None:
    g = N.GateNode.of(_node(boot="boot-2", proof=PROOF, label="proven"))
    body = N.claim_patch(g, "r2")
    assert [t["key"] for t in body["spec"]["taints"]] == [GATE_TAINT_KEY]
    assert body["metadata"]["labels"][GATE_LABEL] == N.PROVING
    tainted = N.GateNode.of(_node(tainted=True))
    assert "spec" not in N.claim_patch(tainted, "r2")  # nothing to restore


def test_a_pass_is_written_only_on_the_node_its_proof_claimed() -> None:
    proof = {**PROOF, "run": "r2611281201-cd34"}
    mine = N.GateNode.of(_node(tainted=True, label="proving", run=proof["run"]))
    assert N.proven_patch(mine, proof) is not None
    again = N.GateNode.of(_node(uid="uid-2", tainted=True))  # registered again meanwhile
    assert N.proven_patch(again, {**proof, "uid": "uid-1"}) is None
    rebooted = N.GateNode.of(_node(boot="boot-9", tainted=True, label="proving",
                                   run=proof["run"]))
    assert N.proven_patch(rebooted, proof) is None
    other_run = N.GateNode.of(_node(tainted=True, label="proving", run="r3"))
    assert N.proven_patch(other_run, proof) is None
