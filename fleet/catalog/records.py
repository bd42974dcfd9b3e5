"""Frozen, typed records of the catalog. Units are in the field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Cloud = Literal["gcp", "aws"]
Kind = Literal["gpu", "tpu", "cpu"]  # cpu: a plain CPU machine, no accelerator
CLOUDS: tuple[Cloud, ...] = ("gcp", "aws")
HOURS_PER_MONTH = 730.0


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One chip or GPU and its vendor peak figures (dense bf16)."""

    key: str
    name: str
    kind: Kind
    memory_gib: float
    source: str
    bf16_tflops: float | None = None
    memory_gbps: float | None = None
    memory_type: str = ""
    jax_devices_per_chip: int = 1
    verified: bool = True
    aliases: tuple[str, ...] = ()
    nvlinks: int = 0  # NVLink links per GPU (0: PCIe only); smoke checks every one is up
    nvlinks_source: str = ""
    # PCI device IDs (vendor 0x10de) of the GPU's boards: how `smoke local` tells an H100 SXM
    # from an H100 PCIe or NVL, which share the name's "H100" (the catalog's ids_source)
    pci_device_ids: tuple[int, ...] = ()
    # the passive health signal families the GPU part keeps (data/gpu_health.yaml, NVLink from
    # `nvlinks`; fleet.catalog.health); () where the catalog does not say: judged whole
    health_signals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def as_toleration(self) -> dict[str, str]:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


@dataclass(frozen=True, slots=True)
class GpuNetworking:
    """The extra networking a GPU machine needs for GPU-to-GPU traffic across nodes.

    kind: tcpx / tcpxo / rdma (Google Cloud GPUDirect) or efa (AWS).
    """

    kind: Literal["tcpx", "tcpxo", "rdma", "efa"]
    extra_vpcs: int = 0
    rdma_subnets: int = 0
    mtu: int = 0
    efa_interfaces: int = 0
    source: str = ""
    # EFA: the device supports RDMA read, so GPUDirect RDMA runs and FI_EFA_USE_DEVICE_RDMA=1 is
    # safe (libfabric aborts when it is set on a device without RDMA read)
    efa_rdma_read: bool = False
    # EFA: NCCL must run with GPUDirect RDMA here (aws-ofi-nccl's gdr_required): tier 3 requires
    # `/GDRDMA` on every NET channel; False: NCCL over EFA without GDR is healthy
    efa_gdr: bool = False

    @property
    def gpu_nics(self) -> int:
        """The NICs GPU traffic uses on one machine, as NCCL should count them: the EFA
        interfaces, the RDMA subnets (one NIC each), or the extra GPUDirect VPCs."""
        if self.kind == "efa":
            return self.efa_interfaces
        return self.rdma_subnets if self.kind == "rdma" else self.extra_vpcs


@dataclass(frozen=True, slots=True)
class HostMount:
    """A host directory a pod's container mounts (a hostPath volume)."""

    volume: str
    host_path: str
    mount_path: str


@dataclass(frozen=True, slots=True)
class GkeNetwork:
    """One GKE `Network` object (and its `GKENetworkParamSet`) that a GPUDirect node joins, in
    the node's NIC order after eth0: a `NetDevice` network is a VPC of its own with one subnet;
    an `RDMA` network is one subnet of the cluster's RoCE VPC."""

    name: str
    device_mode: Literal["NetDevice", "RDMA"]


@dataclass(frozen=True, slots=True)
class PodInterface:
    """One extra pod network interface: its name in the pod and the GKE `Network` it joins."""

    interface: str
    network: str


@dataclass(frozen=True, slots=True)
class FabricDaemon:
    """The per-pod sidecar a fabric needs beside the workload (GPUDirect-TCPX/TCPXO's RxDM).

    `devices` are given to it by the NRI device injector (`devices.gke.io/container.<name>`);
    `ready_file` appears once it is ready (a startup probe waits for it).
    """

    name: str
    image: str
    command: tuple[str, ...]
    source: str
    args: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    mounts: tuple[HostMount, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ready_file: str = ""


@dataclass(frozen=True, slots=True)
class Fabric:
    """What a workload pod needs to use a GPU fabric (kind as in `GpuNetworking`), and the
    names NCCL prints for it (`NCCL INFO Using network <name>`)."""

    kind: Literal["tcpx", "tcpxo", "rdma", "efa"]
    nccl_networks: tuple[str, ...]
    source: str
    default_interface: str = ""
    interfaces: tuple[PodInterface, ...] = ()
    networks: tuple[GkeNetwork, ...] = ()  # GKE: what the cluster makes and the nodes join
    mounts: tuple[HostMount, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    nccl_env_file: str = ""
    nccl_lib: str = ""  # the NCCL core the fabric's installer ships, as the pod sees it
    daemon: FabricDaemon | None = None
    capabilities: tuple[str, ...] = ()  # Linux capabilities the workload container adds
    resources: tuple[tuple[str, str], ...] = ()  # what each pod requests (and limits) beside GPUs
    rdma_env: tuple[tuple[str, str], ...] = ()  # env only where the machine has RDMA read (EFA)

    @property
    def interfaces_annotation(self) -> list[dict[str, str]]:
        """The value of `networking.gke.io/interfaces`, before JSON encoding."""
        return [{"interfaceName": i.interface, "network": i.network} for i in self.interfaces]


@dataclass(frozen=True, slots=True)
class MachineType:
    """A GPU machine (Google Cloud) or instance type (AWS), or a CPU one (accelerator "cpu",
    no GPUs) for system pools and plain CPU pools."""

    cloud: Cloud
    name: str
    family: str
    accelerator: str
    gpus: int
    vcpus: int = 0  # given for CPU machine types
    gke_accelerator: str | None = None
    networking: GpuNetworking | None = None
    capacity_block: bool = False  # aws: EC2 Capacity Blocks for ML can reserve it
    flex_start_compact: bool = False  # gcp: GKE allows COMPACT placement with flex-start
    # gcp: the N1 machine type the GPUs are attached to (`name` is then the catalog's key,
    # n1-standard-8-t4x1: the machine and its GPU count, which GKE takes as two fields)
    attached_to: str = ""

    @property
    def cloud_machine_type(self) -> str:
        """The machine type the cloud is asked for (and that its nodes' labels name)."""
        return self.attached_to or self.name


@dataclass(frozen=True, slots=True)
class TpuGeneration:
    """The rules of one Cloud TPU generation, from which its slice shapes are generated."""

    key: str
    accelerator: str
    gke_accelerator: str
    tpu_api_name: str
    dims: int
    max_chips: int
    multihost_chips_per_vm: int
    machine_types: tuple[tuple[int, str], ...]
    naming: Literal["tensorcores", "chips"]
    tensorcores_per_chip: int
    source: str
    placement: Literal["compact", "workload-policy"] = "compact"
    # The largest side of a slice, sides sorted ascending (v5p 16x16x24): a topology whose
    # sorted sides exceed any of these is refused, whatever its chip count. () = no bound
    # beyond max_chips. `max_sides_source` says where the bound was read.
    max_sides: tuple[int, ...] = ()
    max_sides_source: str = ""

    def machine_for(self, chips_per_vm: int) -> str | None:
        return dict(self.machine_types).get(chips_per_vm)

    @property
    def name_units_per_chip(self) -> int:
        """What one chip counts for in a Cloud TPU API name (v5p: 2 TensorCores; v6e: 1)."""
        return self.tensorcores_per_chip if self.naming == "tensorcores" else 1

    def api_name(self, chips: int) -> str:
        """The Cloud TPU API name of a slice of `chips` chips: v5p-128, v6e-8."""
        return f"{self.tpu_api_name}-{chips * self.name_units_per_chip}"


@dataclass(frozen=True, slots=True)
class Price:
    """A public list price per hour, per machine or per TPU chip."""

    cloud: Cloud
    machine: str
    unit: Literal["machine_hour", "chip_hour"]
    region: str
    as_of: str
    source: str
    on_demand_usd: float | None = None
    spot_usd: float | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class SystemPoolDefaults:
    """What a cluster's system pool is unless the stack says otherwise (one per cloud)."""

    cloud: Cloud
    machine_type: str
    nodes: int
    disk_size_gb: int
    source: str


@dataclass(frozen=True, slots=True)
class Shape:
    """What one unit of a pool is: a GPU machine, or a TPU slice (one or more hosts).

    A GPU node pool of N nodes is N units of one host each; a TPU slice is one unit of
    `hosts` hosts, and a multislice is several identical units.
    """

    cloud: Cloud
    accelerator: Accelerator
    machine_type: str
    devices_per_host: int
    hosts: int = 1
    machine: MachineType | None = None
    tpu: TpuGeneration | None = None
    topology: tuple[int, ...] = field(default=())

    @property
    def kind(self) -> Kind:
        return self.accelerator.kind

    @property
    def chips(self) -> int:
        return self.devices_per_host * self.hosts

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1

    @property
    def topology_str(self) -> str:
        return "x".join(str(d) for d in self.topology)

    @property
    def jax_devices(self) -> int:
        return self.chips * self.accelerator.jax_devices_per_chip

    @property
    def jax_devices_per_host(self) -> int:
        return self.devices_per_host * self.accelerator.jax_devices_per_chip

    @property
    def networking(self) -> GpuNetworking | None:
        return self.machine.networking if self.machine else None

    @property
    def cloud_machine_type(self) -> str:
        """What the cloud calls the machine (n1-standard-8 for the catalog's
        n1-standard-8-t4x1); `machine_type` is the catalog's key for it."""
        return self.machine.cloud_machine_type if self.machine else self.machine_type

    def describe(self) -> str:
        if self.tpu is not None:
            return (
                f"TPU {self.tpu.key} {self.topology_str}: {self.chips} "
                f"chip{'s' if self.chips != 1 else ''} on {self.hosts} "
                f"host{'s' if self.hosts != 1 else ''} of {self.machine_type}"
            )
        if self.kind == "cpu":
            vcpus = self.machine.vcpus if self.machine else 0
            return f"{self.machine_type}: {vcpus} vCPU, no accelerator"
        if self.machine is not None and self.machine.attached_to:
            return (f"{self.machine.attached_to} with {self.devices_per_host} x "
                    f"{self.accelerator.name} attached")
        return f"{self.machine_type}: {self.devices_per_host} x {self.accelerator.name}"
