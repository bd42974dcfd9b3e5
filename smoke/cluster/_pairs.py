"""Pairwise cross-node checks on a fabric pool (issue 28 item 2): which node pairs to run, and
which node the slow pairs name.

NOT WIRED YET: the launcher (smoke/cluster/run.py, launcher.py) does not run pair rounds; this
module is the plan and the judgment it will call, tested on their own.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Pair = tuple[str, str]


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
