"""The Kubernetes provider of a cluster, one for GKE and EKS alike.

- `enable_server_side_apply`: pulumi-kubernetes v4's default, said so that a provider upgrade
  does not change how objects are written.
- `enable_config_map_mutable`: a ConfigMap's data is updated in place instead of the ConfigMap
  being deleted and created anew (pulumi-kubernetes replaces on `data`/`binaryData` unless
  this is set: provider/pkg/provider/provider.go, pulumi/pulumi-kubernetes@94977969d641, read
  2026-11-27; components/engine/data/replacements.yaml). Without it every pool added, removed
  or resized replaced the cluster's gate inventory ConfigMap (issue 27's change-locality test);
  the gate controller's pod template carries the inventory's digest, so the Deployment rolls
  and the controller reads the new inventory.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def cluster_provider(name: str, kubeconfig: pulumi.Input[str],
                     opts: pulumi.ResourceOptions) -> k8s.Provider:
    return k8s.Provider(name, kubeconfig=kubeconfig, enable_server_side_apply=True,
                        enable_config_map_mutable=True, opts=opts)
