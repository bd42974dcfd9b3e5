"""What the dry-run modules send covers what issue 34 names (no control plane needed): every
kind of a gate proof, including a re-proof through the pool's Kueue queue at the gate's
priority in the team's namespace, the WorkloadPriorityClass and the per-team Role and
RoleBinding the gate's component plans, the JobSets of multi-host and multislice TPU pools,
and the pair rounds of a fabric pool."""

from __future__ import annotations

from fleet.gate import REPROOF_PRIORITY_CLASS
from smoke.gate._proof import PRIORITY_CLASS_LABEL
from tests.controlplane._dry_run import (
    RUN_ID_RENDER,
    plan_objects,
    proof_objects,
    render_objects,
)

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def test_a_reproof_goes_through_the_teams_queue_at_the_gates_priority() -> None:
    reproofs = [m.body for m in proof_objects("example") if m.source.endswith("-reproof")
                and m.body["kind"] in ("Job", "JobSet")]
    firsts = [m.body for m in proof_objects("example") if m.source.endswith("-first")
              and m.body["kind"] in ("Job", "JobSet")]
    assert {b["kind"] for b in reproofs} == {"Job", "JobSet"}
    for body in reproofs:
        labels = body["metadata"]["labels"]
        assert labels[PRIORITY_CLASS_LABEL] == REPROOF_PRIORITY_CLASS
        assert labels[QUEUE_LABEL] == body["metadata"]["namespace"]  # the team's
    assert all(QUEUE_LABEL not in b["metadata"]["labels"] for b in firsts)


def test_the_gates_priority_class_roles_and_bindings_are_planned() -> None:
    planned = [m.body for m in plan_objects("example")]
    assert any(b["kind"] == "WorkloadPriorityClass" and
               b["metadata"]["name"] == REPROOF_PRIORITY_CLASS for b in planned)
    teams = {"research", "vision"}
    for kind in ("Role", "RoleBinding"):
        assert teams <= {b["metadata"]["namespace"] for b in planned if b["kind"] == kind}


def test_render_covers_jobsets_multislice_and_pair_rounds() -> None:
    made = render_objects("tpurouting", RUN_ID_RENDER)
    jobsets = [m.body for m in made if m.body["kind"] == "JobSet"]
    assert max(j["spec"]["replicatedJobs"][0]["replicas"] for j in jobsets) > 1  # multislice
    assert max(j["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"]
               for j in jobsets) > 1  # multi-host
    pairs = [m for m in render_objects("example", RUN_ID_RENDER) if "pair" in m.source]
    assert {m.body["kind"] for m in pairs} == {"Job", "Service"}
