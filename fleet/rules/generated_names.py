"""Every name and label accelfleet generates from a stack, checked at its worst case against the
limit of each object it becomes (issue 36 class 2):

- what a smoke run and a gate proof generate from a pool name, with what the Job and JobSet
  controllers append, at the longest run id and the highest indexes (`fleet.k8s_names`);
- the labels and taints of an EKS node group, with the EKS API's own limits, stricter than
  Kubernetes': a label key of 1-63 characters counted whole (prefix and name), a label value
  of 1-63 (an empty value is refused), a taint key of 1-63 counted whole, a taint value of
  0-63. Sources (read 2026-11-28): the EKS API reference, UpdateLabelsPayload ("Key Length
  Constraints: Minimum length of 1. Maximum length of 63. Value Length Constraints: Minimum
  length of 1. Maximum length of 63.",
  https://docs.aws.amazon.com/eks/latest/APIReference/API_UpdateLabelsPayload.html) and Taint
  (key "Minimum length of 1. Maximum length of 63", value "Minimum length of 0. Maximum
  length of 63", https://docs.aws.amazon.com/eks/latest/APIReference/API_Taint.html); the
  provider schema, pulumi-aws 7.51.1 `aws.eks.NodeGroupTaintArgs` ("The key of the taint.
  Maximum length of 63.", "The value of the taint. Maximum length of 63.").
  Kubernetes itself takes a key of up to 253 + 1 + 63 and an empty value
  (kubernetes.io/docs/concepts/overview/working-with-objects/labels); `fleet.names` checks
  those rules on both clouds.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.errors import Where
from fleet.k8s_names import RUN_ID_MAX, WorkloadShape, longest_pool_name, smoke_names
from fleet.labels import GATE_TAINT_KEY
from fleet.model import ResolvedPool
from fleet.rules.problems import RuleProblems as Reporter

EKS_LABEL_KEY_MAX = 63
EKS_LABEL_VALUE_MIN = 1
EKS_LABEL_VALUE_MAX = 63
EKS_TAINT_KEY_MAX = 63
EKS_TAINT_VALUE_MAX = 63
EKS_SOURCE = "the EKS API (CreateNodegroup / UpdateLabelsPayload, Taint)"


def smoke_shape(pool: ResolvedPool) -> WorkloadShape | None:
    """What a smoke run and a gate proof of the pool render, at its largest: None where no
    Kubernetes workload runs (CPU pools, Cloud TPU VMs)."""
    if pool.shape.kind == "cpu" or pool.cluster is None or pool.runtime == "tpu-vm":
        return None
    if pool.shape.tpu is not None:
        return WorkloadShape("tpu", slices=pool.spec.multislice,
                             hosts_per_slice=pool.shape.hosts)
    return WorkloadShape("gpu", nodes_max=max(pool.node_range[1], pool.node_count, 1))


def check_smoke_names(r: Reporter, pools: Sequence[ResolvedPool]) -> None:
    """A pool whose smoke run or gate proof would generate a name over its object's limit is
    refused: the field, the limit, the worst-case name and the longest pool name that fits."""
    for pool in pools:
        shape = smoke_shape(pool)
        if shape is None:
            continue
        for g in smoke_names(pool.name, shape):
            if g.over <= 0:
                continue
            room = longest_pool_name(shape)
            r.add(Where("pools", name=pool.name, field="name"),
                  f"pool name {pool.name!r} ({len(pool.name)} characters): {g.what} would "
                  f"be {g.name!r} ({len(g.name)} characters) at the longest run id "
                  f"({RUN_ID_MAX} characters), over the {g.limit} of {g.by}; every smoke "
                  "run and every gate proof of the pool would be refused",
                  f"shorten the pool name to {room} characters or fewer (e.g. "
                  f"{pool.name[:room].rstrip('-')!r})" if room else
                  "use a smaller slice or fewer slices")
            break


def check_eks_labels(r: Reporter, pool: ResolvedPool) -> None:
    """An EKS node group's labels (the pool's and accelfleet's) and taints (the pool's and
    the gate's) within the EKS API's limits."""
    if pool.cloud != "aws" or pool.runtime == "tpu-vm":
        return
    at = Where("pools", name=pool.name)
    own = pool.spec.labels
    for key, value in pool.labels.items():
        where = at.dot(f"labels.{key}")
        if len(key) > EKS_LABEL_KEY_MAX:
            r.add(at.dot("labels"), f"label key {key!r} is {len(key)} characters; an EKS "
                  f"node group takes label keys of at most {EKS_LABEL_KEY_MAX}, prefix and "
                  f"name together ({EKS_SOURCE})",
                  f"shorten the key to {EKS_LABEL_KEY_MAX} characters or fewer, e.g. a "
                  "shorter prefix")
        # accelfleet's own values are pool and team names, refused as names (fleet.names)
        if key in own and not EKS_LABEL_VALUE_MIN <= len(value) <= EKS_LABEL_VALUE_MAX:
            size = f"a value of {len(value)} characters" if value else "an empty value"
            r.add(where, f"label {key!r} has {size}; an EKS node group takes label values "
                  f"of {EKS_LABEL_VALUE_MIN}-{EKS_LABEL_VALUE_MAX} characters ({EKS_SOURCE})",
                  "give it a value of 1-63 characters (Kubernetes allows an empty value; "
                  "EKS does not), or drop the label")
    taints = [(f"taints[{i}]", t.key, t.value) for i, t in enumerate(pool.spec.taints)]
    if pool.gated:
        taints.append(("gate", GATE_TAINT_KEY, ""))
    for field, key, value in taints:
        if len(key) > EKS_TAINT_KEY_MAX:
            r.add(at.dot(f"{field}.key"), f"taint key {key!r} is {len(key)} characters; an "
                  f"EKS node group takes taint keys of at most {EKS_TAINT_KEY_MAX}, prefix "
                  f"and name together ({EKS_SOURCE})",
                  f"shorten the key to {EKS_TAINT_KEY_MAX} characters or fewer")
        if len(value) > EKS_TAINT_VALUE_MAX:
            r.add(at.dot(f"{field}.value"), f"taint value of {len(value)} characters; an EKS "
                  f"node group takes at most {EKS_TAINT_VALUE_MAX} ({EKS_SOURCE})",
                  f"shorten it to {EKS_TAINT_VALUE_MAX} characters or fewer")
