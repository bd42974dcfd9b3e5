"""A stand-in for the agent on a fabric pool's nodes, for the pair rounds (issue 28 item 2):
every node's pod meets the others of its collective, and the collective runs at the rate of
its slowest member's NICs, the physics of a ring all-reduce (each step waits for the slowest
link); its transport is what a REAL NCCL log says (smoke.probes.nccl_log reads it).

    python fake_fabric_agent.py RATES_JSON NCCL_LOG MEET_DIR POOL_NODES

RATES_JSON: node -> the busbw (GB/s) its NICs allow. MEET_DIR: where the members of each
collective (its Job's pods: POD_NAME is `<job>-<index>-<hash>`) meet. POOL_NODES: the pool's
size: a collective of that many nodes is the pool's run (the node's full tier-3 report, in
the shape tests.smoke.test_cluster_run._recorded prints from a recorded H100 run); a smaller
one is a pair round (`--fabric-only`: the inventory and the collective).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from smoke.probes import verdict as V
from smoke.probes._fabric import CrossNode
from smoke.probes.backend import AllReduce
from smoke.probes.nccl_log import parse
from smoke.probes.results import HostReport, ProbeResult, Verdict

GIB2 = 2 * 2**30
EFA = ("Libfabric", "AWS Libfabric")  # the catalog's efa nccl_networks


def _meet(where: Path, node: str, count: int) -> list[str]:
    where.mkdir(parents=True, exist_ok=True)
    (where / node).touch()
    deadline = time.monotonic() + 60
    while len(list(where.iterdir())) < count:
        if time.monotonic() > deadline:
            sys.exit(f"{node}: peers never arrived at {where}")
        time.sleep(0.05)
    return sorted(p.name for p in where.iterdir())


def _local(tflops: float = 800.0) -> list[ProbeResult]:
    r = [ProbeResult(f"cuda{i}", "inventory", 0, Verdict.PASS, "recorded", 79.19, 80.0, "GiB")
         for i in range(8)]
    r += [ProbeResult(f"cuda{i}", "known_answer", 1, Verdict.PASS, "recorded", 2e-4, 5e-3,
                      "rel err", details={"checksum": 1234.5}) for i in range(8)]
    r += [ProbeResult(f"cuda{i}", "matmul_tflops", 2, Verdict.PASS, "recorded", tflops,
                      989.0, "TFLOP/s") for i in range(8)]
    r += [ProbeResult(f"cuda{i}", "memory_gbps", 2, Verdict.PASS, "recorded", 2900.0, 3350.0,
                      "GB/s") for i in range(8)]
    r += [ProbeResult(f"cuda{i}", "sustained_tflops", 2, Verdict.PASS, "recorded",
                      0.95 * tflops, 989.0, "TFLOP/s") for i in range(8)]
    r += [ProbeResult("host", "allreduce_busbw", 3, Verdict.PASS, "recorded", 468.6, None,
                      "GB/s", details={"bytes_per_device": GIB2})]
    return r


def main(rates_path: str, log_path: str, meet_dir: str, pool_nodes: str) -> None:
    node = os.environ["NODE_NAME"]
    count = int(os.environ["ACCELFLEET_NODES"])
    job = os.environ["POD_NAME"].rsplit("-", 2)[0]  # an Indexed Job's pod: <job>-<i>-<hash>
    members = _meet(Path(meet_dir) / job, node, count)
    rates = json.loads(Path(rates_path).read_text(encoding="utf-8"))
    busbw = min(float(rates[m]) for m in members)  # the ring runs at its slowest link
    seconds = GIB2 * 2 * (count * 8 - 1) / (count * 8) / (busbw * 1e9)
    log = Path(log_path).read_text(encoding="utf-8")
    networks = tuple(t for rank in parse(log).ranks for t in rank.transports)
    cross = CrossNode(count, count * 8, AllReduce(busbw, busbw * count * 8 / (2 * (
        count * 8 - 1)), seconds, GIB2, True), networks, details={"members": members})
    fabric = V.judge_fabric(cross, EFA)
    local = _local() if count == int(pool_nodes) else _local()[:8]
    report = HostReport(host=node, backend="torch", platform="gpu",
                        versions={"torch": "2.13.0"}, tier=3, results=(*local, fabric),
                        accelerator="h100-80gb")
    print(json.dumps(report.to_dict(), sort_keys=True))


if __name__ == "__main__":
    main(*sys.argv[1:5])
