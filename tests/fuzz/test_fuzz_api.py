"""Issue 30's hostile-API angle of the fuzz suite, bounded: every lying rule of
tests/fuzz/hostile_api.py once (for two answers, so the run can still finish in time), on a
healthy pool (a pass must then be every node's own) or, for the lies about nodes, on one
with a slow node (quarantine acts), and a few seeded random mixes. Each run exits 0, 1 or 2,
never passes a node it did not judge, and keeps what it measured. The long run
(benchmarks/fuzz_readers.py --api-cases) draws many more, with rules that lie on every
answer.

Issue 29 item 9, the server that never finishes (hostile_api.ANGLES), bounded here to a few
angles on every answer (each case ends by its deadline: a few seconds with the near deadline
hostile_api sets; HANG_S is only a guard) and SIGINT and SIGTERM while the pod list drips in,
to a console process; the long run draws every angle, mixed with lies."""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path

import pytest

from tests.fuzz.hostile_api import (
    LIES,
    ApiCase,
    ApiOutcome,
    random_case,
    run_api_case,
    run_interrupt_case,
)

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


HANG_S = 240.0  # a guard only: a case that still runs after this hangs


def _bounded(case: ApiCase, tmp_path: Path) -> ApiOutcome:
    box: list[ApiOutcome] = []
    t = threading.Thread(target=lambda: box.append(run_api_case(case, tmp_path)), daemon=True)
    t.start()
    t.join(HANG_S)
    if t.is_alive():
        pytest.fail(f"the run still runs after {HANG_S} s with {case.to_dict()}: it hangs")
    return box[0]


# each angle on every answer, and the words the run must say about it
ANGLE_WORDS = {
    "drip-pod-list": "did not finish its answer within",
    "endless-pages": "did not end within 100 pages",
    "endless-log": "log ran past",
    "drip-cleanup": "deleting the run's",
}


@pytest.mark.parametrize("angle", sorted(ANGLE_WORDS))
def test_a_server_that_never_finishes_ends_the_run_by_its_deadline(
        angle: str, tmp_path: Path) -> None:
    case = ApiCase((), False, ((angle, -1),))
    outcome = _bounded(case, tmp_path)
    assert outcome.code in (1, 2), outcome.output  # never a pass, never exit 3
    assert not outcome.traceback, outcome.output
    assert outcome.past_deadline == "", (outcome.past_deadline, outcome.output)
    assert ANGLE_WORDS[angle] in outcome.output.replace("\n", " "), outcome.output
    assert "QUARANTINED" not in outcome.output, outcome.output  # a healthy pool: the API's
    # fault is never a node's
    assert outcome.lost == "", (outcome.lost, outcome.output)


def test_a_seeded_mix_of_angles_and_lies(tmp_path: Path) -> None:
    rng = random.Random(29)
    case = random_case(rng, angles=True)
    while not case.angles:
        case = random_case(rng, angles=True)
    outcome = _bounded(case, tmp_path)
    assert outcome.code in (0, 1, 2), outcome.output
    assert not outcome.traceback, outcome.output
    assert outcome.past_deadline == "", (outcome.past_deadline, outcome.output)
    assert outcome.passed_untested == "", (outcome.passed_untested, outcome.output)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_while_an_answer_drips_ends_the_run_and_cleans_up(
        sig: int, tmp_path: Path) -> None:
    """Issue 29 item 3: the console process, a real signal, a pod list dripping in; before,
    the run went on until it was killed (the read timeout never fired)."""
    outcome = run_interrupt_case(sig, "drip-pod-list", tmp_path)
    assert outcome.code is not None, f"still running {outcome.seconds_after_signal:.0f} s " \
        f"after the signal: {outcome.output}"
    assert outcome.code == 130, outcome.output
    assert "interrupted" in outcome.output and "Traceback" not in outcome.output
    assert outcome.left == [], outcome.left
