"""Issue 30's hostile-API angle of the fuzz suite, bounded: every lying rule of
tests/fuzz/hostile_api.py once (for two answers, so the run can still finish in time), on a
healthy pool (a pass must then be every node's own) or, for the lies about nodes, on one
with a slow node (quarantine acts), and a few seeded random mixes. Each run exits 0, 1 or 2,
never passes a node it did not judge, and keeps what it measured. The long run
(benchmarks/fuzz_readers.py --api-cases) draws many more, with rules that lie on every
answer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.fuzz.hostile_api import LIES, ApiCase, random_case, run_api_case

pytest.importorskip("torch")


def _holds(case: ApiCase, tmp_path: Path) -> None:
    outcome = run_api_case(case, tmp_path)
    assert outcome.code in (0, 1, 2), outcome.output
    assert not outcome.traceback, outcome.output
    assert outcome.passed_untested == "", (outcome.passed_untested, outcome.output)
    assert outcome.lost == "", (outcome.lost, outcome.output)


def _slow_node(lie: str) -> bool:
    """A slow node where the lie is about quarantine's answers (nodes, patches, events), so
    that quarantine meets it; a healthy pool elsewhere, so that a pass is possible and must be
    every node's own."""
    return lie.startswith(("node-", "events-"))


@pytest.mark.parametrize("lie", sorted(LIES))
def test_each_lie_is_caught_or_survived(lie: str, tmp_path: Path) -> None:
    _holds(ApiCase(((lie, 2),), _slow_node(lie)), tmp_path)


@pytest.mark.parametrize("seed", range(4))
def test_seeded_mixes_of_lies(seed: int, tmp_path: Path) -> None:
    case = random_case(random.Random(seed))
    case = ApiCase(tuple((lie, 2 if times < 0 else times) for lie, times in case.lies),
                   case.slow_node)
    _holds(case, tmp_path)


def test_a_lie_about_where_pods_ran_never_passes() -> None:
    """The rule the whole angle rests on, checked on its own: a pool whose pods all say they
    ran on one node is no pass (issue 30's first finding)."""
    from tests.fuzz.hostile_api import _untested_pass

    nodes = ["n0", "n1"]
    doc = {"pools": [{"nodes": [
        {"node": "n0", "report": {"host": "n0", "results": [{"verdict": "pass"}]}},
        {"node": "n0", "report": {"host": "n0", "results": [{"verdict": "pass"}]}}]}]}
    assert _untested_pass(0, doc, nodes) != ""
    assert _untested_pass(1, doc, nodes) == ""
