"""The gate's rules beside its fields (fleet.spec.fields.PoolGate checks each field): a gate
is declared only where a node can be gated, a pool of a Kubernetes cluster with accelerators;
and a warning while the controller's image is the default one of a release not published yet
(`gate_image_warnings`, the rule in fleet/catalog/data/gate_images.yaml).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fleet.catalog import Shape
from fleet.errors import Problem, Where
from fleet.gate import UNGATED_KINDS, UNGATED_RUNTIMES
from fleet.spec.fields import Pool

if TYPE_CHECKING:  # the rules checker lends its problem sink
    from fleet.model import ResolvedPool
    from fleet.rules.problems import RuleProblems
    from fleet.spec.fields import Gate


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


def gate_image_warnings(gate: Gate, pools: Sequence[ResolvedPool]) -> list[Problem]:
    """A warning, never a refusal, while a stack with a gated pool runs the default controller
    image (`gate.image` left out, or set to it) of an accelfleet version whose image no release
    has published (fleet.gate.default_image_published): the nodes could not pull it, and
    `pulumi up` would wait on a Deployment that never turns ready."""
    from fleet.gate import CONTROLLER_IMAGE, default_image_published

    gated = sorted(p.name for p in pools if p.gated)
    if not gated or default_image_published(gate.image) is not False:
        return []
    return [Problem(
        "gate.image",
        f"the default gate controller image {CONTROLLER_IMAGE} is not published yet "
        "(fleet/catalog/data/gate_images.yaml lists the released images): nodes cannot pull "
        f"it, and the gated pools ({', '.join(gated[:5])}{', ...' if len(gated) > 5 else ''}) "
        "would wait for a controller that never starts",
        "build and push the image (docs/gate.md, \"The controller's image\"), then set "
        "`gate: {image: REGISTRY/accelfleet-gate@sha256:DIGEST}` (and `image_pull_secrets` "
        "for a private registry); or install a released accelfleet, whose image is published")]
