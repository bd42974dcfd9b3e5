"""A pool's gate in words (`fleet validate`, `plan`): pools that share a gate share a line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fleet.spec.fields import MAX_UNAVAILABLE_DEFAULT, interval_text

if TYPE_CHECKING:
    from fleet.gate import InventoryGate
    from fleet.model import ResolvedPool


def gate_words(gate: InventoryGate | None) -> str:
    """A pool's gate in one phrase, as `fleet validate` and `plan` show it."""
    if gate is None:
        return "none"
    if not gate.enabled:
        return f"off ({gate.reason})"
    tiers = f"T0-T{gate.max_tier}" if gate.max_tier else "T0"
    fabric = " + fabric" if gate.fabric else ""
    every = (f"re-proof every {interval_text(gate.reprove_interval_s)}"
             if gate.reprove_interval_s else "no re-proof")
    if gate.reprove_interval_s and gate.max_unavailable != MAX_UNAVAILABLE_DEFAULT:
        every += f" ({gate.max_unavailable} at a time)"
    if gate.shadow:  # nothing is held: no quarantine, no failed node kept or replaced
        return f"shadow {tiers}{fabric}, {every}, reported only"
    failed = ", failed nodes replaced" if gate.on_fail == "replace" else ""
    return f"{tiers}{fabric}, {every}, quarantine at most {gate.quarantine_cap}{failed}"


def gate_lines(pools: Iterable[ResolvedPool]) -> list[str]:
    """One line per distinct gate, naming its pools in the stack's order:
    `gate T0-T2 + fabric, re-proof every 24h, quarantine at most 10%: h100-train, p5-train`."""
    groups: dict[str, list[str]] = {}
    for pool in pools:
        groups.setdefault(gate_words(pool.gate), []).append(pool.name)
    return [f"gate {words}: {', '.join(names)}" for words, names in groups.items()]
