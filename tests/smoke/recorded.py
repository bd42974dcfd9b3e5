"""A recorded cluster run, judged by the real verdict registry: the HTML report, history and
metrics tests read it (`tests/smoke/data/recorded_run.json` is this, written once with
`python -m tests.smoke.recorded`).

Pool `h100-train` (3 x a3-highgpu-8g): node `gke-ml-h100-train-9c1d` has one GPU far below the
matmul floor and runs 22% slower than its peers (a pool outlier); the other two pass. Its
cross-node all-reduce ran over GPUDirect-TCPX. Pool `v5p-ms`: two v5p 2x2x2 slices, healthy.
Pool `l4-idle`: scaled to zero, skipped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fleet.catalog import load_catalog
from smoke.cluster.launcher import pool_outliers
from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.probes import verdict as V
from smoke.probes._fabric import CrossNode
from smoke.probes.backend import AllReduce
from smoke.probes.expect import Expectation
from smoke.probes.results import HostReport, ProbeResult

DATA = Path(__file__).parent / "data" / "recorded_run.json"
BAD_NODE = "gke-ml-h100-train-9c1d"
H100_NODES = ("gke-ml-h100-train-2f4a", "gke-ml-h100-train-7b80", BAD_NODE)
VERSIONS = {"python": "3.11.11", "torch": "2.13.0", "cuda": "12.9", "nccl": "2.28.7"}


def _h100(host: str, tflops: list[float], gbps: list[float], busbw: float) -> HostReport:
    acc = load_catalog().accelerator("h100-80gb")
    exp = Expectation(accelerator=acc, devices=8, memory_gib=80.0, words="a3-highgpu-8g",
                      machine="a3-highgpu-8g", chips=8)
    devs = [f"cuda{i}" for i in range(8)]
    plat = dict.fromkeys(devs, "gpu")
    results = [ProbeResult(d, V.INVENTORY, 0, V.Verdict.PASS, "NVIDIA H100 80GB HBM3 present",
                           79.2, 80.0, "GiB") for d in devs]
    results += [ProbeResult(d, V.KNOWN_ANSWER, 1, V.Verdict.PASS,
                            "max rel error 3.1e-04 vs float64", 3.1e-4, 5e-3, "rel err")
                for d in devs]
    results += V.judge_perf(V.MATMUL, dict(zip(devs, tflops, strict=True)), exp,
                            platforms=plat)
    results += V.judge_perf(V.MEMORY, dict(zip(devs, gbps, strict=True)), exp, platforms=plat)
    results.append(V.judge_allreduce(AllReduce(busbw, busbw * 8 / 14, 0.004, 64 << 20, True),
                                     8, exp))
    cross = CrossNode(nodes=3, world=24, result=AllReduce(21.4, 11.5, 0.09, 64 << 20, True),
                      networks=("GPUDirectTCPX_v7",) * 8)
    results.append(V.judge_fabric(cross, ("GPUDirectTCPX_v7",)))
    return HostReport(host=host, backend="torch", platform="gpu", versions=VERSIONS, tier=3,
                      results=tuple(results), expect="a3-highgpu-8g", accelerator=acc.key,
                      thresholds_version=V.THRESHOLDS_VERSION,
                      started_at="2026-11-22T14:03:11+00:00", duration_s=41.7)


def _v5p(host: str) -> HostReport:
    acc = load_catalog().accelerator("tpu-v5p")
    exp = Expectation(accelerator=acc, devices=4, memory_gib=95.0, words="v5p 2x2x2",
                      machine="ct5p-hightpu-4t", chips=4)
    devs = [f"tpu{i}" for i in range(4)]
    plat = dict.fromkeys(devs, "tpu")
    results = V.judge_perf(V.MATMUL, {d: 371.0 + i for i, d in enumerate(devs)}, exp,
                           platforms=plat)
    results += V.judge_perf(V.MEMORY, {d: 2310.0 - 3 * i for i, d in enumerate(devs)}, exp,
                            platforms=plat)
    results.append(ProbeResult(V.HOST, V.PSUM, 1, V.Verdict.PASS,
                               "psum of ones over 4 devices = 4", 4.0, 4.0, "sum"))
    return HostReport(host=host, backend="jax", platform="tpu",
                      versions={"python": "3.11.11", "jax": "0.10.2", "jaxlib": "0.10.2"},
                      tier=2, results=tuple(results), expect="v5p 2x2x2", accelerator=acc.key,
                      thresholds_version=V.THRESHOLDS_VERSION,
                      started_at="2026-11-22T14:03:40+00:00", duration_s=22.0)


def recorded_run() -> RunReport:
    good = [812.0, 806.5, 809.0, 815.2, 803.9, 811.1, 808.4, 810.0]
    gbps = [2960.0, 2951.0, 2948.5, 2957.0, 2962.0, 2955.0, 2949.0, 2958.5]
    h100 = [NodeOutcome(i, f"smoke-h100-train-{i}-x{i}", n,
                        _h100(n, [v * (1 - 0.004 * i) for v in good], gbps, 362.0))
            for i, n in enumerate(H100_NODES[:2])]
    bad = [640.2, 628.0, 633.5, 529.0, 637.9, 631.2, 635.0, 629.8]  # cuda3 below the floor
    h100.append(NodeOutcome(2, "smoke-h100-train-2-x2", BAD_NODE,
                            _h100(BAD_NODE, bad, [v * 0.99 for v in gbps], 355.0)))
    checks = tuple(pool_outliers(h100))
    v5p_nodes = [f"gke-ml-v5p-ms-{s}-{h}" for s in range(2) for h in range(2)]
    v5p = tuple(NodeOutcome(i % 2, f"smoke-v5p-ms-slice-{i // 2}-{i % 2}", n, _v5p(n),
                            slice=i // 2) for i, n in enumerate(v5p_nodes))
    return RunReport(
        run_id="r2611221403-5e9a", stack="prod", started_at="2026-11-22T14:03:02+00:00",
        duration_s=96.4, thresholds_version=V.THRESHOLDS_VERSION,
        agent_digest="sha256:4f2c9e1d7a03b5e8c6f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7",
        pools=(PoolReport("h100-train", "ml-gke", "a3-highgpu-8g", "smoke-h100-train", 3,
                          PoolStatus.DONE, tuple(h100), checks, duration_s=88.2),
               PoolReport("v5p-ms", "ml-gke", "v5p 2x2x2", "smoke-v5p-ms", 4, PoolStatus.DONE,
                          v5p, duration_s=61.0),
               PoolReport("l4-idle", "ml-gke", "g2-standard-24", "", 0, PoolStatus.SKIPPED,
                          reason="the pool is scaled to zero (autoscaling min 0): nothing "
                          "to run on")))




if __name__ == "__main__":
    DATA.write_text(recorded_run().to_json() + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {DATA}\n")
    json.loads(DATA.read_text())
