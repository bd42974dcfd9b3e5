"""What accelfleet installs into a cluster or onto a TPU VM, pinned.

Each image is pinned by digest where a public source gave one, otherwise by an exact version
tag (never a moving tag such as `latest`); the comment names the source that was read.
Bump these deliberately, in one place, and re-run `accelfleet plan` to see the change.
"""

from __future__ import annotations

from dataclasses import dataclass

# GoogleCloudPlatform/container-engine-accelerators, nri_device_injector/nri-device-injector.yaml
# at commit d4919d335f6cddb2d1b1f7242090ff9e93316579.
NRI_DEVICE_INJECTOR_IMAGE = (
    "gcr.io/gke-release/nri-device-injector"
    "@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"
)
# gpudirect-rdma/nccl-rdma-installer.yaml at commit 2c776f7e9656a2b6476f19938b738b4186000ce3.
PAUSE_IMAGE = (
    "gke.gcr.io/pause:3.8"
    "@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
)
# NVIDIA/aicr bill of materials (gke-nccl-tcpxo component), which pins it by digest.
HOST_TOOLS_IMAGE = (
    "ubuntu:26.04@sha256:2260313b31c8c011cd2eebe728008efac1b3982be73eb71348ea2648d2c0e09b"
)


@dataclass(frozen=True)
class NcclInstaller:
    """The NCCL plugin installer of one GPUDirect kind, as a DaemonSet's moving parts."""

    image: str
    command: tuple[str, ...]
    # (volume name, host path, mount path in the installer)
    volumes: tuple[tuple[str, str, str], ...]
    # argv of privileged steps run in the host's namespaces after the install
    host_steps: tuple[tuple[str, ...], ...] = ()
    nri_injector: bool = True
    source: str = ""


NCCL_INSTALLERS: dict[str, NcclInstaller] = {
    "tcpx": NcclInstaller(
        # Version tag: container-engine-accelerators gpudirect-tcpx/README.md release notes.
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.12",
        command=("/scripts/container_entry.sh", "install", "--install-nccl"),
        volumes=(("var-lib", "/var/lib", "/var/lib"),),
        host_steps=(
            ("nsenter", "-at", "1", "--", "mount", "--bind", "/var/lib/tcpx", "/var/lib/tcpx"),
            ("nsenter", "-at", "1", "--", "mount", "-o", "remount,exec", "/var/lib/tcpx"),
        ),
        source="GKE docs: GPUDirect-TCPX; container-engine-accelerators gpudirect-tcpx/",
    ),
    "tcpxo": NcclInstaller(
        # Tag and digest: NVIDIA/aicr bill of materials, gke-nccl-tcpxo component.
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"
        "@sha256:4c9f0de3f39455a2ea35e844e0fc92564ca5629f6b03250fde40e8160719dae4",
        command=("/scripts/container_entry.sh", "install", "--install-nccl"),
        volumes=(("var-lib", "/var/lib", "/var/lib"),),
        source="GKE docs: GPUDirect-TCPXO; container-engine-accelerators gpudirect-tcpxo/",
    ),
    "rdma": NcclInstaller(
        # Version tag: container-engine-accelerators gpudirect-rdma/nccl-rdma-installer.yaml
        # at commit 2c776f7e9656a2b6476f19938b738b4186000ce3.
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.0.6",
        command=("/scripts/container_entry.sh", "install", "--install-nccl"),
        volumes=(
            ("library-dir-host", "/home/kubernetes/bin/nvidia/lib64",
             "/usr/local/home/kubernetes/bin/nvidia/lib64"),
            ("gib", "/home/kubernetes/bin/gib", "/usr/local/home/kubernetes/bin/gib"),
        ),
        # RDMA needs no NRI device injector: the injector's own manifest selects only the
        # TCPX / TCPXO accelerators (nvidia-h100-80gb, nvidia-h100-mega-80gb).
        nri_injector=False,
        source="GKE docs: GPUDirect RDMA on A3 Ultra / A4; container-engine-accelerators "
        "gpudirect-rdma/",
    ),
}

# Cloud TPU VM software versions (Cloud TPU docs, "TPU software versions"), per generation.
# TPU7x is absent on purpose: the Cloud TPU docs say it is offered through GKE only.
TPU_VM_RUNTIME: dict[str, str] = {
    "v4": "tpu-ubuntu2204-base",
    "v5e": "v2-alpha-tpuv5-lite",
    "v5p": "v2-alpha-tpuv5",
    "v6e": "v2-alpha-tpuv6e",
}
