"""What a machine family supports, from the catalog's support.yaml (issue 27, class 4): a pool
asks for a way of obtaining nodes its cloud offers (consumption options), and its cluster runs
a version its accelerator family runs on. One rule over every pool; each refusal names the
catalog's source."""

from __future__ import annotations

from collections.abc import Sequence

from fleet.catalog.support import load_support, version_key
from fleet.errors import Where
from fleet.model import ResolvedPool
from fleet.rules.problems import RuleProblems
from fleet.spec.fields import Capacity


def consumption_option(cap: Capacity) -> str:
    """The support.yaml option a pool's `capacity` asks for."""
    if cap.reservation:
        return "capacity-block" if cap.block else "reservation"
    if cap.flex_start:
        return "flex-start"
    if cap.queued:
        return "queued"
    return "spot" if cap.spot else "on-demand"


def check_support(r: RuleProblems, pools: Sequence[ResolvedPool]) -> None:
    support = load_support()
    told = {p.where for p in r.problems}
    for p in pools:
        at = Where("pools", name=p.name)
        option = consumption_option(p.spec.capacity)
        offered = support.options(p.cloud)
        if offered is not None and option not in offered.options \
                and at.dot("capacity") not in told:
            r.add(at.dot("capacity"), f"{p.cloud} offers no {option} capacity "
                  f"(catalog support.yaml: {offered.source.split(';')[0].strip()})",
                  f"use one of {', '.join(offered.options)}", offered.options)
        cluster = p.cluster
        version = cluster.kubernetes_version if cluster is not None else None
        have = version_key(version) if version else None
        if cluster is None or have is None:
            continue  # none given (the release channel's), "latest", or refused elsewhere
        keys = tuple(k for k in (p.shape.tpu.key if p.shape.tpu else None,
                                 p.shape.machine_type) if k)
        needed = support.min_version(p.cloud, keys)
        if needed is None:
            continue
        want = version_key(needed.min)
        assert want is not None  # checked on load
        given = sum(1 for part in have if part >= 0)  # compare the parts the stack gives
        if have[:given] < want[:given]:
            r.add(Where("clusters", name=cluster.name, field="kubernetes_version"),
                  f"pool {p.name!r} ({needed.accelerator}) needs "
                  f"{'GKE' if p.cloud == 'gcp' else 'EKS'} {needed.min} or later, but the "
                  f"cluster asks for {version} (catalog support.yaml: {needed.source})",
                  f"set `kubernetes_version: \"{needed.min}\"` or later, or leave it out for "
                  "the release channel's default")
