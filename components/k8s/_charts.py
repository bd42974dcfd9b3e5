"""The Helm charts accelfleet installs into clusters, each pinned to one chart version."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.gate import DCGM_EXPORTER_NAMESPACE
from fleet.names import KUEUE_NAMESPACE


@dataclass(frozen=True)
class Chart:
    """repo: an `https://` chart repository, or an `oci://` registry path holding the chart."""

    repo: str
    chart: str
    version: str
    namespace: str

    @property
    def oci(self) -> bool:
        return self.repo.startswith("oci://")

    @property
    def ref(self) -> str:
        """What Helm installs: the chart's name in its repository, or its full OCI address
        (Helm takes no `--repo` for OCI registries)."""
        return f"{self.repo}/{self.chart}" if self.oci else self.chart


# v0.20.0 is the newest release of NVIDIA/k8s-device-plugin (tag v0.20.0, commit
# 1b826acc6af3079d8923bac395c3124b8861a9a6, 2026-08-19; read 2026-11-24 from the tag's
# deployments/helm/nvidia-device-plugin/Chart.yaml: version and appVersion 0.20.0, the
# node-feature-discovery subchart 0.19.0). From v0.18.2 its DaemonSets' scheduling (nodeSelector,
# affinity, tolerations from the values) is unchanged; new: optional hostNetwork, and a service
# account on every plugin pod.
NVIDIA_DEVICE_PLUGIN = Chart(
    repo="https://nvidia.github.io/k8s-device-plugin",
    chart="nvidia-device-plugin",
    version="0.20.0",
    namespace="nvidia-device-plugin",
)
# v0.5.30 is the newest chart version in aws/eks-charts (stable/aws-efa-k8s-device-plugin/
# Chart.yaml, set by commit bfe91c4 on 2026-07-21; repository HEAD 5239609 of 2026-08-03, read
# 2026-11-23); it runs plugin image v0.5.20. Its DaemonSet is scheduled through the values'
# `supportedInstanceLabels` (see _values.py), not the chart's own instance-type list (v0.5.7's
# list lacked p6-b200.48xlarge).
EFA_DEVICE_PLUGIN = Chart(
    repo="https://aws.github.io/eks-charts",
    chart="aws-efa-k8s-device-plugin",
    version="v0.5.30",
    namespace="kube-system",
)
# 4.8.2 is the newest dcgm-exporter chart (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2, commit
# 691c92762eb551313c825f6efe4ceeee20982801, 2026-05-06; repository HEAD d5e5f51 of 2026-05-12;
# read 2026-11-24 from the tag's deployment/Chart.yaml: version and appVersion 4.8.2). Its
# image is the chart's default, nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless (a tag:
# no digest is published in the chart).
DCGM_EXPORTER = Chart(
    repo="https://nvidia.github.io/dcgm-exporter/helm-charts",
    chart="dcgm-exporter",
    version="4.8.2",
    namespace=DCGM_EXPORTER_NAMESPACE,  # where the gate reads it (fleet.gate)
)
# The exporter's image: the same release's ubuntu22.04 build, not the chart's distroless default.
# The 4.5.3-4.8.2 distroless image was reported serving no DCGM_FI_DEV_XID_ERRORS (its Xid
# count came up blank, not 0, when no Xid had happened) nor the retired-page series, which the
# ubuntu image of the same release served (NVIDIA/dcgm-exporter#646, comment of 2026-06-29;
# #700, 2026-06-26/29); a maintainer closed #646 on 2026-09-18 saying 4.8.4 supplies the Xid
# series, but no 4.8.4 tag or chart is in the stored repository (tags end at 4.5.3-4.8.2;
# HEAD d5e5f510 of 2026-05-12; read 2026-11-28), so the chart stays 4.8.2 with this image.
# The tag is the Makefile's `<dcgm>-<exporter>-<IMAGE_TAG>` for its ubuntu22.04 target (tag
# 4.5.3-4.8.2, commit 691c9276, Makefile `ubuntu22.04: IMAGE_TAG = ubuntu22.04`). Move to
# distroless again with a release whose own notes say the Xid and retired-page series are back.
DCGM_EXPORTER_IMAGE_TAG = "4.5.3-4.8.2-ubuntu22.04"

# JobSet (kubernetes-sigs/jobset), the API multi-host TPU workloads are submitted as
# (`jobset.x-k8s.io/v1alpha2`). v0.12.0 is the newest release (tag 2026-05-08, commit
# f22e565ac3cc3265c7c45ef67ecffdc689af5d77; main at 2026-08-18 is v0.13.0-devel). Read on
# 2026-11-22 from the tag's charts/jobset/Chart.yaml (version 0.12.0) and
# site/content/en/docs/installation/_index.md (`helm install jobset
# oci://registry.k8s.io/jobset/charts/jobset --version 0.12.0 --namespace jobset-system`).
# Helm installs the chart's CRD (crds/) on first install and never upgrades it: a version bump
# must server-side apply the new CRD first.
JOBSET = Chart(
    repo="oci://registry.k8s.io/jobset/charts",
    chart="jobset",
    version="0.12.0",
    namespace="jobset-system",
)
# The controller image, set explicitly so the pin shows in the plan. Exact version tag, not a
# digest: neither the v0.12.0 tag (config/components/manager/kustomization.yaml sets only
# `newTag: v0.12.0`) nor charts/jobset/values.yaml carries a digest, and no upstream image
# promotion record for v0.12.0 was found. The released chart uses this same repository and
# tag (hack/helm-chart-package.sh rewrites the staging image to registry.k8s.io/jobset/jobset
# at the release tag). To pin a digest later, set the tag to "v0.12.0@sha256:<digest>": the
# chart renders `repository:tag`.
JOBSET_IMAGE_REPOSITORY = "registry.k8s.io/jobset/jobset"
JOBSET_IMAGE_TAG = "v0.12.0"

# Kueue (kubernetes-sigs/kueue), the job queueing controller team queues are built on
# (components/k8s/_kueue.py). v0.19.2 is the newest release tag (commit
# 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb, 2026-08-20; main at ff69552 of 2026-08-22 is
# v0.20.0-devel), read 2026-11-24 from the tag's charts/kueue/Chart.yaml (version 0.19.2,
# appVersion v0.19.2) and the v0.19 install doc (`helm install kueue
# oci://registry.k8s.io/kueue/charts/kueue --version=0.19.2 --namespace kueue-system`). Its CRDs
# are chart templates (charts/kueue/templates/crd), so Helm upgrades them with the release;
# they serve kueue.x-k8s.io/v1beta2 (storage) and v1beta1 (deprecated).
KUEUE = Chart(
    repo="oci://registry.k8s.io/kueue/charts",
    chart="kueue",
    version="0.19.2",
    namespace=KUEUE_NAMESPACE,
)
# The controller image, set explicitly so the pin shows in the plan. Exact version tag, not a
# digest: the tag's charts/kueue/values.yaml names the staging image (`release-0.19`), which
# hack/helm-chart-package.sh rewrites to registry.k8s.io/kueue/kueue:<tag> for a release; no
# digest is published in the repository, and the stored copy of the image promoter's manifest
# (kubernetes/k8s.io registry.k8s.io/images/k8s-staging-kueue/images.yaml) stops at v0.13.3.
# To pin a digest later, set the tag to "v0.19.2@sha256:<digest>": the chart renders
# `repository:tag`.
KUEUE_IMAGE_REPOSITORY = "registry.k8s.io/kueue/kueue"
KUEUE_IMAGE_TAG = "v0.19.2"
