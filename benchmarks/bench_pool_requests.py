"""Time concurrent `accelfleet pool request` processes on one stack file.

    .venv/bin/python benchmarks/bench_pool_requests.py [--requests 50] [--repeat 3]

Copies the example stack to a temporary directory, starts REQUESTS `python -m cli pool request`
processes at once (each asking for its own CPU pool, so that every one of them must land), and
meanwhile reads and parses the stack file in a loop, as a reader would. Reports the wall time
from the first start to the last exit, each process's own time, how many times the reader
parsed the file (it must never fail), and checks that every pool landed and every comment of
the example survived. The lock serialises the edits; the processes' start-up (Python, typer,
pydantic, ruamel, the catalog) runs in parallel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass
class Result:
    wall_s: float
    process_s: list[float]
    exit_codes: list[int]
    reads: int
    read_failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def comment_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "#" in line]


def concurrent_requests(stack: Path, requests: int, *, team: str = "vision",
                        accelerator: str = "n2-standard-8") -> Result:
    """Start `requests` pool requests on `stack` at once while a reader parses it in a loop."""
    from ruamel.yaml import YAML

    done = threading.Event()
    reads: list[int] = [0]
    failures: list[str] = []

    def reader() -> None:
        parser = YAML(typ="safe", pure=False)
        while not done.is_set():
            try:
                data = parser.load(stack.read_text(encoding="utf-8"))
                assert isinstance(data["config"]["accelfleet:fleet"]["pools"], list)
                reads[0] += 1
            except Exception as exc:  # a half-written file would land here
                failures.append(f"{type(exc).__name__}: {exc}")

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    start = time.perf_counter()
    procs = [(time.perf_counter(), subprocess.Popen(
        [sys.executable, "-m", "cli", "pool", "request", str(stack), "--team", team,
         "--accelerator", accelerator, "--name", f"burst-{i:03d}", "--requested-by",
         f"user{i}@acme.com", "--reason", f"concurrent request {i}"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for i in range(requests)]
    process_s, codes, errors = [], [], []
    for began, proc in procs:
        _, err = proc.communicate()
        process_s.append(time.perf_counter() - began)
        codes.append(proc.returncode)
        if proc.returncode:
            errors.append(err.decode("utf-8", "replace")[-500:])
    wall = time.perf_counter() - start
    done.set()
    thread.join()
    return Result(wall, process_s, codes, reads[0], failures, errors)


def sequential_edits(stack: Path, requests: int) -> list[float]:
    """The part the lock serialises: `requests` edits one after another in one process (read,
    decide, check the whole fleet twice, render, verify, write), each timed."""
    from datetime import date

    from fleet.catalog import load_catalog
    from fleet.requests.request import PoolRequest, request_pool
    from fleet.stack.edit import edit_stack

    catalog, times = load_catalog(), []
    for i in range(requests):
        req = PoolRequest(team="vision", accelerator="n2-standard-8", name=f"seq-{i:03d}",
                          requested_by=f"user{i}@acme.com")
        began = time.perf_counter()
        edit_stack(stack, lambda raw, r=req: request_pool(raw, r, catalog=catalog,
                                                           today=date.today()), write=True)
        times.append(time.perf_counter() - began)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from fleet.stack.read import EXAMPLE_STACK, read_stack_file

    original = EXAMPLE_STACK.read_text(encoding="utf-8")
    print(f"{args.requests} concurrent `python -m cli pool request` processes on one stack "
          f"file, {os.cpu_count()} CPUs")
    ok = True
    for run in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            stack = Path(tmp) / "Pulumi.bench.yaml"
            shutil.copy(EXAMPLE_STACK, stack)
            r = concurrent_requests(stack, args.requests)
            text = stack.read_text(encoding="utf-8")
            names = {p["name"] for p in read_stack_file(stack)["pools"]}
            landed = sum(f"burst-{i:03d}" in names for i in range(args.requests))
            kept = set(comment_lines(original)) <= set(comment_lines(text))
            good = not r.errors and not r.read_failures and landed == args.requests and kept
            ok &= good
            print(f"run {run + 1}: {r.wall_s:.2f} s wall for all {args.requests}; per process "
                  f"median {statistics.median(r.process_s):.2f} s, max {max(r.process_s):.2f} s;"
                  f" {landed}/{args.requests} pools landed; the reader parsed the file "
                  f"{r.reads} times, {len(r.read_failures)} failures; comments kept: {kept}")
            for e in r.errors[:3]:
                print("  error:", e.strip().splitlines()[-1] if e.strip() else e)
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / "Pulumi.bench.yaml"
        shutil.copy(EXAMPLE_STACK, stack)
        times = sequential_edits(stack, args.requests)
        print(f"the serialised part, {args.requests} edits one after another in one process: "
              f"median {statistics.median(times) * 1000:.0f} ms each (first "
              f"{times[0] * 1000:.0f} ms, last {times[-1] * 1000:.0f} ms, the file growing to "
              f"{6 + args.requests} pools)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
