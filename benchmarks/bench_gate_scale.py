"""The gate at fleet scale (issue 35): `accelfleet gate status --json` and the idle
controller's CPU at N nodes (default 5,000).

    .venv/bin/python benchmarks/bench_gate_scale.py [--nodes 5000] [--seconds 60]
    KUBEBUILDER_ASSETS=../shared/envtest/bin .venv/bin/python benchmarks/bench_gate_scale.py \
        --real --nodes 1000

The cluster: N nodes of the example stack's gated GKE H100 pool, each the recorded real
a3-highgpu-8g node (tests.smoke.gate_cluster.gke_gated_node) cloned under a new name. Every
node is Ready and proven (its proof recorded for its uid and boot ID) a week ago, so each one
is due for its daily re-proof; each runs a workload pod (Pending with its image still being
pulled on the fake, a pod bound to it with no kubelet to run it on the real plane), so none
is idle: the controller, leader, has nothing it may do, and looks again every round. That is
the idle controller of the issue: every round asks each due node whether it is idle.

Printed: the wall time of `gate status --json` (the CLI in a process of its own, Python's
start included; and the library call `smoke.gate.session.gate_status` alone), and the
controller's CPU share over `--seconds` (its process's CPU time over the wall time, after its
first round: the node list made and the pod cache synced), with the API calls it made then.

The fake API server (tests/smoke/fakekube) runs in a process of its own (its work is not the
controller's). `--real`: the real control plane of the tests (tests/controlplane), its Node
objects created through the API (no node stand-in: 5,000 node processes would not fit on this
machine; the nodes' Ready condition is written once, and the node lifecycle controller marks
them Unknown after its grace period, so the CPU window there starts right after they are
written). Not part of the test run.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POOL = "h100-train"
NAMESPACE = "accelfleet-gate"
WORK_NAMESPACE = "work"


def cloned_nodes(count: int) -> list[dict[str, Any]]:
    """`count` nodes of the gated H100 pool: the recorded node under new names."""
    from tests.smoke.gate_cluster import gke_gated_node

    template = gke_gated_node(POOL, "gke-h100-train-template")
    out = []
    for i in range(count):
        name = f"gke-{POOL}-{i:05d}"
        node = copy.deepcopy(template)
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        node.setdefault("status", {})["conditions"] = [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastTransitionTime": "2026-11-01T00:00:00Z"}]
        node["status"].setdefault("nodeInfo", {})["bootID"] = f"boot-{i:05d}"
        out.append(node)
    return out


def proven(node: dict[str, Any], i: int) -> dict[str, Any]:
    """The patch that records a pass for this very node (uid, boot ID) a week ago, its gate
    taint lifted (`smoke.gate.nodes.proven_patch`'s result)."""
    from fleet.labels import GATE_LABEL, GATE_PROOF_ANNOTATION, GATE_TAINT_KEY

    at = (datetime.now(UTC) - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    proof = {"verdict": "pass", "run": f"r{1700000000 + i:010d}-abcd", "at": at,
             "uid": node["metadata"]["uid"], "boot": node["status"]["nodeInfo"]["bootID"]}
    return {"metadata": {"labels": {GATE_LABEL: "proven"},
                         "annotations": {GATE_PROOF_ANNOTATION: json.dumps(proof)}},
            "spec": {"taints": [t for t in node["spec"].get("taints") or []
                                if t.get("key") != GATE_TAINT_KEY
                                and t.get("key") != "node.kubernetes.io/not-ready"]}}


def workload(node: str) -> dict[str, Any]:
    return {"metadata": {"name": f"train-{node}", "namespace": WORK_NAMESPACE},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "train", "image": "trainer:1",
                                     "command": ["sleep", "infinity"]}]}}


def serve_fake(root: str, count: int, conn: Any) -> None:
    """The fake API server's process: the nodes, proven, each with a workload pod."""
    from tests.smoke.fakekube import FakeCluster

    cluster = FakeCluster(Path(root), tick_s=1.0).start()
    cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
    cluster.create("namespaces", "", {"metadata": {"name": WORK_NAMESPACE}})
    for i, node in enumerate(cloned_nodes(count)):
        created = cluster.create("nodes", "", node)
        cluster.patch("nodes", "", created["metadata"]["name"], proven(created, i))
        cluster.set_node_pull_s(created["metadata"]["name"], 10**9)  # never starts: Pending
        cluster.create("pods", WORK_NAMESPACE, workload(created["metadata"]["name"]))
    conn.send((cluster.url, 0.0))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        if msg == "stop":
            break
        if msg == "requests":
            with cluster.lock:
                conn.send(list(cluster.requests))
    cluster.stop()


def serve_real(root: str, count: int, conn: Any) -> None:
    """The real control plane's process (`--real`): the nodes through the API, proven, each
    with a workload pod bound to it."""
    from tests.controlplane._plane import ControlPlane
    from tests.controlplane._rest import Rest, RestError

    plane = ControlPlane(Path(root), controllers=True).start()
    try:
        rest = Rest(plane.client())
        for ns in (NAMESPACE, WORK_NAMESPACE):
            rest.create("namespaces", "", {"metadata": {"name": ns}})
        try:  # the pods' service account (the controller-manager makes it, in its time)
            rest.create("serviceaccounts", WORK_NAMESPACE, {"metadata": {"name": "default"}})
        except RestError as exc:
            if exc.status != 409:
                raise
        started = time.monotonic()
        for i, node in enumerate(cloned_nodes(count)):
            status = node.pop("status")
            created = rest.create("nodes", "", node)
            created = rest.patch("nodes", "", created["metadata"]["name"],
                                 {"status": status}, subresource="status")
            rest.patch("nodes", "", created["metadata"]["name"], proven(created, i))
            rest.create("pods", WORK_NAMESPACE, workload(created["metadata"]["name"]))
        conn.send((str(plane.kubeconfig(Path(root) / "bench.kubeconfig", context="real")),
                   time.monotonic() - started))
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg == "stop":
                break
            if msg == "requests":
                conn.send([])  # the real server's calls are not recorded here
    finally:
        plane.stop()


def _kubeconfig(tmp: Path, url: str) -> Path:
    kc = tmp / "kubeconfig"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    return kc


def _inventory(tmp: Path, count: int) -> Path:
    from dataclasses import replace

    from tests.smoke.gate_cluster import gated_inventory

    inventory = gated_inventory()
    inventory = replace(inventory, pools=tuple(
        replace(p, nodes=count) if p.name == POOL else p for p in inventory.pools))
    path = tmp / "inventory.json"
    path.write_text(json.dumps(inventory.to_dict()), encoding="utf-8")
    return path


def status_cli(inventory: Path, kc: Path, context: str) -> tuple[float, int]:
    """`accelfleet gate status --json` in a process of its own: wall seconds, nodes shown."""
    argv = [sys.executable, "-c", "from cli.entry import run; run()", "gate", "status",
            "--json", "--inventory", str(inventory), "--kubeconfig", str(kc), "--context",
            f"ml-gke={context}", "--cluster", "ml-gke", "--namespace", NAMESPACE]
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    wall_s = time.monotonic() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"gate status failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall_s, len(json.loads(done.stdout)["nodes"])


def status_lib(inventory: Path, kc: Path, context: str) -> tuple[float, int]:
    from smoke.gate.session import GateRequest, gate_status

    request = GateRequest(inventory=inventory, kubeconfig=kc, contexts={"ml-gke": context},
                          cluster="ml-gke", namespace=NAMESPACE)
    t0 = time.monotonic()
    result = gate_status(request)
    json.dumps(result.to_dict())
    return time.monotonic() - t0, len(result.nodes)


def idle_cpu(inventory_path: Path, kc: Path, context: str, seconds: float
             ) -> dict[str, float]:
    """The controller, leader with nothing it may do, for `seconds`: CPU share and rounds."""
    from kubernetes import config

    from fleet.inventory import Inventory
    from smoke.gate.controller import Gate, GateOptions

    inventory = Inventory.from_dict(json.loads(inventory_path.read_text(encoding="utf-8")))
    client = config.new_client_from_config(config_file=str(kc), context=context)
    gate = Gate(client, "ml-gke", inventory, GateOptions(namespace=NAMESPACE, lease_s=15.0))
    rounds = [0]
    plan = gate._plan

    def counted() -> Any:
        rounds[0] += 1
        return plan()

    gate._plan = counted  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=gate.run, args=(stop,), daemon=True)
    t_start = time.monotonic()
    thread.start()
    gate.ready.wait(600)
    while rounds[0] < 2 and time.monotonic() - t_start < 600:  # the first round is done
        time.sleep(0.05)
    first_s = time.monotonic() - t_start
    cpu0, wall0, rounds0 = time.process_time(), time.monotonic(), rounds[0]
    time.sleep(seconds)
    cpu_s, wall_s = time.process_time() - cpu0, time.monotonic() - wall0
    done = rounds[0] - rounds0
    stop.set()
    thread.join(60)
    if gate.summary.proofs:
        raise SystemExit(f"the idle controller launched {gate.summary.proofs} proofs")
    return {"cpu_share": cpu_s / wall_s, "cpu_s": cpu_s, "wall_s": wall_s,
            "rounds": float(done), "first_s": first_s}


def one(count: int, seconds: float, *, real: bool) -> None:
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        parent, child = ctx.Pipe()
        server = ctx.Process(target=serve_real if real else serve_fake,
                             args=(str(tmp / ("real" if real else "fake")), count, child),
                             daemon=True)
        t0 = time.monotonic()
        server.start()
        where, made_s = parent.recv()
        setup_s = time.monotonic() - t0
        if real:
            kc, context = Path(where), "real"
        else:
            kc, context = _kubeconfig(tmp, where), "fake"
        inventory = _inventory(tmp, count)
        cluster = "real" if real else "fake"
        print(f"{cluster}: {count} nodes set up in {setup_s:.0f} s"
              + (f" (the nodes written in {made_s:.0f} s)" if real else ""), flush=True)
        parent.send("requests")
        before = len(parent.recv())
        cli_s, shown = status_cli(inventory, kc, context)
        parent.send("requests")
        after = parent.recv()
        calls = len(after) - before
        lib_s, _ = status_lib(inventory, kc, context)
        print(f"{cluster} {count:>6} nodes: gate status --json {cli_s:6.2f} s (CLI process; "
              f"{shown} nodes shown" + (f", {calls} API calls" if not real else "")
              + f"); gate_status() {lib_s:6.2f} s", flush=True)
        parent.send("requests")
        before = len(parent.recv())
        r = idle_cpu(inventory, kc, context, seconds)
        parent.send("requests")
        calls_idle = parent.recv()[before:]
        pod_lists = sum(1 for m, p in calls_idle if m == "GET" and p.endswith("/pods"))
        print(f"{cluster} {count:>6} nodes: idle controller {100 * r['cpu_share']:5.1f}% of a "
              f"core over {r['wall_s']:.0f} s ({r['cpu_s']:.1f} CPU s, {r['rounds']:.0f} "
              f"rounds; first round done {r['first_s']:.1f} s after start"
              + (f"; {len(calls_idle)} API calls, {pod_lists} pod lists or watches "
                 "from the first round on" if not real else "") + ")", flush=True)
        parent.send("stop")
        server.join(120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[5000])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--real", action="store_true",
                    help="on the real control plane of the tests ($KUBEBUILDER_ASSETS)")
    args = ap.parse_args()
    if args.real:
        from tests.controlplane._plane import assets, missing_reason

        if assets() is None:
            raise SystemExit(f"--real: {missing_reason()}")
    for count in args.nodes:
        one(count, args.seconds, real=args.real)
    return 0


if __name__ == "__main__":
    sys.exit(main())
