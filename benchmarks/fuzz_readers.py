"""The long fuzz run of issue 21 (outside `make test` and `make bench`: minutes): CASES seeded
cases spread over every reader (tests/fuzz/harness.py), each in a fresh directory, and the
figures the issue asks for: exit-3 cases, tracebacks, hangs (a case over HANG_S, stopped by
an alarm), cases that changed a file, cases over the 2 s budget, and time per reader.

    nice .venv/bin/python benchmarks/fuzz_readers.py [--cases 10000] [--seed 21] [--out F]

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
    figures = {
        "cases": args.cases, "seed": args.seed, "seconds": round(total, 1),
        "exit3": exit3, "tracebacks": tracebacks, "hangs": hangs, "changed_files": changed,
        "over_budget": slow,
        "per_reader": {r: {"cases": len(t), "exit_codes": codes[r],
                           "median_ms": round(statistics.median(t) * 1000, 1) if t else None,
                           "max_ms": round(max(t) * 1000, 1) if t else None}
                       for r, t in times.items()},
        "cases_to_look_at": bad[:50],
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "cases_to_look_at"}, indent=1))
    for b in bad[:20]:
        print("CASE", json.dumps(b)[:400])
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 1 if exit3 or tracebacks or hangs or changed else 0


if __name__ == "__main__":
    sys.exit(main())
