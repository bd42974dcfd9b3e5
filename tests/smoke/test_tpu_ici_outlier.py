"""TPU ICI (issue 37, item 5): the in-host psum (T3 all-reduce over the host's chips, ICI) has
no published floor at our size (smoke.probes.thresholds._TPU_PSUM: warn-only on its own), so a
host is judged against the other hosts of its slice or pool: below POOL_OUTLIER_FAIL (0.85) of
their median it fails and is named, below 0.93 it warns (smoke.probes.verdict
judge_pool_outliers, run by the central re-judge, smoke.cluster._rejudge.pool_outliers, as
`smoke run` and the gate's proof of a slice re-judge every report).

The figures are the agent's own shape (judge_allreduce on an AllReduce); the degraded host's
figure is the healthy one scaled, as one of a host's ICI links down would cut it: no recorded
TPU run exists here (tests/smoke/gate_cluster.tpu_report says the same)."""

from __future__ import annotations

from smoke.cluster._rejudge import pool_outliers
from smoke.cluster.run import NodeOutcome
from smoke.expectations import from_catalog
from smoke.probes.backend import AllReduce
from smoke.probes.results import HostReport, Verdict
from smoke.probes.verdict import ALLREDUCE, POOL_OUTLIER_FAIL, judge_allreduce

HEALTHY_GBPS = 100.0  # any figure: the rule is a ratio to the peers' median


def _host(name: str, busbw_gbps: float, i: int) -> NodeOutcome:
    exp = from_catalog("v5p 2x2x2", "jax")
    r = judge_allreduce(AllReduce(busbw_gbps=busbw_gbps, algbw_gbps=busbw_gbps / 1.5,
                                  seconds=0.01, bytes_per_device=256 * 2**20, correct=True,
                                  details={"backend": "jax psum (shard_map)", "world": 4}),
                        4, exp)
    assert r.verdict is not Verdict.FAIL  # warn-only alone: no floor at our size
    rep = HostReport(host=name, backend="jax", platform="tpu", versions={}, tier=3,
                     results=(r,), accelerator="tpu-v5p")
    return NodeOutcome(i, f"pod-{i}", name, rep, 0)


def test_a_host_with_a_degraded_ici_link_fails_and_is_named() -> None:
    hosts = [_host(f"gke-tpu-{i}", HEALTHY_GBPS * f, i)
             for i, f in enumerate((1.0, 0.99, 1.01, 0.5))]
    checks = pool_outliers(hosts)
    assert [(c.node, c.result.verdict) for c in checks] == [("gke-tpu-3", Verdict.FAIL)]
    (c,) = checks
    assert c.result.probe == f"{ALLREDUCE}_vs_pool" and c.result.details["ratio"] < 0.85
    assert "node outlier" in c.result.reason and "peers' median" in c.result.reason


def test_a_two_host_slice_names_the_slow_host_only() -> None:
    checks = pool_outliers([_host("a", HEALTHY_GBPS, 0), _host("b", 0.6 * HEALTHY_GBPS, 1)])
    assert [(c.node, c.result.verdict) for c in checks] == [("b", Verdict.FAIL)]


def test_hosts_within_the_ratio_pass_and_a_small_shortfall_warns() -> None:
    even = [_host(f"h{i}", HEALTHY_GBPS * f, i) for i, f in enumerate((1.0, 0.97, 1.02))]
    assert pool_outliers(even) == []
    warn = [_host(f"h{i}", HEALTHY_GBPS * f, i) for i, f in enumerate((1.0, 1.0, 0.9))]
    assert [(c.node, c.result.verdict) for c in pool_outliers(warn)] == [("h2", Verdict.WARN)]
    assert 0.9 > POOL_OUTLIER_FAIL
