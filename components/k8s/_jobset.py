"""`JobSetController`: the JobSet controller and CRD, as one pinned Helm release.

Multi-host TPU slices run as JobSets (`jobset.x-k8s.io/v1alpha2`): the smoke launcher submits
one per slice, and so will TPU training.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.k8s._addons import pinned_release, release_opts
from components.k8s._charts import JOBSET, JOBSET_IMAGE_REPOSITORY, JOBSET_IMAGE_TAG
from components.k8s._values import jobset_controller_values
from fleet.model import ACCELERATOR_LABEL

TYPE = "accelfleet:k8s:JobSetController"


@dataclass(frozen=True)
class JobSetControllerArgs:
    """accelerator_label: a label every accelerator node carries; the controller avoids them.
    node_selector: the nodes it runs on (the system pool's label), or none."""

    accelerator_label: str = ACCELERATOR_LABEL
    node_selector: Mapping[str, str] = field(default_factory=dict)


class JobSetController(pulumi.ComponentResource):
    """The JobSet Helm release; pass the cluster's Kubernetes provider in `opts`, and in its
    `depends_on` the untainted nodes the controller will run on (the system pool)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: JobSetControllerArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        values = jobset_controller_values(JOBSET_IMAGE_REPOSITORY, JOBSET_IMAGE_TAG,
                                          args.accelerator_label, args.node_selector)
        self.release = pinned_release(f"{name}-{JOBSET.chart}", JOBSET, values,
                                      release_opts(self, opts))
        self.register_outputs({"version": self.release.version,
                               "namespace": self.release.namespace})
