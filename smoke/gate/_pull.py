"""The Secrets a gate proof's pods pull their images with (the stack's
`gate.image_pull_secrets`, given to the controller as `gate run --image-pull-secret NAME`):
set as `imagePullSecrets` on the pod template of every Job and JobSet a proof creates (the pair
rounds of a fabric pool copy the Job's template, so they carry them too). A Secret is read in
the pod's own namespace: the smoke namespace, or the team's for a re-proof through its Kueue
queue (docs/gate.md, "How nodes pull the image").

    rendered = with_pull_secrets(rendered, ("ghcr-pull",))
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from smoke.cluster.workload import RenderedRun


def pod_specs(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The pod specs of a Job (spec.template.spec) or a JobSet (each replicated Job's)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        yield spec.setdefault("template", {}).setdefault("spec", {})
    elif obj.get("kind") == "JobSet":
        for rjob in spec.get("replicatedJobs") or []:
            job = rjob.setdefault("template", {}).setdefault("spec", {})
            yield job.setdefault("template", {}).setdefault("spec", {})


def with_pull_secrets(rendered: RenderedRun, names: Sequence[str]) -> RenderedRun:
    """`rendered` with `names` added to each pod template's imagePullSecrets (kept in order,
    none twice); `rendered` itself when `names` is empty."""
    if not names:
        return rendered
    pools = []
    for w in rendered.pools:
        objects = copy.deepcopy(w.objects)
        for obj in objects:
            for spec in pod_specs(obj):
                have = [s.get("name") for s in spec.get("imagePullSecrets") or []]
                spec["imagePullSecrets"] = [{"name": n} for n in dict.fromkeys(
                    [*(h for h in have if h), *names])]
        pools.append(replace(w, objects=objects))
    return replace(rendered, pools=pools)
