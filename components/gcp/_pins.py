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
# The host steps' image (it only runs nsenter): NVIDIA/aicr bill of materials
# (gke-nccl-tcpxo component), which pins it by digest; upstream uses an unpinned "ubuntu".
HOST_TOOLS_IMAGE = (
    "ubuntu:26.04@sha256:2260313b31c8c011cd2eebe728008efac1b3982be73eb71348ea2648d2c0e09b"
)


@dataclass(frozen=True)
class HostVolume:
    """A hostPath volume of an installer: its name, host path, mount path in the installer,
    and hostPath type ("" for none)."""

    name: str
    host_path: str
    mount_path: str
    type: str = ""


@dataclass(frozen=True)
class NcclInstaller:
    """The NCCL plugin installer of one GPUDirect kind, as a DaemonSet's moving parts.

    `script` runs with `/bin/sh -c` in the installer image; `host_script`, where given, runs
    first in the host's namespaces (`nsenter` into PID 1) from HOST_TOOLS_IMAGE. Both are
    constants written here from the upstream manifests' steps, never built from input.
    """

    image: str
    script: str
    volumes: tuple[HostVolume, ...]
    host_script: str = ""
    nri_injector: bool = True
    source: str = ""


# The host steps TCPXO needs before its plugin works (upstream's `pre-installation` init
# container): accept the plugin's TCP traffic, load the dma-buf import helper, and bind-mount
# every aperture device (PCI vendor:device 1ae0:0084) under /dev/aperture_devices, readable by
# the workload (NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY). Idempotent: a restarted pod neither
# stacks iptables rules nor mounts.
TCPXO_HOST_SCRIPT = """set -eu
iptables -C INPUT -p tcp -m tcp -j ACCEPT 2>/dev/null || iptables -I INPUT -p tcp -m tcp -j ACCEPT
modprobe import-helper
mkdir -p /dev/aperture_devices
for bdf in $(lspci -D -d 1ae0:0084 | cut -d ' ' -f 1); do
  target="/dev/aperture_devices/$bdf"
  mkdir -p "$target"
  umount -R "$target" 2>/dev/null || true
  mount --bind "$(readlink -f "/sys/bus/pci/devices/$bdf")" "$target"
done
chmod -R a+r /dev/aperture_devices
for f in /dev/aperture_devices/*/resource*; do
  if [ -e "$f" ]; then chmod a+rw "$f"; fi
done
"""

# Install the plugin into the hostPath /var/lib, then copy its libraries (and, for TCPXO, the
# NCCL env profile) to the host's /home/kubernetes/bin/nvidia/lib64, which workloads mount at
# /usr/local/nvidia/lib64.
_VAR_LIB = HostVolume("var-lib", "/var/lib", "/var/lib")
_BIN = HostVolume("library-dir-host", "/home/kubernetes/bin", "/usr/local")

NCCL_INSTALLERS: dict[str, NcclInstaller] = {
    "tcpx": NcclInstaller(
        # Tag v3.1.9: container-engine-accelerators gpudirect-tcpx/nccl-tcpx-installer.yaml at
        # 992db81 (2026-06-09) and cluster-toolkit gke-node-pool/gpu_direct.tf at 1047080
        # ("nccl_plugin v3.1.9 for tcpx"); no public source gave its digest.
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
        script="""set -ex
/scripts/container_entry.sh install --install-nccl
mkdir -p /usr/local/nvidia/lib64
cp -r /var/lib/tcpx/lib64/. /usr/local/nvidia/lib64
""",
        volumes=(_VAR_LIB, _BIN),
        source="container-engine-accelerators@992db81 gpudirect-tcpx/nccl-tcpx-installer.yaml",
    ),
    "tcpxo": NcclInstaller(
        # Tag v1.0.15, the one container-engine-accelerators gpudirect-tcpxo/
        # nccl-tcpxo-installer.yaml names at 992db81 (release "Jan 9, 2026"); digest: NVIDIA/aicr
        # bill of materials, gke-nccl-tcpxo component.
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"
        "@sha256:4c9f0de3f39455a2ea35e844e0fc92564ca5629f6b03250fde40e8160719dae4",
        script="""set -ex
chmod 755 /scripts/container_entry.sh
/scripts/container_entry.sh install --install-nccl
mkdir -p /usr/local/nvidia/lib64
cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64
""",
        volumes=(_VAR_LIB, _BIN),
        host_script=TCPXO_HOST_SCRIPT,
        source="container-engine-accelerators@992db81 gpudirect-tcpxo/nccl-tcpxo-installer.yaml",
    ),
    "rdma": NcclInstaller(
        # Tag v1.1.1: container-engine-accelerators gpudirect-rdma/nccl-rdma-installer.yaml at
        # 992db81 (bumped 2026-03-09, 155bfa49; `install` lost --install-nccl 2026-05-06,
        # 2da1c92f); no public source gave its digest.
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1",
        script="""set -ex
/scripts/container_entry.sh install
cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64
cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib
""",
        volumes=(
            HostVolume("library-dir-host", "/home/kubernetes/bin/nvidia/lib64",
                       "/usr/local/home/kubernetes/bin/nvidia/lib64", "DirectoryOrCreate"),
            HostVolume("gib", "/home/kubernetes/bin/gib", "/usr/local/home/kubernetes/bin/gib"),
        ),
        # RDMA needs no NRI device injector: the injector's own manifest selects only the
        # TCPX / TCPXO accelerators (nvidia-h100-80gb, nvidia-h100-mega-80gb).
        nri_injector=False,
        source="container-engine-accelerators@992db81 gpudirect-rdma/nccl-rdma-installer.yaml",
    ),
}

# Cloud TPU VM software versions (Cloud TPU docs, "TPU software versions"), per generation.
# No tpu7x: the Cloud TPU API does not take it (fleet/catalog/data/support.yaml
# `runtime_refusals`, Google's create-tpu-vm page, read 2026-11-27), so the rules refuse a tpu7x
# TPU VM before a plan is made.
TPU_VM_RUNTIME: dict[str, str] = {
    "v4": "tpu-ubuntu2204-base",
    "v5e": "v2-alpha-tpuv5-lite",
    "v5p": "v2-alpha-tpuv5",
    "v6e": "v2-alpha-tpuv6e",
}
