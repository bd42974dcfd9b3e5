"""The long fuzz run of issue 21 (outside `make test` and `make bench`: minutes): CASES seeded
cases spread over every reader (tests/fuzz/harness.py), each in a fresh directory, and the
figures the issue asks for: exit-3 cases, tracebacks, hangs (a case over HANG_S, stopped by
an alarm), cases that changed a file, cases over the 2 s budget, and time per reader.

    nice .venv/bin/python benchmarks/fuzz_readers.py [--cases 10000] [--seed 21] [--out F]
        [--api-cases 200]

`--api-cases N` adds the hostile-API angle (issue 30, tests/fuzz/hostile_api.py): N seeded
runs of `smoke run --quarantine` against the fake API server with lying rules in front of it
(some on every answer), each counted as exit 3, traceback, hang, a pass of a node that was not
judged, or measurements lost. Since issue 29 most of them also meet a server that never
finishes (hostile_api.ANGLES: drips, endless answers, endless pages, endless logs, on the
run's calls and its cleanup's; counted past their deadline when they end late), and every
INTERRUPT_EVERY-th case is SIGINT or SIGTERM to a console process while the pod list drips in
(it must exit 130 within seconds and leave nothing behind).

Exit 0 when no case gave exit 3, a traceback, a hang or a changed file; 1 otherwise (each
such case is listed with its reader, seed file and mutations, to replay).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.harness import READERS, random_mutations, run_case, seeds

HANG_S = 30  # a case still running after this is a hang
BUDGET_S = 2.0  # what a refusal may take (issue 21)


class Hang(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--api-cases", type=int, default=0, help="hostile-API runs (issue 30)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    signal.signal(signal.SIGALRM, _alarm)
    times: dict[str, list[float]] = {r: [] for r in READERS}
    codes: dict[str, dict[int, int]] = {r: {} for r in READERS}
    bad: list[dict[str, object]] = []
    hangs = exit3 = tracebacks = changed = slow = 0
    started = time.perf_counter()
    for case in range(args.cases):
        reader = READERS[case % len(READERS)]
        seed = rng.choice(seeds(reader))
        edits = random_mutations(rng, json_doc=seed.suffix == ".json")
        with tempfile.TemporaryDirectory(prefix="accelfleet-fuzz-") as tmp:
            signal.alarm(HANG_S)
            try:
                outcome = run_case(reader, seed, edits, Path(tmp))
            except Hang:
                hangs += 1
                bad.append({"case": case, "reader": reader, "seed": seed.name, "hang": True,
                            "edits": [e.__dict__ for e in edits]})
                continue
            finally:
                signal.alarm(0)
        times[reader].append(outcome.seconds)
        codes[reader][outcome.code] = codes[reader].get(outcome.code, 0) + 1
        slow += outcome.seconds > BUDGET_S
        problem = []
        if outcome.code not in (0, 1, 2):
            exit3 += 1
            problem.append(f"exit {outcome.code}")
        if outcome.traceback:
            tracebacks += 1
            problem.append("traceback")
        if outcome.changed:
            changed += 1
            problem.append(f"changed {outcome.changed}")
        if problem or outcome.seconds > BUDGET_S:
            bad.append({"case": case, "reader": reader, "seed": seed.name,
                        "problem": problem, "seconds": round(outcome.seconds, 3),
                        "edits": [e.__dict__ for e in edits], "output": outcome.output[-600:]})
        if (case + 1) % 1000 == 0:
            print(f"{case + 1:6d} cases, {time.perf_counter() - started:7.1f} s: exit3 "
                  f"{exit3}, tracebacks {tracebacks}, hangs {hangs}, changed {changed}, "
                  f"over {BUDGET_S:g} s {slow}", flush=True)
    total = time.perf_counter() - started
    api = _api_angle(args.api_cases, random.Random(args.seed), bad) if args.api_cases else {}
    exit3 += int(api.get("exit3", 0))
    tracebacks += int(api.get("tracebacks", 0))
    hangs += int(api.get("hangs", 0))
    figures = {
        "cases": args.cases, "seed": args.seed, "seconds": round(total, 1),
        "exit3": exit3, "tracebacks": tracebacks, "hangs": hangs, "changed_files": changed,
        "over_budget": slow,
        "per_reader": {r: {"cases": len(t), "exit_codes": codes[r],
                           "median_ms": round(statistics.median(t) * 1000, 1) if t else None,
                           "max_ms": round(max(t) * 1000, 1) if t else None}
                       for r, t in times.items()},
        "hostile_api": api,
        "cases_to_look_at": bad[:50],
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "cases_to_look_at"}, indent=1))
    for b in bad[:20]:
        print("CASE", json.dumps(b)[:400])
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    untested_or_lost = int(api.get("passed_untested", 0)) + int(api.get("lost", 0)) + int(
        api.get("past_deadline", 0)) + int(api.get("interrupts_not_130", 0)) + int(
        api.get("interrupts_left_objects", 0))
    return 1 if exit3 or tracebacks or hangs or changed or untested_or_lost else 0


API_HANG_S = 150  # a hostile-API run past its own deadline (hostile_api.ApiCase.deadline_s,
# at most ~110 s) by far
INTERRUPT_EVERY = 10


def _api_angle(cases: int, rng: random.Random, bad: list[dict[str, object]]
               ) -> dict[str, object]:
    """The hostile-API runs: their counts, and each bad case appended to `bad`."""
    from tests.fuzz.hostile_api import random_case, run_api_case

    counts = {"cases": cases, "exit3": 0, "tracebacks": 0, "hangs": 0, "passed_untested": 0,
              "lost": 0, "past_deadline": 0, "with_angles": 0, "interrupts": 0,
              "interrupts_not_130": 0, "interrupts_left_objects": 0, "exit_codes": {}}
    seconds: list[float] = []
    started = time.perf_counter()
    for case_no in range(cases):
        if case_no % INTERRUPT_EVERY == INTERRUPT_EVERY - 1:
            _interrupt_case(case_no, rng, counts, bad)
            continue
        case = random_case(rng, angles=True)
        counts["with_angles"] += bool(case.angles)  # type: ignore[operator]
        with tempfile.TemporaryDirectory(prefix="accelfleet-api-") as tmp:
            signal.alarm(API_HANG_S)
            try:
                o = run_api_case(case, Path(tmp))
            except Hang:
                counts["hangs"] += 1  # type: ignore[operator]
                bad.append({"api_case": case_no, **case.to_dict(), "hang": True})
                continue
            finally:
                signal.alarm(0)
        seconds.append(o.seconds)
        codes = counts["exit_codes"]
        assert isinstance(codes, dict)
        codes[o.code] = codes.get(o.code, 0) + 1
        problem = [p for p, hit in (("exit 3", o.code not in (0, 1, 2)),
                                    ("traceback", o.traceback),
                                    (o.passed_untested, bool(o.passed_untested)),
                                    (o.lost, bool(o.lost)),
                                    (o.past_deadline, bool(o.past_deadline))) if hit]
        counts["past_deadline"] += bool(o.past_deadline)  # type: ignore[operator]
        counts["exit3"] += o.code not in (0, 1, 2)  # type: ignore[operator]
        counts["tracebacks"] += o.traceback  # type: ignore[operator]
        counts["passed_untested"] += bool(o.passed_untested)  # type: ignore[operator]
        counts["lost"] += bool(o.lost)  # type: ignore[operator]
        if problem:
            bad.append({"api_case": case_no, **case.to_dict(), "problem": problem,
                        "output": o.output[-600:]})
    counts["seconds"] = round(time.perf_counter() - started, 1)
    counts["median_s"] = round(statistics.median(seconds), 2) if seconds else None
    counts["max_s"] = round(max(seconds), 1) if seconds else None
    return counts


def _interrupt_case(case_no: int, rng: random.Random, counts: dict[str, object],
                    bad: list[dict[str, object]]) -> None:
    """SIGINT or SIGTERM to a console `smoke run` while its pod list drips in."""
    from tests.fuzz.hostile_api import run_interrupt_case

    sig = rng.choice((signal.SIGINT, signal.SIGTERM))
    with tempfile.TemporaryDirectory(prefix="accelfleet-api-") as tmp:
        o = run_interrupt_case(sig, "drip-pod-list", Path(tmp))
    counts["interrupts"] += 1  # type: ignore[operator]
    codes = counts["exit_codes"]
    assert isinstance(codes, dict)
    codes[o.code] = codes.get(o.code, 0) + 1
    problem = []
    if o.code is None:
        counts["hangs"] += 1  # type: ignore[operator]
        problem.append("hang after the signal")
    elif o.code != 130:
        counts["interrupts_not_130"] += 1  # type: ignore[operator]
        problem.append(f"exit {o.code}")
    if "Traceback" in o.output:
        counts["tracebacks"] += 1  # type: ignore[operator]
        problem.append("traceback")
    if o.left:
        counts["interrupts_left_objects"] += 1  # type: ignore[operator]
        problem.append(f"left {o.left[:5]}")
    if problem:
        bad.append({"api_case": case_no, "signal": signal.Signals(sig).name,
                    "problem": problem, "seconds_after_signal":
                    round(o.seconds_after_signal, 1), "output": o.output[-600:]})


if __name__ == "__main__":
    sys.exit(main())
