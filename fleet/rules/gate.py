"""The gate's rules beside its fields (fleet.spec.fields.PoolGate checks each field): a gate
is declared only where a node can be gated, a pool of a Kubernetes cluster with accelerators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleet.catalog import Shape
from fleet.errors import Where
from fleet.gate import UNGATED_KINDS, UNGATED_RUNTIMES
from fleet.spec.fields import Pool

if TYPE_CHECKING:  # the rules checker lends its problem sink
    from fleet.rules.problems import RuleProblems


def check_gate(checks: RuleProblems, pool: Pool, at: Where, shape: Shape) -> None:
    """A `gate` on a CPU pool or a Cloud TPU VM pool is refused: neither is ever gated."""
    if pool.gate is None:
        return
    if shape.kind in UNGATED_KINDS:
        checks.add(at.dot("gate"), "a CPU pool is never gated: it has no accelerator to prove",
                   "remove `gate`")
    elif (pool.runtime or "") in UNGATED_RUNTIMES:
        checks.add(at.dot("gate"), "a tpu-vm pool runs outside Kubernetes, where no node "
                   "carries the gate's taint", "remove `gate`, or drop `runtime: tpu-vm` to run "
                   "the slice in GKE, where it is gated")
