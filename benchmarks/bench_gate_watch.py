"""The gate's node watch against a hostile API server (issue 35): how many full node lists a
second it makes when every watch is answered 410 Expired, and how much memory it holds when a
watch line never ends.

    .venv/bin/python benchmarks/bench_gate_watch.py [--seconds 20]

The fake Kubernetes API server of the tests (tests/smoke/fakekube/, `hostile_watch`) serves
one node; the gate's NodeWatch (smoke/gate/_watch.py) runs against it with its real backoff
(client-go's reflector: 0.8 s doubling to 30 s, jittered). Printed: lists made and lists a
second over the window under "expired"; under "endless", the process's peak RSS, the lists
made and the streams dropped at the line bound. Not part of the test run.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run(how: str, seconds: float) -> str:
    from kubernetes import client as k

    from smoke.gate._watch import NodeWatch
    from tests.smoke.fakekube import FakeCluster
    from tests.smoke.gate_cluster import client_of

    root = Path(tempfile.mkdtemp(prefix="bench-gate-watch-"))
    cluster = FakeCluster(root / "fake").start()
    stop = threading.Event()
    try:
        cluster.add_node("n1")
        cluster.hostile_watch("nodes", how)
        watch = NodeWatch(k.CoreV1Api(client_of(cluster, root)), lambda _: None, stop,
                          watch_timeout_s=30)
        threading.Thread(target=watch.run, daemon=True).start()
        time.sleep(seconds)
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if how == "expired":
            return (f"410 on every watch, {seconds:g} s: {watch.lists} lists "
                    f"({watch.lists / seconds:.2f}/s), waits {[round(w, 1) for w in watch.waits]}")
        return (f"an endless watch line, {seconds:g} s: peak RSS {rss_mib:.0f} MiB, "
                f"{watch.lists} lists, {watch.oversized} streams dropped at the bound")
    finally:
        stop.set()
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    for how in ("expired", "endless"):
        print(run(how, args.seconds), flush=True)


if __name__ == "__main__":
    main()
