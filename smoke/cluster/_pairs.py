"""Pairwise cross-node checks on a fabric pool (issue 28 item 2): which node pairs to run, the
Job each pair runs as, and which node the slow pairs name.

The launcher (smoke.cluster.launcher) runs them after a fabric pool's collective missed its
floor (the collective runs at its slowest node's rate: one that met the floor proves every
pair would), on a pool of 3 nodes or more: round by round, the pairs of a round at once, each
pair a 2-pod Indexed Job of the same agent (`--fabric-only`: its inventory, then the 2-node
collective) pinned to its two nodes. Each pair's figure is judged again centrally
(smoke.cluster._rejudge.fabric_result) against the per-pair floor, which is the pool's fabric
floor: every fabric reference in smoke.probes.thresholds IS a 2-node figure (2 nodes x 8
GPUs), the unit awslabs/awsome-distributed-ai#664 ("Add N/2 NCCL tests for K8s: to isolate a
bad node, run N/2 tests pairwise", 2025-05-01, read 2026-11-27) asks the reference tests to
measure.

Why pairs: the pool-wide collective runs at the speed of its slowest node, so every node times
the same figure and one bad node or NIC cannot be singled out. Two nodes at a time can: the
2-node figure is exactly what the fabric floors are measured on (smoke.probes.thresholds: every
fabric reference is 2 nodes x 8 GPUs), and awslabs/awsome-distributed-ai#664 asks the
reference tests for the same pairing.

- Round 1 pairs the nodes in order, N/2 disjoint pairs at once (an odd node out waits).
- Round 2 rotates: each node meets a partner from another round-1 pair, so a slow pair is split.
  A node slow with every partner, one of whom is fast with someone else, is named (that
  partner's NIC is proven); a slow pair neither of whose nodes has such a partner (two nodes,
  or two bad nodes meeting only each other) stays unresolved, for another round.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fleet.k8s_names import pair_name as pair_name
from fleet.labels import PAIR_LABEL, RUN_LABEL
from smoke.cluster.run import Check
from smoke.probes import verdict as V
from smoke.probes.names import FABRIC_PAIR
from smoke.probes.results import ProbeResult, Verdict

if TYPE_CHECKING:
    from smoke.cluster.workload import PoolWorkload

Pair = tuple[str, str]
HOSTNAME = "kubernetes.io/hostname"
MIN_NODES = 3  # two nodes alone: their one pair is the collective itself


def rounds(nodes: Sequence[str]) -> list[list[Pair]]:
    """Two rounds of disjoint pairs: in order, then rotated by one pair so every node meets a
    second partner (3 nodes or more); an odd node out joins round 2."""
    ordered = list(dict.fromkeys(nodes))
    if len(ordered) < 2:
        return []
    first = [(ordered[i], ordered[i + 1]) for i in range(0, len(ordered) - 1, 2)]
    if len(ordered) < 3:
        return [first]
    # rotate: node i's second partner is the first node of the next pair (the odd one included)
    shifted = ordered[1:] + ordered[:1]
    second = [(shifted[i], shifted[i + 1]) for i in range(0, len(shifted) - 1, 2)]
    return [first, second]


@dataclass(frozen=True)
class PairVerdict:
    named: tuple[str, ...]  # nodes slow with every partner, one of whom is fast elsewhere
    unresolved: tuple[Pair, ...]  # slow pairs whose slow node the rounds could not tell
    slow: tuple[Pair, ...]  # every pair below the floor

    @property
    def ok(self) -> bool:
        return not self.slow


def judge_pairs(busbw: Mapping[Pair, float], floor: float) -> PairVerdict:
    """The slow node(s) among pairs measured at `busbw` (GB/s, the 2-node floor's unit)."""
    slow = [p for p, v in busbw.items() if v < floor]
    fast_nodes = {n for p, v in busbw.items() if v >= floor for n in p}
    partners: dict[str, list[Pair]] = {}
    for p in busbw:
        for n in p:
            partners.setdefault(n, []).append(p)
    named = []
    for node, pairs in partners.items():
        if node in fast_nodes:
            continue
        others = [m for p in pairs for m in p if m != node]
        if any(m in fast_nodes for m in others):  # slow with a partner that is fast elsewhere
            named.append(node)
    unresolved = [p for p in slow if not any(n in named for n in p)]
    return PairVerdict(tuple(sorted(named)), tuple(unresolved), tuple(slow))


def pair_objects(workload: PoolWorkload, name: str, pair: Pair) -> list[dict[str, Any]]:
    """The headless Service and the 2-pod Indexed Job of one pair: the pool's own Job (image,
    fabric sidecar and mounts, resources, tolerations, NCCL environment) pinned to the pair's
    two nodes (one pod each), its rendezvous its own, and the agent told `--fabric-only`. Not
    through Kueue: the nodes are there already."""
    objs = {o["kind"]: o for o in workload.objects}
    service, job = copy.deepcopy(objs["Service"]), copy.deepcopy(objs["Job"])
    labels = {**job["metadata"]["labels"], PAIR_LABEL: name}
    labels.pop("kueue.x-k8s.io/queue-name", None)
    selector = {RUN_LABEL: labels[RUN_LABEL], PAIR_LABEL: name}
    service["metadata"] |= {"name": name, "labels": labels}
    service["spec"]["selector"] = selector
    job["metadata"] = {**job["metadata"], "name": name, "labels": labels}
    job["metadata"].get("annotations", {}).pop("provreq.kueue.x-k8s.io/maxRunDurationSeconds",
                                                None)
    job["spec"].pop("suspend", None)
    job["spec"]["completions"] = job["spec"]["parallelism"] = 2
    tmpl = job["spec"]["template"]
    tmpl["metadata"]["labels"] = {**tmpl["metadata"]["labels"], PAIR_LABEL: name}
    spec = tmpl["spec"]
    spec["subdomain"] = name
    affinity = spec.setdefault("affinity", {})
    affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": selector}}]}
    affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": HOSTNAME, "operator": "In", "values": list(pair)}]}]}}
    agent = spec["containers"][0]
    agent["args"] = [*agent["args"], "--fabric-only"]
    env = {"ACCELFLEET_NODES": "2", "ACCELFLEET_COORDINATOR": f"{name}-0.{name}"}
    agent["env"] = [({"name": e["name"], "value": env[e["name"]]} if e.get("name") in env
                     else e) for e in agent["env"]]
    return [service, job]


def pair_checks(busbw: Mapping[Pair, float], errors: Mapping[Pair, str],
                th: V.Threshold) -> list[Check]:
    """The pair rounds' verdicts: one result per pair (pool-wide: a pair is no node) and a
    FAIL on each node the slow pairs name below the floor, the one check quarantine acts on
    (a WARN where it is named below the warning line only, or the floor is warn-only). A pair
    whose collective failed (`errors`) counts as slow. With no floor for the fabric, a pair
    below the pool-outlier share of the median pair is slow."""
    figures = {p: (0.0 if p in errors else v) for p, v in {**busbw, **{
        p: 0.0 for p in errors}}.items()}
    measured = sorted(v for p, v in figures.items() if p not in errors)
    floor = th.floor_abs
    relative = floor is None
    if relative:
        if not measured:
            floor = 0.0
        else:
            mid = measured[len(measured) // 2] if len(measured) % 2 else \
                (measured[len(measured) // 2 - 1] + measured[len(measured) // 2]) / 2
            floor = V.POOL_OUTLIER_FAIL * mid
    assert floor is not None
    bar = (f"{V.POOL_OUTLIER_FAIL:g} x the median pair, {floor:.1f} GB/s (no floor for this "
           "fabric)" if relative else f"the 2-node floor {floor:.1f} GB/s" + (
               "" if th.enforced else f" (warn-only: {th.unenforced})"))
    # a floor that only warns names a node with a warning: quarantine acts on FAIL alone
    levels = [(floor, Verdict.FAIL if relative or th.enforced else Verdict.WARN, bar)]
    if not relative and th.warn_band > 1:  # the warning line (TCPXO: the measured run's)
        line = floor * th.warn_band
        levels.append((line, Verdict.WARN, f"the warning line {line:.1f} GB/s "
                       f"({th.warn_band:g} x the floor)"))
    unit = V.UNITS[V.FABRIC]
    checks: list[Check] = []
    for pair, value in figures.items():
        where = "+".join(pair)
        if pair in errors:
            r = ProbeResult(where, FABRIC_PAIR, V.T3, Verdict.FAIL, f"the pair's collective "
                            f"failed: {errors[pair]}", unit=unit)
        else:
            below = next(((v, b) for cut, v, b in levels if value < cut), None)
            r = ProbeResult(where, FABRIC_PAIR, V.T3, below[0] if below else Verdict.PASS, (
                f"busbw {value:.1f} GB/s below {below[1]}" if below else f"{levels[-1][2]} "
                "met"), value, floor, unit)
        checks.append(Check(None, _with_source(r, th)))
    named: set[str] = set()
    told: set[Pair] = set()
    for cut, verdict, what in levels:  # the floor first: a node named there is not re-named
        got = judge_pairs(figures, cut)
        for node in (n for n in got.named if n not in named):
            named.add(node)
            slow = [p for p in got.slow if node in p]
            fast = sorted({m for p in slow for m in p if m != node} - set(got.named))
            r = ProbeResult(V.FABRIC_DEVICE, FABRIC_PAIR, V.T3, verdict, (
                f"slow in every pair it was in ({', '.join('+'.join(p) for p in slow)}: below "
                f"{what}); its partner{'s' if len(fast) > 1 else ''} {', '.join(fast)} met "
                "it with another node, so the slow end is this node (its NICs or their "
                "links)"), min(figures[p] for p in slow), cut, unit)
            checks.append(Check(node, _with_source(r, th)))
        for pair in (p for p in got.unresolved if p not in told and not set(p) & named):
            told.add(pair)
            r = ProbeResult("+".join(pair), FABRIC_PAIR, V.T3, verdict, (
                f"a pair below {what} whose slow node the rounds could not tell apart (each "
                "met no other node above it): neither node is quarantined; prove them with "
                "a third node"), figures[pair], cut, unit)
            checks.append(Check(None, _with_source(r, th)))
    return checks


def _with_source(r: ProbeResult, th: V.Threshold) -> ProbeResult:
    return ProbeResult(r.device, r.probe, r.tier, r.verdict, r.reason, r.measured, r.expected,
                       r.unit, details={**r.details, "threshold_source": th.source,
                                        "pair_floor_source": PAIR_FLOOR_SOURCE})


PAIR_FLOOR_SOURCE = ("the pool's 2-node fabric floor (smoke.probes.thresholds: every fabric "
                     "reference is 2 nodes x 8 GPUs); pairwise isolation of a bad node as "
                     "awslabs/awsome-distributed-ai#664 asks (read 2026-11-27)")
