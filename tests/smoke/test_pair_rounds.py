"""A fabric pool's pair rounds on the fake cluster (issue 28 item 2): "a pool of 4 with one
slow node names that node, and only it".

The pool: 4 recorded EKS p5.48xlarge nodes (tests/smoke/data/nodes) on EFA. Each node's pod is
tests/smoke/fake_fabric_agent.py: its collective (the pool's, then each pair's) runs at the
rate of its slowest member, and NCCL's transport is read from the real aws-ofi-nccl log
tests/smoke/data/nccl/nccl-efa-ofi-eks-p4d-gdrdma-info.log. Figures: healthy 437.79 GB/s, the
2-node p5.48xlarge EFA busbw the fabric floor is measured on (awsome-distributed-training@
7217859f, floor 0.75 x it = 328.3); the slow node has 16 of its 32 EFA interfaces down, so it
moves half the bytes per second: 218.9 (the healthy figure cut by that physics)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.smoke.nodes import pool_node
from tests.smoke.test_cluster_run import assert_nothing_left, stack_pools

HERE = Path(__file__).parent
LOG = HERE / "data" / "nccl" / "nccl-efa-ofi-eks-p4d-gdrdma-info.log"
HEALTHY, HALF_EFA = 437.79, 437.79 / 2
STACK = """\
config:
  accelfleet:fleet:
    clouds:
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: eks, cloud: aws}
    teams:
      - {name: research}
    smoke:
      namespace: smoke-test
      timeout_s: 120
    pools:
      - {name: p5, cluster: eks, team: research, accelerator: p5.48xlarge, nodes: 4,
         zone: us-east-1a}
"""


def _run(cluster: Any, tmp_path: Path, rates: dict[str, float]
         ) -> tuple[int, str, dict[str, Any]]:
    text = STACK.replace("nodes: 4", f"nodes: {len(rates)}")
    stack = tmp_path / "Pulumi.pairs.yaml"
    stack.write_text(text, encoding="utf-8")
    resolved = stack_pools(text)["p5"]
    rates_file = tmp_path / "rates.json"
    rates_file.write_text(json.dumps(rates), encoding="utf-8")
    for node in rates:
        cluster.add_node_object(pool_node(resolved, node))
        cluster.set_node_command(node, [sys.executable, str(HERE / "fake_fabric_agent.py"),
                                        str(rates_file), str(LOG), str(tmp_path / "meet"),
                                        str(len(rates))])
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    result = CliRunner().invoke(app, ["smoke", "run", str(stack), "--kubeconfig", str(kc),
                                      "--context", "eks=fake", "--tier", "3", "--json"])
    text = result.stdout
    doc = json.loads(text[text.find("{\n"):text.rfind("\n}") + 2])
    return result.exit_code, result.output, doc


def _pair_checks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    [pool] = doc["pools"]
    return [c for c in pool["checks"] if c["result"]["probe"] == "fabric_pair_busbw"]


def test_a_pool_of_4_with_one_slow_node_names_that_node_and_only_it(
        cluster: Any, tmp_path: Path) -> None:
    nodes = [f"p5-node-{i}" for i in range(4)]
    slow = nodes[2]
    code, output, doc = _run(cluster, tmp_path, {n: HALF_EFA if n == slow else HEALTHY
                                                      for n in nodes})
    assert code == 1, output
    checks = _pair_checks(doc)
    named = [c for c in checks if c["node"] is not None]
    assert [c["node"] for c in named] == [slow], checks
    assert named[0]["result"]["verdict"] == "fail" and "328.3" in named[0]["result"]["reason"]
    pairs = {c["result"]["device"]: c["result"] for c in checks if c["node"] is None}
    # round 1 pairs the nodes in the order of their pods' completion index, round 2 rotates
    # by one: which node got which index is the scheduler's choice (the real one spreads
    # them; the fake placed index i on node i), so the pairs follow the run's own order
    [pool] = doc["pools"]
    order = [n["node"] for n in sorted(pool["nodes"], key=lambda n: n["index"])]
    assert sorted(order) == nodes
    assert set(pairs) == {f"{order[0]}+{order[1]}", f"{order[2]}+{order[3]}",
                          f"{order[1]}+{order[2]}", f"{order[3]}+{order[0]}"}
    for where, r in pairs.items():
        want = "fail" if slow in where.split("+") else "pass"
        assert r["verdict"] == want and r["measured"] == pytest.approx(
            HALF_EFA if want == "fail" else HEALTHY, rel=1e-6), (where, r)
    # the pool-wide collective failed on every node (it runs at the slow node's rate) ...
    fabric = [r for n in pool["nodes"] for r in n["report"]["results"]
              if r["probe"] == "fabric_busbw"]
    assert len(fabric) == 4 and all(r["verdict"] == "fail" for r in fabric)
    # ... but only the named node is a node's own failure: quarantine acts on it alone
    from smoke.cluster.quarantine import failing_nodes
    from smoke.cluster.run import PoolReport

    assert set(failing_nodes(PoolReport.from_dict(pool))) == {slow}
    assert_nothing_left(cluster, doc["run_id"])


def test_a_healthy_fabric_pool_runs_no_pair_round(cluster: Any, tmp_path: Path) -> None:
    """The collective met the floor: every pair would (it runs at the slowest node's rate)."""
    nodes = [f"p5-node-{i}" for i in range(3)]
    code, output, doc = _run(cluster, tmp_path, dict.fromkeys(nodes, HEALTHY))
    assert code == 0, output
    assert _pair_checks(doc) == []
    assert not [o for o in cluster.objects() if o["metadata"].get("labels", {}).get(
        "accelfleet.io/pair")]


def test_a_pair_round_gets_a_timeout_of_its_own_past_the_runs_first_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's deadline bounds every API call (issue 29); a pair round starts after the
    pool's collective, which may have spent the first timeout whole. So before a round
    submits its Jobs the deadline moves to a timeout (plus the run's grace) from then: a
    round's calls are not cut at the first deadline. Checked on the launcher's own round
    step, with the Jobs' creation recorded instead of sent."""
    import threading
    import time

    from smoke.cluster import _pairs as PR
    from smoke.cluster import launcher as L

    cr = L._ClusterRun.__new__(L._ClusterRun)
    cr.timeout_s, cr.stop, cr.display = 600, threading.Event(), L._NoDisplay()
    cr.deadline = time.monotonic() + 1.0  # the first deadline: about spent
    seen: list[float] = []
    monkeypatch.setattr(cr, "_create", lambda obj: seen.append(cr.deadline), raising=False)
    monkeypatch.setattr(PR, "pair_objects",
                        lambda w, name, pair: [{"kind": "Job", "metadata": {"name": name}}])

    class _Workload:
        name = "smoke-p5"
        pool = type("Pool", (), {"name": "p5"})

    pool = L._Pool.__new__(L._Pool)
    pool.workload = _Workload()  # type: ignore[assignment]
    pool.pairs = L._PairRounds([[("a", "b"), ("c", "d")], [("b", "c"), ("d", "a")]])
    before = time.monotonic()
    cr._next_round(pool)
    assert len(seen) == 2  # both pairs of the first round submitted
    assert all(d >= before + 600 for d in seen)  # each under the moved deadline
    assert pool.pairs.deadline >= before + 600
