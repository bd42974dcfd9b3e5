"""The gate controller's own overhead: N gated nodes of a GKE H100 pool join at once on the
fake cluster and turn Ready together; how long from Ready to the gate taint lifted, with the
node's probe time (its proof pod's own run) set aside, and the controller's memory.

    .venv/bin/python benchmarks/bench_gate.py [--nodes 100] [--parallel 16 32] [--batch 16]

The fake Kubernetes API server of the tests (tests/smoke/fakekube/) runs in a process of its
own (its controllers do not share the gate's CPU and GIL). Its nodes are the recorded real
a3-highgpu-8g node with the gate taint; its pods start no process: each prints a recorded
H100 report (tests/smoke/test_cluster_run._recorded) and exits, so the probe time is ~0 and
what is timed is the gate: watch, claim, render, submit, the fake's 50 ms tick and the
launcher's poll, read the log, judge, patch the node, the Event, clean up. Printed per
parallelism: the wall time until the last node is untainted, per-node overhead (Ready ->
untainted minus the pod's run time: median, p95, max), the node proofs that were
infrastructure errors (retried by the gate, as it does), the controller's CPU seconds (its
process, from the join to the last untaint), its peak Python allocation (tracemalloc) and its
process's peak RSS. Not part of the test run.

`--real`: the same on the REAL control plane of the tests (tests/controlplane: etcd,
kube-apiserver with RBAC, kube-scheduler, kube-controller-manager from $KUBEBUILDER_ASSETS)
with the node stand-in playing each node's kubelet (Node status and Lease, the proof pods'
status, their logs through `pods/log`), in a process of its own as the fake is. The nodes
register NotReady (with the not-ready taint the API server puts on), then all report Ready;
the node lifecycle controller lifts the not-ready taint, the real scheduler binds the proof
pods, the Job controller makes them and the garbage collector removes them.

    KUBEBUILDER_ASSETS=../shared/envtest/bin .venv/bin/python benchmarks/bench_gate.py --real
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POOL = "h100-train"


def serve(root: str, nodes: int, conn: Any) -> None:
    """The fake cluster's process: on "join", N gated nodes register NotReady, then all turn
    Ready; it answers with the wall time the last one turned Ready."""
    from tests.smoke.fakekube import FakeCluster
    from tests.smoke.gate_cluster import gke_gated_node, h100_report

    cluster = FakeCluster(Path(root)).start()
    names = [f"gke-{POOL}-{i:03d}" for i in range(nodes)]
    for name in names:
        cluster.set_node_output(name, h100_report(name, 800.0))
    conn.send(cluster.url)
    while True:
        msg = conn.recv()
        if msg == "stop":
            break
        if msg == "join":
            for name in names:
                cluster.add_node_object(gke_gated_node(POOL, name), ready=False)
            for name in names:
                cluster.set_ready(name)
            conn.send(time.time())
        if msg == "left":
            conn.send(len(cluster.objects("accelfleet.io/run")))
    cluster.stop()


def serve_real(root: str, nodes: int, conn: Any) -> None:
    """The real control plane's process (`--real`): the plane and the node stand-in; on
    "join", N gated nodes register NotReady, then all report Ready; it answers with the wall
    time the last one did. It sends its admin kubeconfig's path first."""
    from tests.controlplane._plane import ControlPlane
    from tests.controlplane._rest import Rest
    from tests.controlplane.cluster import RealCluster
    from tests.controlplane.fixtures import install_crds
    from tests.smoke.gate_cluster import gke_gated_node, h100_report

    plane = ControlPlane(Path(root), controllers=True).start()
    try:
        install_crds(Rest(plane.client()))
        cluster = RealCluster(plane, Path(root) / "cluster")
        names = [f"gke-{POOL}-{i:03d}" for i in range(nodes)]
        for name in names:
            cluster.set_node_output(name, h100_report(name, 800.0))
        conn.send((str(plane.kubeconfig(Path(root) / "bench.kubeconfig", context="real")),
                   plane.started_s))
        while True:
            try:
                msg = conn.recv()
            except EOFError:  # the benchmark ended (or failed): stop the plane
                break
            if msg == "stop":
                break
            if msg == "join":
                for name in names:
                    cluster.add_node_object(gke_gated_node(POOL, name), ready=False)
                for name in names:
                    cluster.set_ready(name)
                conn.send(time.time())
            if msg == "left":
                deadline = time.monotonic() + 60  # the garbage collector in its own time
                while cluster.objects("accelfleet.io/run") and time.monotonic() < deadline:
                    time.sleep(0.5)
                conn.send(len(cluster.objects("accelfleet.io/run")))
        cluster.close()
    finally:
        plane.stop()


def one(nodes: int, parallel: int, batch: int | None = None, *, real: bool = False
        ) -> dict[str, float]:
    from kubernetes import config

    from smoke.gate.controller import Gate, GateOptions
    from tests.smoke.gate_cluster import gated_inventory

    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        parent, child = ctx.Pipe()
        server = ctx.Process(target=serve_real if real else serve,
                             args=(str(Path(tmp) / ("real" if real else "fake")), nodes,
                                   child), daemon=True)
        server.start()
        plane_s = 0.0
        if real:
            path, plane_s = parent.recv()
            kc, context = Path(path), "real"
        else:
            url = parent.recv()
            kc, context = Path(tmp) / "kubeconfig", "fake"
            kc.write_text(json.dumps({
                "apiVersion": "v1", "kind": "Config", "current-context": "fake",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
        client = config.new_client_from_config(config_file=str(kc), context=context)
        client.rest_client.pool_manager.connection_pool_kw["maxsize"] = parallel * 2
        inventory = gated_inventory()
        inventory = replace(inventory, pools=tuple(
            replace(p, nodes=nodes) if p.name == POOL else p for p in inventory.pools))
        more = {} if batch is None else {"batch": batch}
        gate = Gate(client, "ml-gke", inventory, GateOptions(
            namespace="accelfleet-gate", parallel=parallel, timeout_s=300, lease_s=15.0,
            **more))
        stop = threading.Event()
        tracemalloc.start()
        thread = threading.Thread(target=gate.run, args=(stop,), daemon=True)
        thread.start()
        gate.ready.wait(30)
        while not gate.is_leader():
            time.sleep(0.05)
        cpu0 = time.process_time()
        parent.send("join")
        t_ready = parent.recv()
        infra: set[str] = set()  # proofs the gate retries (an infrastructure error)
        while sum(1 for r in gate.summary.results.values() if r.verdict == "pass") < nodes:
            results = list(gate.summary.results.values())
            infra |= {f"{r.node} {r.run_id}" for r in results if r.verdict == "infra"}
            if any(r.verdict == "fail" for r in results):
                bad = [r for r in results if r.verdict == "fail"]
                raise SystemExit(f"a proof failed: {bad[:3]}")
            time.sleep(0.05)
        cpu_s = time.process_time() - cpu0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        stop.set()
        thread.join(60)
        results = list(gate.summary.results.values())
        overhead = sorted((r.proven_at or 0.0) - t_ready - (r.probe_s or 0.0) for r in results)
        probe = [r.probe_s or 0.0 for r in results]
        parent.send("left")
        left = parent.recv()
        parent.send("stop")
        server.join(30)
    if left:
        raise SystemExit(f"{left} objects of the proofs were left on the server")
    return {"wall_s": max((r.proven_at or 0.0) for r in results) - t_ready,
            "median_s": statistics.median(overhead),
            "p95_s": overhead[max(0, int(0.95 * len(overhead)) - 1)],
            "max_s": overhead[-1], "probe_median_s": statistics.median(probe),
            "cpu_s": cpu_s, "plane_s": plane_s, "infra": float(len(infra)),
            "peak_mib": peak / 2**20,
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--parallel", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--batch", type=int, default=None,
                    help="new nodes per proof (default: GateOptions.batch; 1: one proof a node)")
    ap.add_argument("--real", action="store_true",
                    help="on the real control plane of the tests ($KUBEBUILDER_ASSETS) with "
                         "the node stand-in, instead of the fake API server")
    args = ap.parse_args()
    if args.real:
        from tests.controlplane._plane import assets, missing_reason

        if assets() is None:
            raise SystemExit(f"--real: {missing_reason()}")
    print(f"{'cluster':>7} {'nodes':>5} {'parallel':>8} {'wall s':>7} "
          f"{'overhead median s':>17} {'p95 s':>6} {'max s':>6} {'probe s':>7} {'CPU s':>6} "
          f"{'peak MiB':>8} {'RSS MiB':>7}")
    for parallel in args.parallel:
        r = one(args.nodes, parallel, args.batch, real=args.real)
        print(f"{'real' if args.real else 'fake':>7} {args.nodes:>5} {parallel:>8} "
              f"{r['wall_s']:>7.1f} {r['median_s']:>17.2f} {r['p95_s']:>6.2f} "
              f"{r['max_s']:>6.2f} {r['probe_median_s']:>7.2f} {r['cpu_s']:>6.1f} "
              f"{r['peak_mib']:>8.1f} {r['rss_mib']:>7.0f}", flush=True)
        if r["infra"]:
            print(f"({r['infra']:.0f} node proofs were infrastructure errors, retried by the "
                  "gate)", flush=True)
        if args.real:
            print(f"(the control plane started in {r['plane_s']:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
