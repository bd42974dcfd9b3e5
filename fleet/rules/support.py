"""What a machine family supports, from the catalog's support.yaml (issue 27, class 4): a pool
asks for a way of obtaining nodes its cloud offers (consumption options) and its family takes,
its cluster runs a version its accelerator family and its consumption option run on, and an
EKS pool's AMI carries a driver for its instance family. One rule over every pool; each refusal
names the catalog's source."""

from __future__ import annotations

from collections.abc import Sequence

from fleet.catalog.support import (
    DEFAULT_EKS_AMI,
    OptionRefusal,
    Support,
    load_support,
    version_key,
)
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


# What a cloud builds an option as, beyond itself: GKE makes a queued pool a flex-start node
# pool with queued provisioning ("To use flex-start with queued provisioning, you have to add
# the --flex-start and --enable-queued-provisioning flags when you create the node pool",
# https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest, read 2026-11-28;
# components/gcp/_nodes.py node_config sets `flexStart` on it), so every refusal and version
# floor of flex-start holds for a queued pool too (issue 36).
BUILT_AS: dict[str, dict[str, tuple[str, ...]]] = {"gcp": {"queued": ("flex-start",)}}


def built_as(cloud: str, option: str) -> tuple[str, ...]:
    """The options a pool of `option` is held to: itself, then what the cloud builds it as."""
    return (option, *BUILT_AS.get(cloud, {}).get(option, ()))


def _as_words(cloud: str, option: str, held: str) -> str:
    if held == option:
        return option
    return f"{option} (GKE builds a {option} pool as a {held} node pool)" if cloud == "gcp" \
        else f"{option} (built as {held})"


def family_keys(p: ResolvedPool) -> tuple[str, ...]:
    """The keys support.yaml may name a pool's family by, most specific first: the TPU
    generation, the machine type, the machine family."""
    shape = p.shape
    keys = (shape.tpu.key if shape.tpu else None, shape.machine_type,
            shape.machine.family if shape.machine else None)
    return tuple(k for k in keys if k)


def _first_clause(source: str) -> str:
    return source.split(";")[0].strip()


def _below(version: str, floor_of: str) -> bool:
    """Whether the cluster's version is older than the floor, comparing only the parts the
    stack gives (`1.34` asks for the channel's 1.34, which a floor of 1.34.0-gke.N allows)."""
    have, want = version_key(version), version_key(floor_of)
    assert have is not None and want is not None
    given = sum(1 for part in have if part >= 0)
    return have[:given] < want[:given]


def check_support(r: RuleProblems, pools: Sequence[ResolvedPool]) -> None:
    support = load_support()
    told = {p.where for p in r.problems}
    for p in pools:
        at = Where("pools", name=p.name)
        option = consumption_option(p.spec.capacity)
        keys = family_keys(p)
        offered = support.options(p.cloud)
        if at.dot("capacity") not in told:
            if offered is not None and option not in offered.options:
                r.add(at.dot("capacity"), f"{p.cloud} offers no {option} capacity "
                      f"(catalog support.yaml: {_first_clause(offered.source)})",
                      f"use one of {', '.join(offered.options)}", offered.options)
            elif (found := _refusal(support, p.cloud, option, keys)) is not None:
                held, refused = found
                left = tuple(o for o in (offered.options if offered else ())
                             if _refusal(support, p.cloud, o, keys) is None)
                r.add(at.dot("capacity"), f"{refused.accelerator} cannot be obtained as "
                      f"{_as_words(p.cloud, option, held)} (catalog support.yaml: "
                      f"{refused.source})",
                      f"use another capacity: {', '.join(left)}", left)
        if (no := support.runtime_refusal(p.cloud, p.runtime, keys)) is not None:
            r.add(at.dot("runtime"), f"{no.accelerator} cannot run as `runtime: {p.runtime}` "
                  f"(catalog support.yaml: {_first_clause(no.source)})",
                  "run the slice in a GKE cluster: give the pool a `cluster:` and leave "
                  "`runtime` out")
        _ami(r, support, p, at)
        _versions(r, support, p, option, keys)


def _refusal(support: Support, cloud: str, option: str, keys: tuple[str, ...]
             ) -> tuple[str, OptionRefusal] | None:
    """(the option held to, the entry) refusing `option` or what the cloud builds it as."""
    for held in built_as(cloud, option):
        if (refused := support.option_refusal(cloud, held, keys)) is not None:
            return held, refused
    return None


def _ami(r: RuleProblems, support: Support, p: ResolvedPool, at: Where) -> None:
    if p.cloud != "aws" or p.shape.kind != "gpu" or p.shape.machine is None:
        return
    name = p.spec.ami or DEFAULT_EKS_AMI
    ami = support.ami(p.cloud, name)
    family = p.shape.machine.family
    if ami is None or family in ami.families:
        return
    others = tuple(a.ami for a in support.amis if a.cloud == p.cloud and family in a.families)
    r.add(at.dot("ami"), f"the EKS-optimized {name} NVIDIA AMI does not support {family} "
          f"instances (catalog support.yaml: {ami.source})",
          f"set `ami:` to one of {', '.join(others)}" if others
          else "choose an instance family the accelerated AMIs list", others)


def _versions(r: RuleProblems, support: Support, p: ResolvedPool, option: str,
              keys: tuple[str, ...]) -> None:
    cluster = p.cluster
    version = cluster.kubernetes_version if cluster is not None else None
    have = version_key(version) if version else None
    if cluster is None or version is None or have is None:
        return  # none given (the release channel's), "latest", or refused elsewhere
    where = Where("clusters", name=cluster.name, field="kubernetes_version")
    engine = "GKE" if p.cloud == "gcp" else "EKS"
    leave = "or leave it out for the release channel's default" if p.cloud == "gcp" \
        else "or leave it out for the catalog's default"
    needed = support.min_version(p.cloud, keys)
    if needed is not None:
        floor = needed.floor_for(have)
        if floor is None or _below(version, floor):
            shown = floor or needed.floors[0]
            r.add(where, f"pool {p.name!r} ({needed.accelerator}) needs {engine} "
                  f"{needed.min if floor is None else shown} or later, but the cluster asks for "
                  f"{version} (catalog support.yaml: {needed.source})",
                  f"set `kubernetes_version: \"{shown}\"` or later, {leave}")
    kind = p.shape.kind
    # the highest floor among the option and what the cloud builds it as (queued: flex-start)
    floors = [(held, m) for held in built_as(p.cloud, option)
              if (m := support.option_min_version(p.cloud, held, kind)) is not None
              and _below(version, m.min)]
    if floors:
        held, by_option = max(floors, key=lambda f: version_key(f[1].min) or (0, 0, 0, 0))
        r.add(where, f"pool {p.name!r} asks for {_as_words(p.cloud, option, held)} "
              f"{kind.upper()} capacity, which needs {engine} {by_option.min} or later, but "
              f"the cluster asks for {version} (catalog support.yaml: {by_option.source})",
              f"set `kubernetes_version: \"{by_option.min}\"` or later, {leave}")
    if p.cloud == "aws" and kind == "gpu":
        ami = support.ami(p.cloud, p.spec.ami or DEFAULT_EKS_AMI)
        if ami is not None and ami.min_kubernetes and _below(version, ami.min_kubernetes):
            r.add(where, f"pool {p.name!r}: the EKS-optimized {ami.ami} NVIDIA AMI is published "
                  f"for Kubernetes {ami.min_kubernetes} and later, but the cluster asks for "
                  f"{version} (catalog support.yaml: {ami.source})",
                  f"set `kubernetes_version: \"{ami.min_kubernetes}\"` or later, {leave}")
