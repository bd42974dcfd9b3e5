"""A taint's effect as each API spells it. The stack (and the catalog, and Kubernetes itself)
writes the Kubernetes form; the GKE API and the EKS API each take their own enum.

Sources (read 2026-11-24):
- Kubernetes core/v1 Taint.effect: NoSchedule, PreferNoSchedule, NoExecute
  (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).
- GKE API NodeTaint.Effect: EFFECT_UNSPECIFIED, NO_SCHEDULE ("NoSchedule"),
  PREFER_NO_SCHEDULE ("PreferNoSchedule"), NO_EXECUTE ("NoExecute")
  (https://cloud.google.com/ruby/docs/reference/google-cloud-container-v1beta1/0.8.3/Google-Cloud-Container-V1beta1-NodeTaint-Effect).
- EKS API Taint.effect (node groups): "When using AWS CLI or API, taint effects must be
  NO_SCHEDULE, PREFER_NO_SCHEDULE, or NO_EXECUTE. When using Kubernetes directly or kubectl,
  taint effects must be NoSchedule, PreferNoSchedule, or NoExecute."
  (https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_eks_v2.TaintEffect.html, which
  points to https://docs.aws.amazon.com/eks/latest/userguide/node-taints-managed-node-groups.html).
"""

from __future__ import annotations

from typing import Literal

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]  # the stack's (Kubernetes) form
Api = Literal["kubernetes", "gke", "eks"]

EFFECTS: dict[Effect, dict[Api, str]] = {
    "NoSchedule": {"kubernetes": "NoSchedule", "gke": "NO_SCHEDULE", "eks": "NO_SCHEDULE"},
    "PreferNoSchedule": {"kubernetes": "PreferNoSchedule", "gke": "PREFER_NO_SCHEDULE",
                         "eks": "PREFER_NO_SCHEDULE"},
    "NoExecute": {"kubernetes": "NoExecute", "gke": "NO_EXECUTE", "eks": "NO_EXECUTE"},
}
NO_SCHEDULE: Effect = "NoSchedule"  # what a taint does unless it says otherwise


def api_effect(effect: str, api: Api) -> str:
    """`effect` (the stack's spelling) as `api` takes it; KeyError for an effect that is not
    one (the spec and the catalog accept only these three)."""
    return EFFECTS[effect][api]  # type: ignore[index]
