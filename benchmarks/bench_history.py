"""Time the smoke history: appending runs, and `smoke history` queries over a large file.

    .venv/bin/python benchmarks/bench_history.py [--rows 100000] [--nodes 50]

Builds a history of about ROWS result rows (one per device and probe: a run of NODES
8-GPU nodes in two pools records 34 rows per node), then times the trend query for every
node, one pool, one node, and the whole `accelfleet smoke history` command in a process of
its own (start-up included).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.history import History
from smoke.probes.results import HostReport, ProbeResult, Verdict

ROWS_PER_NODE = 34  # 8 x (inventory, known answer, matmul, memory) + all-reduce + fabric


def _host(node: str, rng: random.Random) -> HostReport:
    results = []
    for d in range(8):
        dev = f"cuda{d}"
        results += [
            ProbeResult(dev, "inventory", 0, Verdict.PASS, "present", 79.2, 80.0, "GiB"),
            ProbeResult(dev, "known_answer", 1, Verdict.PASS, "ok", 3e-4, 5e-3, "rel err"),
            ProbeResult(dev, "matmul_tflops", 2, Verdict.PASS, "ok", rng.gauss(805, 8), 989.0,
                        "TFLOP/s", details={"floor": 593.4}),
            ProbeResult(dev, "memory_gbps", 2, Verdict.PASS, "ok", rng.gauss(2950, 15), 3350.0,
                        "GB/s", details={"floor": 1905.0})]
    results += [ProbeResult("host", "allreduce_busbw", 3, Verdict.PASS, "ok",
                            rng.gauss(360, 4), None, "GB/s"),
                ProbeResult("fabric", "fabric_busbw", 3, Verdict.PASS, "ok", rng.gauss(21, 0.5),
                            None, "GB/s")]
    return HostReport(host=node, backend="torch", platform="gpu", versions={}, tier=3,
                      results=tuple(results), accelerator="h100-80gb")


def _run(i: int, nodes: int, rng: random.Random) -> RunReport:
    pools = []
    for p in range(2):
        names = [f"gke-ml-pool{p}-{n:03d}" for n in range(nodes // 2)]
        pools.append(PoolReport(f"pool{p}", "ml-gke", "a3-highgpu-8g", "w", len(names),
                                PoolStatus.DONE, tuple(NodeOutcome(k, f"pod-{k}", n, _host(
                                    n, rng)) for k, n in enumerate(names))))
    return RunReport(run_id=f"r{i:06d}", stack="bench", started_at=f"2026-11-23T00:00:{i % 60:02d}"
                     "+00:00", duration_s=60.0, thresholds_version="t", agent_digest="",
                     pools=tuple(pools))


def _median_ms(fn: Callable[[], object], repeat: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000, min(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--nodes", type=int, default=50)
    args = ap.parse_args()
    rng = random.Random(20261123)
    runs = max(1, round(args.rows / (args.nodes * ROWS_PER_NODE)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.sqlite"
        appends = []
        with History.open(path) as h:
            for i in range(runs):
                run = _run(i, args.nodes, rng)
                t = time.perf_counter()
                h.append(run, kind="cluster")
                appends.append(time.perf_counter() - t)
            n_runs, n_rows = h.count()
            print(f"history: {n_runs} runs, {n_rows:,} result rows, "
                  f"{path.stat().st_size / 2**20:.1f} MiB; append one run of {args.nodes} "
                  f"nodes: median {statistics.median(appends) * 1000:.1f} ms")
            for label, fn in (
                    ("every node, last 10 runs", lambda: h.trends(window=10)),
                    ("one pool, last 10 runs", lambda: h.trends(pool="pool0", window=10)),
                    ("one node, last 10 runs", lambda: h.trends(node="gke-ml-pool0-007")),
                    ("one node, every run", lambda: h.trends(node="gke-ml-pool0-007",
                                                             window=1000))):
                med, low = _median_ms(fn)
                print(f"query {label:28s}: median {med:8.1f} ms (min {low:.1f} ms, 5 runs; "
                      f"{len(fn())} trends)")
        cli = [sys.executable, "-m", "cli", "smoke", "history", "--history", str(path)]
        repo = Path(__file__).resolve().parents[1]
        med, low = _median_ms(lambda: subprocess.run(cli, cwd=repo, capture_output=True,
                                                     check=True), repeat=3)
        print(f"`accelfleet smoke history` (every node, its own process): median "
              f"{med:.0f} ms (min {low:.0f} ms, 3 runs)")


if __name__ == "__main__":
    main()
