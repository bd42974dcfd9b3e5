"""Kubernetes objects for GPUDirect: multi-networking objects and the NCCL plugin installers.

The manifests are plain dicts built by pure functions (tested against the Kubernetes schemas);
`GpuDirectAddons` applies them through the cluster's provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gcp._network import ExtraNetwork
from components.gcp._pins import (
    HOST_TOOLS_IMAGE,
    NCCL_INSTALLERS,
    NRI_DEVICE_INJECTOR_IMAGE,
    PAUSE_IMAGE,
)
from fleet.pods import cpu_quantity, system_pod

ADDONS_TYPE = "accelfleet:gcp:GpuDirectAddons"
GKE_NETWORKING = "networking.gke.io"
NAMESPACE = "kube-system"


def network_objects(extra: list[ExtraNetwork]) -> list[dict[str, Any]]:
    """A GKE `Network` and its `GKENetworkParamSet` per extra node network (cluster-scoped),
    named as the catalog (and the pods' interfaces annotation) names it."""
    out: list[dict[str, Any]] = []
    for net in extra:
        name = net.name
        out.append({
            "apiVersion": f"{GKE_NETWORKING}/v1", "kind": "GKENetworkParamSet",
            "metadata": {"name": name},
            "spec": {"vpc": net.vpc, "vpcSubnet": net.subnet, "deviceMode": net.device_mode},
        })
        out.append({
            "apiVersion": f"{GKE_NETWORKING}/v1", "kind": "Network",
            "metadata": {"name": name},
            "spec": {"type": "Device", "parametersRef": {
                "group": GKE_NETWORKING, "kind": "GKENetworkParamSet", "name": name}},
        })
    return out


def _daemonset(name: str, accelerators: list[str], init: list[dict[str, Any]],
               volumes: list[dict[str, Any]], main: dict[str, Any]) -> dict[str, Any]:
    labels = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": {"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{
                                "key": "cloud.google.com/gke-accelerator",
                                "operator": "In", "values": sorted(accelerators)}]}]}}},
                    "tolerations": [{"operator": "Exists"}],
                    "hostNetwork": True, "hostPID": True,
                    "volumes": volumes,
                    "initContainers": init,
                    "containers": [main],
                },
            },
        },
    }


def nccl_installer(kind: str, accelerators: list[str]) -> dict[str, Any]:
    """The NCCL plugin installer DaemonSet of a GPUDirect kind (tcpx, tcpxo, rdma): the host
    steps first where the kind has them, then the installer, then a pause container."""
    pin = NCCL_INSTALLERS[kind]
    name = f"nccl-{kind}-installer"
    init: list[dict[str, Any]] = []
    if pin.host_script:
        init.append({"name": "pre-installation", "image": HOST_TOOLS_IMAGE,
                     "command": ["nsenter", "-at", "1", "--", "sh", "-c", pin.host_script],
                     "securityContext": {"privileged": True}})
    init.append({
        "name": name, "image": pin.image, "command": ["/bin/sh", "-c"], "args": [pin.script],
        "resources": {"requests": {"cpu": cpu_quantity(
            system_pod("nccl-installer").cpu_millicores)}},
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": v.name, "mountPath": v.mount_path} for v in pin.volumes],
    })
    volumes = [{"name": v.name, "hostPath": {"path": v.host_path, **({"type": v.type}
                                                                     if v.type else {})}}
               for v in pin.volumes]
    pause = {"name": "pause", "image": PAUSE_IMAGE}
    return _daemonset(name, accelerators, init, volumes, pause)


def nri_device_injector(accelerators: list[str]) -> dict[str, Any]:
    """The NRI device injector DaemonSet (GPUDirect-TCPX/TCPXO daemons get GPU devices)."""
    main = {
        "name": "device-injector", "image": NRI_DEVICE_INJECTOR_IMAGE,
        "resources": {"requests": {"cpu": cpu_quantity(
            system_pod("device-injector").cpu_millicores)}},
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "dev", "mountPath": "/dev"},
                         {"name": "nri", "mountPath": "/var/run/nri"}],
    }
    volumes = [{"name": "nri", "hostPath": {"path": "/var/run/nri"}},
               {"name": "dev", "hostPath": {"path": "/dev"}}]
    return _daemonset("device-injector", accelerators, [], volumes, main)


@dataclass(frozen=True)
class GpuDirectKind:
    """One GPUDirect kind in a cluster and the GKE accelerators of its pools."""

    kind: str
    accelerators: list[str]


@dataclass(frozen=True)
class GpuDirectAddonsArgs:
    cluster: str
    kinds: list[GpuDirectKind]
    provider: pulumi.ProviderResource
    networks: list[ExtraNetwork] = field(default_factory=list)


def addon_manifests(kinds: list[GpuDirectKind],
                    networks: list[ExtraNetwork]) -> list[dict[str, Any]]:
    """The cluster's network objects, an installer per kind, and one NRI injector for the
    kinds needing it."""
    objs: list[dict[str, Any]] = network_objects(networks)
    nri: set[str] = set()
    for k in kinds:
        objs.append(nccl_installer(k.kind, k.accelerators))
        if NCCL_INSTALLERS[k.kind].nri_injector:
            nri.update(k.accelerators)
    if nri:
        objs.append(nri_device_injector(sorted(nri)))
    return objs


class GpuDirectAddons(pulumi.ComponentResource):
    """Multi-networking objects, the NCCL plugin installers and the NRI device injector."""

    def __init__(self, name: str, args: GpuDirectAddonsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ADDONS_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        names = []
        for obj in addon_manifests(args.kinds, args.networks):
            rname = f"{args.cluster}-{obj['kind'].lower()}-{obj['metadata']['name']}"
            names.append(rname)
            if obj["kind"] == "DaemonSet":
                k8s.apps.v1.DaemonSet(rname, metadata=obj["metadata"], spec=obj["spec"],
                                      opts=child)
            else:
                k8s.apiextensions.CustomResource(
                    rname, api_version=obj["apiVersion"], kind=obj["kind"],
                    metadata=obj["metadata"], spec=obj["spec"], opts=child)
        self.register_outputs({"objects": names})
