"""A GPU pool's pod as smoke.cluster.workload renders it: the agent's arguments, environment,
resources, mounts and volumes, and its fabric (GPUDirect on GKE, EFA on EKS: the networks'
annotations, the NCCL plugin's environment and mounts, the fabric's daemon as a native
sidecar), all of it from the catalog's `Fabric` data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fleet.allocatable import hugepages_2mi_mib
from fleet.errors import InputError
from fleet.inventory import InventoryNetwork, InventoryPool
from fleet.pods import fabric_requests

if TYPE_CHECKING:
    from fleet.catalog import Catalog, Fabric, FabricDaemon, HostMount
    from smoke.cluster.workload import RenderOptions


def _gpu(pool: InventoryPool, options: RenderOptions, catalog: Catalog, ctx: dict[str, Any],
         port: int) -> dict[str, Any]:
    name = ctx["name"]
    args, mounts, volumes = list(ctx["args"]), list(ctx["mounts"]), list(ctx["volumes"])
    resources = dict(ctx["resources"])
    env = [*ctx["env"], {"name": "ACCELFLEET_NODES", "value": str(pool.nodes)},
           {"name": "ACCELFLEET_COORDINATOR", "value": f"{name}-0.{name}"},
           {"name": "ACCELFLEET_COORDINATOR_PORT", "value": str(port)}]
    if options.tier >= 3:
        args += ["--cross-node", "torch"]
    annotations: dict[str, str] = {}
    init: list[dict[str, Any]] = []
    capabilities: list[str] = []
    fabric = _fabric(pool, catalog)
    if fabric is not None:
        fabric_env = list(fabric.env)
        net = _network(pool, catalog)
        if fabric.kind == "efa":
            if net is None:
                raise InputError(f"pool {pool.name}: the catalog has no EFA count for "
                                 f"{pool.machine_type!r}", hint="regenerate the inventory with "
                                 "this accelfleet")
            efa = catalog.kube_section("aws", "efa")["resource"]
            resources[efa] = str(net.efa_interfaces)
            if net.efa_rdma_read:
                fabric_env += fabric.rdma_env
        resources |= fabric_requests(fabric.resources, hugepages_2mi_mib(pool.machine_type))
        capabilities = list(fabric.capabilities)
        env += [{"name": k, "value": v} for k, v in fabric_env]
        annotations = _fabric_annotations(fabric)
        if options.tier >= 3:
            args += ["--expect-transport", ",".join(fabric.nccl_networks),
                     "--expect-fabric", fabric.kind]
            nics = net.gpu_nics if net is not None else 0
            if nics:
                args += ["--expect-nics", str(nics)]
            if fabric.kind == "efa":  # GDR per instance type (catalog efa_gdr), not per fabric
                args += ["--expect-gdr", "yes" if net is not None and net.efa_gdr else "no"]
        if fabric.nccl_env_file:  # one NCCL environment for every tier that runs NCCL
            args += ["--nccl-env-file", fabric.nccl_env_file]
        if fabric.nccl_lib:
            args += ["--nccl-lib", fabric.nccl_lib]
        mounts += _mounts(fabric.mounts)
        host = {m.volume: m.host_path for m in fabric.mounts}
        if fabric.daemon is not None:
            init.append(_sidecar(fabric.daemon))
            host |= {m.volume: m.host_path for m in fabric.daemon.mounts}
        volumes += [{"name": v, "hostPath": {"path": p}} for v, p in host.items()]
    return {**ctx, "args": args, "env": env, "mounts": mounts, "volumes": volumes,
            "resources": resources, "requests": {**resources, **ctx["requests"]},
            "capabilities": capabilities, "annotations": annotations, "init_containers": init,
            "port": port, "pods": pool.nodes}


def _network(pool: InventoryPool, catalog: Catalog) -> InventoryNetwork | None:
    """The pool's fabric figures: the inventory's, or (an inventory saved before it carried
    them) the catalog's for its machine type."""
    if pool.network is not None:
        return pool.network
    machine = catalog.machines.get(pool.machine_type)
    net = machine.networking if machine is not None else None
    return None if net is None else InventoryNetwork(net.gpu_nics, net.efa_interfaces,
                                                     net.efa_rdma_read, net.efa_gdr)


def _fabric(pool: InventoryPool, catalog: Catalog) -> Fabric | None:
    if pool.gpu_networking is None:
        return None
    fabric = catalog.fabrics.get(pool.gpu_networking)
    if fabric is None:
        raise InputError(f"pool {pool.name}: unknown gpu_networking {pool.gpu_networking!r}",
                         hint=f"known: {', '.join(catalog.fabrics)}; regenerate the inventory")
    return fabric


def _mounts(mounts: Sequence[HostMount]) -> list[dict[str, str]]:
    return [{"name": m.volume, "mountPath": m.mount_path} for m in mounts]


def _fabric_annotations(fabric: Fabric) -> dict[str, str]:
    out: dict[str, str] = {}
    if fabric.interfaces:
        out["networking.gke.io/default-interface"] = fabric.default_interface
        out["networking.gke.io/interfaces"] = json.dumps(fabric.interfaces_annotation,
                                                         separators=(",", ":"))
    if fabric.daemon is not None and fabric.daemon.devices:
        # The NRI device injector's format: a YAML list of device paths.
        out[f"devices.gke.io/container.{fabric.daemon.name}"] = "".join(
            f"- path: {d}\n" for d in fabric.daemon.devices)
    return out


def _sidecar(daemon: FabricDaemon) -> dict[str, Any]:
    """The fabric's daemon as a native sidecar: it ends when the agent does, so the Job ends."""
    c: dict[str, Any] = {"name": daemon.name, "image": daemon.image, "restartPolicy": "Always",
                         "command": list(daemon.command)}
    if daemon.args:
        c["args"] = list(daemon.args)
    if daemon.env:
        c["env"] = [{"name": k, "value": v} for k, v in daemon.env]
    if daemon.capabilities:
        c["securityContext"] = {"capabilities": {"add": list(daemon.capabilities)}}
    c["volumeMounts"] = _mounts(daemon.mounts)
    if daemon.ready_file:
        # The agent starts once the daemon is ready; up to 2 minutes, then the sidecar restarts.
        c["startupProbe"] = {"exec": {"command": ["cat", daemon.ready_file]},
                             "initialDelaySeconds": 1, "periodSeconds": 5, "timeoutSeconds": 1,
                             "failureThreshold": 24}
    return c
