"""Pairwise cross-node checks (issue 28 item 2): the plan and the judgment (the launcher runs
them: tests/smoke/test_pair_rounds.py). Figures: the 2-node p5.48xlarge EFA all-reduce busbw
437.79 GB/s (aws-samples/awsome-distributed-training@7217859f, the fabric floor's reference,
floor 328.3); a node with 16 of its 32 EFA interfaces down moves half the bytes per second,
so every pair with it runs at about half (218.9): the degraded figures are the healthy one
cut by that physics."""

from __future__ import annotations

import pytest

from smoke.cluster._pairs import judge_pairs, rounds
from smoke.probes.thresholds import fabric_threshold

HEALTHY = 437.79
HALF_EFA = HEALTHY / 2


def _floor() -> float:
    floor = fabric_threshold("p5.48xlarge", "efa").floor_abs
    assert floor is not None
    return floor


def _measure(pairs: list[tuple[str, str]], bad: set[str]) -> dict[tuple[str, str], float]:
    return {p: HALF_EFA if bad & set(p) else HEALTHY for p in pairs}


def test_rounds_are_disjoint_pairs_and_every_node_meets_two_partners() -> None:
    nodes = [f"n{i}" for i in range(8)]
    first, second = rounds(nodes)
    for r in (first, second):
        flat = [n for p in r for n in p]
        assert len(flat) == len(set(flat)) == 8  # N/2 pairs at once, no node twice
    assert not set(first) & set(second) and not {(b, a) for a, b in first} & set(second)
    assert rounds(["a", "b"]) == [[("a", "b")]] and rounds(["a"]) == []
    assert rounds(["a", "b", "c"]) == [[("a", "b")], [("b", "c")]]


@pytest.mark.parametrize(("n", "bad"), [(8, {"n5"}), (8, {"n0"}), (16, {"n7", "n12"}),
                                        (8, {"n2", "n3"}), (3, {"n2"})])
def test_the_slow_node_is_named(n: int, bad: set[str]) -> None:
    nodes = [f"n{i}" for i in range(n)]
    figures: dict[tuple[str, str], float] = {}
    for r in rounds(nodes):
        figures |= _measure(r, bad)
    got = judge_pairs(figures, _floor())
    assert set(got.named) == bad and got.unresolved == () and not got.ok


def test_a_healthy_pool_passes_and_two_nodes_alone_cannot_be_told_apart() -> None:
    nodes = [f"n{i}" for i in range(8)]
    figures = {p: HEALTHY for r in rounds(nodes) for p in r}
    assert judge_pairs(figures, _floor()).ok
    two = judge_pairs(_measure(rounds(["a", "b"])[0], {"b"}), _floor())
    assert two.named == () and two.unresolved == (("a", "b"),)


def test_pair_checks_name_only_the_slow_node_for_quarantine() -> None:
    from smoke.cluster._pairs import pair_checks

    nodes = [f"n{i}" for i in range(4)]
    figures = {p: v for r in rounds(nodes) for p, v in _measure(r, {"n1"}).items()}
    checks = pair_checks(figures, {}, fabric_threshold("p5.48xlarge", "efa", "h100-80gb"))
    assert [c.node for c in checks if c.node is not None] == ["n1"]
    assert sum(c.result.verdict.value == "fail" for c in checks if c.node is None) == 2


def test_a_failed_pair_collective_counts_as_slow_and_no_floor_compares_pairs() -> None:
    from smoke.cluster._pairs import pair_checks
    from smoke.probes.thresholds import REGISTRY

    nodes = ["a", "b", "c", "d"]
    first, second = rounds(nodes)
    figures = {p: HEALTHY for p in first + second if "c" not in p}
    errors = {p: "NCCL used Socket, not the pool's fabric" for p in first + second if "c" in p}
    named = [c.node for c in pair_checks(figures, errors, REGISTRY[("*", "fabric_busbw")])
             if c.node is not None]
    assert named == ["c"]
    halved = {p: HALF_EFA if "d" in p else HEALTHY for p in first + second}
    checks = pair_checks(halved, {}, REGISTRY[("*", "fabric_busbw")])  # no floor: vs median
    assert [c.node for c in checks if c.node is not None] == ["d"]


def test_a_warn_only_floor_names_the_slow_node_with_a_warning_never_a_failure() -> None:
    """p4d.24xlarge's EFA floor is p4de's, warn-only (no measurement of its own): the slow
    node is named, but quarantine (which acts on FAIL) leaves it."""
    from smoke.cluster._pairs import pair_checks

    th = fabric_threshold("p4d.24xlarge", "efa", "a100-40gb")
    assert not th.enforced and th.floor_abs == 58.7
    nodes = [f"n{i}" for i in range(4)]
    figures = {p: 39.0 if "n3" in p else 78.33 for r in rounds(nodes) for p in r}
    named = [c for c in pair_checks(figures, {}, th) if c.node is not None]
    assert [(c.node, c.result.verdict.value) for c in named] == [("n3", "warn")]


def test_a_tcpxo_node_at_half_its_nics_fails_and_one_nic_short_is_named_with_a_warning(
        ) -> None:
    """TCPXO (issue 37): fail below 0.75 x the measured 317.84 (238.4), warn below 0.9 x it
    (286.1). A node with 4 of its 8 NICs down moves half the bytes per second (158.9): it
    fails, named (before, above the scanner's 150, it only warned); 7 of 8 (278.1) warns."""
    from smoke.cluster._pairs import pair_checks

    th = fabric_threshold("a3-megagpu-8g", "tcpxo", "h100-80gb")
    nodes = [f"n{i}" for i in range(6)]
    figures = {p: 317.84 / 2 if "n4" in p else 317.84 for r in rounds(nodes) for p in r}
    named = [c for c in pair_checks(figures, {}, th) if c.node is not None]
    assert [(c.node, c.result.verdict.value) for c in named] == [("n4", "fail")]
    seven = {p: 317.84 * 7 / 8 if "n2" in p else 317.84 for r in rounds(nodes) for p in r}
    named = [c for c in pair_checks(seven, {}, th) if c.node is not None]
    assert [(c.node, c.result.verdict.value) for c in named] == [("n2", "warn")]
    assert "warning line 286.1" in named[0].result.reason
