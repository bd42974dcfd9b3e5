"""What the gate reads, checked where it comes in (issue 35), without a cluster: the shape of
Node, Pod and Lease objects (`smoke.cluster.objects`), a proof annotation that counts
(`smoke.gate.nodes`), client-go's reflector backoff and the bounded watch line
(`smoke.gate._watch`), and who is blamed when a unit proven as one fails
(`smoke.gate._proof.judge`)."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fleet.labels import GATE_LABEL, GATE_PROOF_ANNOTATION, POOL_LABEL
from smoke.cluster.objects import lease_problem, node_problem, pod_problem, valid
from smoke.gate import nodes as N
from tests.smoke.gate_cluster import gke_gated_node

GOOD = gke_gated_node("h100-train", "gke-h100-train-0")


def _broken(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """GOOD with the field at dotted `path` set to `value` (a key '-' deletes it)."""
    node = copy.deepcopy(base if base is not None else GOOD)
    *parents, last = path.split(".")
    here: Any = node
    for p in parents:
        here = here[int(p)] if isinstance(here, list) else here.setdefault(p, {})
    if value == "-":
        here.pop(last, None)
    elif isinstance(here, list):
        here[int(last)] = value
    else:
        here[last] = value
    return node


# each a Node no API server defines: the issue named three (a string for taints, for the
# conditions, a list for the annotations); the rest are of the same class
MALFORMED = {
    "taints a string": ("spec.taints", "nvidia.com/gpu=present:NoSchedule"),
    "conditions a string": ("status.conditions", "Ready"),
    "annotations a list": ("metadata.annotations", ["a=b"]),
    "labels a list": ("metadata.labels", [POOL_LABEL]),
    "a label value a number": (f"metadata.labels.{POOL_LABEL}", 7),
    "an annotation value null": ("metadata.annotations.x", None),
    "no metadata": ("metadata", "-"),
    "metadata a string": ("metadata", "gke-h100-train-0"),
    "no name": ("metadata.name", "-"),
    "a null name": ("metadata.name", None),
    "an empty name": ("metadata.name", ""),
    "a name of 300 characters": ("metadata.name", "n" * 300),
    "resourceVersion a number": ("metadata.resourceVersion", 12),
    "creationTimestamp a number": ("metadata.creationTimestamp", 1700000000),
    "spec a list": ("spec", []),
    "status a string": ("status", "Ready"),
    "a taint a string": ("spec.taints.0", "gpu"),
    "a taint key a number": ("spec.taints.0.key", 5),
    "a taint without an effect": ("spec.taints.0.effect", "-"),
    "a condition a list": ("status.conditions.0", ["Ready", "True"]),
    "a condition type null": ("status.conditions.0.type", None),
    "a condition time a number": ("status.conditions.0.lastTransitionTime", 3),
    "unschedulable a string": ("spec.unschedulable", "yes"),
    "nodeInfo a string": ("status.nodeInfo", "boot"),
    "annotations past 256 KiB": ("metadata.annotations.big", "x" * (256 * 1024 + 1)),
    "a million taints": ("spec.taints", [{"key": "k", "effect": "NoSchedule"}] * 10**6),
}


def test_a_recorded_node_reads_and_nulls_stand_for_absent_fields() -> None:
    assert node_problem(GOOD) == ""
    for path in ("spec", "status", "spec.taints", "status.conditions", "metadata.labels",
                 "metadata.annotations", "metadata.uid"):
        assert node_problem(_broken(path, None)) == "", path


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_node_is_refused_whole_with_its_reason(case: str) -> None:
    path, value = MALFORMED[case]
    node = _broken(path, value)
    problem = node_problem(node)
    assert problem, case
    with pytest.raises(N.Malformed) as raised:
        N.GateNode.of(node)  # never half-read (a string's characters taken for taints)
    assert raised.value.problem == problem


def test_things_that_are_no_object_at_all_are_refused() -> None:
    for item in (None, "node", 3, [GOOD], {"kind": "Node"}):
        assert node_problem(item) and pod_problem(item) and lease_problem(item)
    good, bad = valid([GOOD, "x", _broken("spec.taints", "t"), None], node_problem)
    assert [n["metadata"]["name"] for n in good] == ["gke-h100-train-0"]
    assert [name for name, _ in bad] == ["", "gke-h100-train-0", ""]


def test_pods_and_leases_are_checked_for_the_fields_read() -> None:
    pod = {"metadata": {"name": "p", "ownerReferences": [{"kind": "DaemonSet"}]},
           "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}
    assert pod_problem(pod) == ""
    for path, value in (("metadata.ownerReferences", "DaemonSet"),
                        ("metadata.ownerReferences.0", "DaemonSet"),
                        ("metadata.ownerReferences.0.kind", None), ("status.phase", 1),
                        ("spec.nodeName", ["n"]), ("status", "Running")):
        assert pod_problem(_broken(path, value, pod)), path
    lease = {"metadata": {"name": "accelfleet-gate", "resourceVersion": "5"},
             "spec": {"holderIdentity": "a", "renewTime": "2026-11-28T10:00:00.000000Z",
                      "leaseDurationSeconds": 15}}
    assert lease_problem(lease) == ""
    for path, value in (("spec", "held"), ("spec.holderIdentity", 1),
                        ("spec.renewTime", 1700000000), ("spec.leaseDurationSeconds", "15"),
                        ("spec.leaseDurationSeconds", 0), ("spec.leaseDurationSeconds", True),
                        ("spec.leaseDurationSeconds", 2**40),
                        ("metadata.annotations", ["x"])):
        assert lease_problem(_broken(path, value, lease)), path


# -- the proof annotation ---------------------------------------------------------------------
def _proven(proof: Any) -> N.GateNode:
    node = copy.deepcopy(GOOD)
    node["spec"]["taints"] = [t for t in node["spec"]["taints"]
                              if t["key"] != N.GATE_TAINT_KEY]
    node["metadata"].setdefault("labels", {})[GATE_LABEL] = "proven"
    if isinstance(proof, dict) and "uid" not in proof:  # the node it was written for
        proof = {**proof, "uid": node["metadata"].get("uid", ""),
                 "boot": ((node.get("status") or {}).get("nodeInfo") or {}).get("bootID", "")}
    node["metadata"].setdefault("annotations", {})[GATE_PROOF_ANNOTATION] = (
        proof if isinstance(proof, str) else json.dumps(proof))
    return N.GateNode.of(node)


def _stamp(when: datetime, fmt: str = "%Y-%m-%dT%H:%M:%SZ") -> str:
    return when.strftime(fmt)


def _proof(**change: Any) -> dict[str, Any]:
    now = datetime.now(UTC) - timedelta(hours=1)
    return {"at": _stamp(now), "run": "r2611281000-ab12", "verdict": "pass", "tiers": "0-2",
            "version": "1", "peers": [], **change}


def test_a_proof_with_its_offset_counts_and_ages() -> None:
    node = _proven(_proof())
    assert node.proof_problem == "" and node.proof is not None
    assert 3500 < N.proof_age_s(node) < 3700
    offset = datetime.now(UTC).astimezone(timezone_plus_2()) - timedelta(minutes=10)
    assert _proven(_proof(at=offset.isoformat())).proof is not None  # any offset


def timezone_plus_2() -> Any:
    from datetime import timezone

    return timezone(timedelta(hours=2))


BAD_PROOFS = {
    # the issue's: no UTC offset (anyone who may patch nodes can write it; it crash-looped the
    # controller: TypeError comparing it with an aware time), and a proof a year ahead
    "no UTC offset": (_proof(at="2026-11-28T10:00:00"), "UTC offset"),
    "a year ahead": (_proof(at=_stamp(datetime.now(UTC) + timedelta(days=365))), "skew"),
    "an hour ahead": (_proof(at=_stamp(datetime.now(UTC) + timedelta(hours=1))), "skew"),
    "a date only": (_proof(at="2026-11-28"), "UTC offset"),
    "no time": (_proof(at="-"), "UTC offset"),
    "a number for the time": (_proof(at=1764324000), "UTC offset"),
    "a null time": (_proof(at=None), "UTC offset"),
    "garbage time": (_proof(at="yesterday"), "UTC offset"),
    "no run": (_proof(run=None), "run id"),
    "a run that is none of the gate's": (_proof(run="manual"), "run id"),
    "a failed verdict": (_proof(verdict="fail"), "no pass"),
    "not JSON": ("{at: now}", "not a JSON object"),
    "a JSON list": (json.dumps([_proof()]), "not a JSON object"),
    "nested past the parser": ("[" * 100_000 + "]" * 100_000, "not a JSON object"),
}


@pytest.mark.parametrize("case", sorted(BAD_PROOFS))
def test_a_proof_that_does_not_read_counts_for_nothing_and_is_due_at_once(case: str) -> None:
    proof, words = BAD_PROOFS[case]
    if isinstance(proof, dict) and proof.get("at") == "-":
        proof = {k: v for k, v in proof.items() if k != "at"}
    node = _proven(proof)
    assert node.proof is None
    assert words in node.proof_problem
    assert N.proof_age_s(node) == math.inf  # re-proven at once, never "never"
    assert node.state == N.PROVEN  # the label stands until its re-proof claims it


def test_api_times_without_an_offset_read_as_none_never_as_naive_times() -> None:
    node = _broken("status.conditions.0.lastTransitionTime", "2026-11-28T10:00:00")
    node = _broken("metadata.creationTimestamp", "2026-11-28T10:00:00", node)
    g = N.GateNode.of(node)
    assert g.created is None
    assert all(t is None or t.tzinfo is not None for t in (g.ready_since, g.created))


# -- the watch: client-go's reflector backoff, a bounded line -----------------------------------
def test_the_backoff_is_client_gos_reflector_one() -> None:
    from smoke.gate._watch import Backoff

    now = [0.0]
    b = Backoff(clock=lambda: now[0])
    steps = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for step in steps:
        got = b.next()
        assert step <= got <= 2 * step  # jitter 1.0: up to twice the step
        now[0] += 1.0
    now[0] += 121.0  # two quiet minutes: from the start again
    assert 0.8 <= b.next() <= 1.6


class _Resp:
    """A watch response whose body is `chunks` (a generator may never end)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.read_bytes = chunks, 0

    def stream(self, amt: int, decode_content: bool = False) -> Iterator[bytes]:
        for c in self.chunks:
            assert len(c) <= amt
            self.read_bytes += len(c)
            yield c


def test_a_watch_line_that_never_ends_is_cut_at_its_bound() -> None:
    from smoke.gate._watch import READ_BYTES, LineTooLong, lines

    def endless() -> Iterator[bytes]:
        yield b'{"type": "ADDED"}\n{"type": "MODIFIED", "object": {"a": "'
        while True:
            yield b"x" * READ_BYTES

    resp = _Resp(endless())
    got = []
    with pytest.raises(LineTooLong):
        for line in lines(resp, max_line_bytes=2**20):
            got.append(line)
    assert got == [b'{"type": "ADDED"}']
    assert resp.read_bytes <= 2**20 + 2 * READ_BYTES  # memory held: the bound, not more
    resp = _Resp(iter([b"a\nb", b"c\n", b"\n", b"d"]))
    assert list(lines(resp, 10)) == [b"a", b"bc", b"", b"d"]


# -- blame: a unit proven as one passes whole or not at all ----------------------------------------
def _report(hosts: list[str], failing: dict[str | None, str]) -> Any:
    from smoke.cluster.run import Check, NodeOutcome, PoolReport, PoolStatus, RunReport
    from smoke.probes.results import HostReport, ProbeResult, Verdict

    outcomes = tuple(NodeOutcome(i, f"p{i}", h, HostReport(
        h, "jax", "tpu", {}, 2, (ProbeResult("tpu0", "matmul_tflops", 2, Verdict.PASS, "ok",
                                             1.0, 1.0, "TFLOP/s"),)), 0)
        for i, h in enumerate(hosts))
    checks = tuple(Check(node, ProbeResult("host", probe, 3, Verdict.FAIL, "too slow", 1.0,
                                           2.0, "GB/s")) for node, probe in failing.items())
    pool = PoolReport("v5p-slice", "ml-gke", "v5p", "jax", len(hosts), PoolStatus.DONE,
                      outcomes, checks)
    return RunReport("r2611281000-ab12", "s", "", 1.0, "", "", (pool,))


HOSTS = [f"h{i}" for i in range(16)]


def test_a_sixteen_host_slice_with_one_bad_host_blames_it_and_proves_none_of_the_others(
        ) -> None:
    from smoke.gate._proof import FAIL, UNIT, Unit, judge

    out = judge(_report(HOSTS, {"h7": "ici_bandwidth"}), Unit("v5p", tuple(HOSTS),
                                                               slice="np-1"))
    assert out.verdicts["h7"] == FAIL
    assert {out.verdicts[h] for h in HOSTS if h != "h7"} == {UNIT}  # never "proven"
    assert "h7" in out.reasons["h0"] and "slice np-1" in out.reasons["h0"]


def test_a_slice_failing_with_no_host_blamed_holds_every_host_and_says_so() -> None:
    from smoke.gate._proof import UNIT, Unit, judge

    out = judge(_report(HOSTS, {None: "psum"}), Unit("v5p", tuple(HOSTS), slice="np-1"))
    assert set(out.verdicts.values()) == {UNIT}  # none failed, none proven
    assert "no node is blamed" in out.reasons["h3"] and "psum" in out.reasons["h3"]


def test_a_fabric_unit_failing_as_a_unit_holds_its_new_nodes_and_blames_none() -> None:
    from smoke.gate._proof import UNIT, Unit, judge

    out = judge(_report(["a", "b"], {None: "fabric_allreduce"}), Unit("h100", ("a",), ("b",)))
    assert out.verdicts == {"a": UNIT}
    out = judge(_report(["a", "b"], {"b": "nvlink"}), Unit("h100", ("a",), ("b",)))
    assert out.verdicts == {"a": UNIT}  # its fabric peer failed: not proven on it


def test_a_batch_and_a_lone_node_are_judged_as_before() -> None:
    from smoke.gate._proof import FAIL, PASS, Unit, judge

    out = judge(_report(["a", "b"], {"b": "matmul"}), Unit("h100", ("a", "b"),
                                                            independent=True))
    assert out.verdicts == {"a": PASS, "b": FAIL}  # each node on its own results
    out = judge(_report(["a"], {None: "fabric"}), Unit("h100", ("a",)))
    assert out.verdicts == {"a": FAIL}  # alone: a failure naming no node is its own
