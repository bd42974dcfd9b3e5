"""The launcher's own overhead: `accelfleet smoke run` on N pools x 8 nodes of the fake cluster.

    .venv/bin/python benchmarks/bench_launcher.py [--pools 10 50 100] [--nodes 8] [--repeats 3]

The fake Kubernetes API server of the tests (tests/smoke/fakekube/) runs in a process of its
own, so its controllers do not share this process's CPU and GIL with the launcher. Its pods
start no process: each prints a recorded HostReport and exits, so what is timed is everything
except the agents' own work: render, submit, follow (the fake's 50 ms controller tick and the
launcher's 0.5 s poll included), read every pod's log, judge, and clean up. Printed per pool
count: wall time (best and median), the launcher process's peak Python allocation (tracemalloc)
and the API requests it made. Target: 100 pools x 8 nodes under 3 s, memory flat in the pool
count. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

def stack_text(pools: int, nodes: int) -> str:
    lines = ["config:", "  accelfleet:fleet:", "    clouds:",
             "      gcp: {project: acme-bench, region: us-central1}",
             "    clusters:", "      - {name: c1, cloud: gcp}",
             "    teams:", *(f"      - {{name: team-{t}}}" for t in range(10)), "    pools:"]
    # ten teams: Kueue gives a team's ClusterQueue at most 64 flavors (one per pool)
    lines += [f"      - {{name: p{i:03d}, cluster: c1, team: team-{i % 10}, accelerator: "
              f"g2-standard-24, nodes: {nodes}, zone: us-central1-a}}" for i in range(pools)]
    return "\n".join(lines) + "\n"


def report_line(host: str) -> str:
    """A complete tier-2 report of a g2-standard-24 (2 x L4) host: the launcher checks that a
    report covers every device and probe its pool's shape and tier call for. Canned healthy
    figures (no L4 run is recorded); what is timed is the launcher, not the figures."""
    from smoke.probes.results import HostReport, ProbeResult, Verdict

    results = [ProbeResult(f"cuda{i}", probe, tier, Verdict.PASS, "canned", value, peak, unit,
                           details=details)
               for i in range(2)
               for probe, tier, value, peak, unit, details in (
                   ("inventory", 0, 22.0, 24.0, "GiB", {}),
                   ("known_answer", 1, 2e-4, 5e-3, "rel err", {"checksum": 1234.5}),
                   ("matmul_tflops", 2, 110.0 + i, 121.0, "TFLOP/s", {}),
                   ("memory_gbps", 2, 260.0 + i, 300.0, "GB/s", {}),
                   ("sustained_tflops", 2, 105.0 + i, 121.0, "TFLOP/s", {}))]
    return json.dumps(HostReport(host=host, backend="torch", platform="gpu",
                                 versions={"torch": "2.13.0"}, tier=2, results=tuple(results),
                                 accelerator="l4").to_dict())


def serve(root: str, pools: int, nodes: int, conn: Any) -> None:
    """The fake cluster's process: nodes for every pool, canned reports, until told to stop."""
    from tests.smoke.fakekube import FakeCluster
    from tests.smoke.nodes import gke_node

    cluster = FakeCluster(Path(root)).start()
    for i in range(pools):  # the recorded real g2-standard-24 node, in pool p<i>
        for j in range(nodes):
            name = f"p{i:03d}-n{j}"
            cluster.add_node_object(gke_node(name, "g2-standard-24", nodepool=f"p{i:03d}",
                                             labels={"accelfleet.io/pool": f"p{i:03d}"}))
            cluster.set_node_output(name, report_line(name))
    conn.send(cluster.url)
    while True:
        msg = conn.recv()
        if msg == "stop":
            break
        with cluster.lock:
            conn.send((len(cluster.requests), len(cluster.objects("accelfleet.io/run"))))
            cluster.requests.clear()
    cluster.stop()


def one_run(stack: Path, url: str, *, trace: bool = False) -> tuple[float, int, int]:
    """(seconds, peak bytes allocated (with `trace`, which slows it), pods reported) of one
    run: load the stack, render, connect, launch."""
    from fleet import load_fleet
    from fleet.inventory import build_inventory
    from smoke import expectations as _expect
    from smoke.cluster.access import ClusterRef, connect
    from smoke.cluster.launcher import launch, new_run_id
    from smoke.cluster.workload import RenderOptions, render_run

    kc = stack.parent / "kubeconfig"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c1",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c1", "context": {"cluster": "fake", "user": "u"}}]}))
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    inventory = build_inventory(load_fleet(str(stack)), "bench")
    run = render_run(inventory, RenderOptions(run_id=new_run_id(), namespace="bench"),
                     expectation=_expect.for_pool)
    clients = connect([ClusterRef("c1", "gcp")], kubeconfig=kc)
    report = launch(run, clients, stack="bench", timeout_s=120)
    seconds = time.perf_counter() - t0
    peak = 0
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    pods = sum(len(p.nodes) for p in report.pools)
    if not report.ok:
        raise SystemExit(f"the benchmark run failed: {[f.line() for f in report.failures][:5]}")
    return seconds, peak, pods


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", type=int, nargs="+", default=[10, 50, 100])
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    print(f"{'pools':>5} {'pods':>5} {'best s':>7} {'median s':>8} {'peak MiB':>8} "
          f"{'requests':>8}")
    for pools in args.pools:
        with tempfile.TemporaryDirectory() as tmp:
            stack = Path(tmp) / "Pulumi.bench.yaml"
            stack.write_text(stack_text(pools, args.nodes), encoding="utf-8")
            parent, child = ctx.Pipe()
            server = ctx.Process(target=serve, args=(str(Path(tmp) / "fake"), pools,
                                                     args.nodes, child), daemon=True)
            server.start()
            url = parent.recv()
            times, peaks, requests = [], [], []
            for i in range(args.repeats + 1):  # the last run traces memory, untimed
                seconds, peak, pods = one_run(stack, url, trace=i == args.repeats)
                parent.send("count")
                n_requests, left = parent.recv()
                if left:
                    raise SystemExit(f"{left} objects of the run were left on the server")
                if i < args.repeats:
                    times.append(seconds)
                    requests.append(n_requests)
                peaks.append(peak)
            parent.send("stop")
            server.join(30)
        print(f"{pools:>5} {pods:>5} {min(times):>7.2f} {statistics.median(times):>8.2f} "
              f"{max(peaks) / 2**20:>8.1f} {statistics.median(requests):>8.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
