"""What `runtime: tpu-vm` (Cloud TPU VMs outside Kubernetes) cannot build as a stack says."""

from __future__ import annotations

from fleet.errors import Problems, Where
from fleet.spec.fields import Pool


def tpu_vm_limits(r: Problems, pool: Pool, at: Where) -> None:
    """What `runtime: tpu-vm` cannot build as the stack says (issue 20, item 8): pulumi-gcp's
    tpu.V2Vm makes one independent VM per slice (a Cloud TPU Multislice is one queued
    resource of N nodes that share a DCN setup: tpu.V2QueuedResource, which cannot set the
    service account, secure boot or labels), and its schedulingConfig has `reserved: true` but
    no reservation name (any reservation of the project is used, or none)."""
    if pool.multislice > 1:
        r.add(at.dot("multislice"),
              f"{pool.multislice} Cloud TPU VM slices would be {pool.multislice} independent "
              "VMs, not a Multislice: a Cloud TPU Multislice is one queued resource "
              "(https://cloud.google.com/tpu/docs/multislice-introduction), which pulumi-gcp "
              "cannot give the dedicated service account, secure boot or labels",
              "drop `runtime: tpu-vm` to run the slices in GKE (a Multislice of node pools), "
              "or declare one pool per independent slice")
    if pool.capacity.reservation:
        r.add(at.dot("capacity.reservation"),
              f"a Cloud TPU VM cannot name reservation {pool.capacity.reservation!r}: "
              "pulumi-gcp's tpu.V2Vm schedulingConfig takes only `reserved: true` (any "
              "reservation of the project, or none), so the name would be dropped",
              "drop `runtime: tpu-vm` to run the slice in GKE, whose node pool names the "
              "reservation, or remove the reservation")
