"""TPU slice arithmetic: topologies generated from each generation's rules."""

from __future__ import annotations

import re
from functools import cache
from math import prod

from fleet.catalog.records import TpuGeneration

_TOPOLOGY = re.compile(r"^\d+(x\d+){1,2}$")


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _valid_2d(a: int, b: int, max_chips: int) -> bool:
    if (a, b) == (1, 1):
        return True
    return (
        2 <= a <= b <= 2 * a and _is_pow2(a) and _is_pow2(b) and a * b <= max_chips
    )


def _valid_3d(a: int, b: int, c: int, max_chips: int,
              max_sides: tuple[int, ...] = ()) -> bool:
    # Sorted so that a <= b <= c; the rule is stated on the sorted sides.
    chips = a * b * c
    if chips > max_chips or a < 1:
        return False
    if max_sides and any(s > m for s, m in zip((a, b, c), max_sides, strict=True)):
        return False
    # Below one 4x4x4 cube only 2x2x1 (one host), 2x2x2, 2x2x4 and 2x4x4 exist.
    small = (a, b, c) == (1, 2, 2) or (a >= 2 and {a, b, c} <= {2, 4} and chips <= 32)
    large = all(s % 4 == 0 for s in (a, b, c))
    return small or large


@cache
def topologies(gen: TpuGeneration) -> tuple[tuple[int, ...], ...]:
    """Every valid topology of a generation, smallest first, sides ascending."""
    found: list[tuple[int, ...]] = []
    limit = gen.max_chips
    if gen.dims == 2:
        side = 1
        sides = []
        while side <= limit:
            sides.append(side)
            side *= 2
        for a in sides:
            for b in sides:
                if a <= b and _valid_2d(a, b, limit):
                    found.append((a, b))
    else:
        sides3 = [1, 2, *list(range(4, limit + 1, 4))]
        for a in sides3:
            if a**3 > limit:
                break
            for b in sides3:
                if b < a or a * b * b > limit:
                    continue
                for c in sides3:
                    if c < b or a * b * c > limit:
                        continue
                    if _valid_3d(a, b, c, limit, gen.max_sides):
                        found.append(_display_order(gen, (a, b, c)))
        # A generation with a one-chip machine type has a one-chip slice (tpu7x-standard-1t:
        # 1x1x1, tpu.yaml); the 3-D rule's smallest shape is otherwise 2x2x1.
        if gen.machine_for(1) is not None:
            found.append((1, 1, 1))
    return tuple(sorted(found, key=lambda t: (prod(t), t)))


def _display_order(gen: TpuGeneration, sides: tuple[int, ...]) -> tuple[int, ...]:
    # GKE writes the 4-chip single host as 2x2x1; larger shapes ascending (2x2x4, 4x4x8).
    if gen.dims == 3 and sides[0] == 1:
        return (*sides[1:], sides[0])
    return sides


def parse_topology(text: str) -> tuple[int, ...] | None:
    """'4x4x4' -> (4, 4, 4); anything else -> None."""
    text = text.strip().lower()
    if not _TOPOLOGY.match(text):
        return None
    return tuple(int(p) for p in text.split("x"))


def normalise(gen: TpuGeneration, topo: tuple[int, ...]) -> tuple[int, ...] | None:
    """The catalog's spelling of a topology (sides in any order), or None if invalid."""
    if len(topo) != gen.dims:
        return None
    key = sorted(topo)
    for known in topologies(gen):
        if sorted(known) == key:
            return known
    return None


def default_topology(gen: TpuGeneration, chips: int) -> tuple[int, ...] | None:
    """The most compact valid topology with this many chips (v5p-128 -> 4x4x4)."""
    candidates = [t for t in topologies(gen) if prod(t) == chips]
    if not candidates:
        return None
    return min(candidates, key=lambda t: (max(t) - min(t), t))


def slice_hosts(gen: TpuGeneration, chips: int, *, single_host_machine: bool) -> tuple[int, int]:
    """(hosts, chips per host) for a slice of `chips` chips.

    A slice no larger than the multi-host VM fits one VM whose size matches it. Larger slices
    use the multi-host VM; `single_host_machine` asks for the larger single-host VM
    (ct6e-standard-8t for a v6e 2x4) where one exists.
    """
    per_vm = gen.multihost_chips_per_vm
    if chips <= per_vm:
        return 1, chips
    if single_host_machine and gen.machine_for(chips) is not None:
        return 1, chips
    return chips // per_vm, per_vm
