"""The NCCL plugin installers (GPUDirect TCPX, TCPXO, RDMA) against the upstream manifests.

Upstream read: GoogleCloudPlatform/container-engine-accelerators@992db81 (2026-06-09)
gpudirect-tcpx/nccl-tcpx-installer.yaml (image v3.1.9; install, then copy /var/lib/tcpx/lib64
to the host's /home/kubernetes/bin/nvidia/lib64; the bind-mount/remount-exec layout of /var/lib/tcpx
was dropped in Oct 2023, commits 3956e7a1 and 51aaf871 "remove mount update"),
gpudirect-tcpxo/nccl-tcpxo-installer.yaml (a privileged `pre-installation` init container that
runs on the host: an iptables INPUT accept rule, `modprobe import-helper`, and a bind mount of
every aperture device (PCI 1ae0:0084) under /dev/aperture_devices; then install v1.0.15 and copy
/var/lib/tcpxo/lib64 to /home/kubernetes/bin/nvidia/lib64, where workloads source
nccl-env-profile.sh), gpudirect-rdma/nccl-rdma-installer.yaml (image v1.1.1 since 155bfa49,
2026-03-09; `install` without --install-nccl since 2da1c92f, 2026-05-06; copy /var/lib/gib/lib64
to /home/kubernetes/bin/nvidia/lib64 and /var/lib/gib to /home/kubernetes/bin/gib). Cluster
Toolkit (GoogleCloudPlatform/cluster-toolkit@1047080, modules/compute/gke-node-pool/
gpu_direct.tf) applies the same manifests ("nccl_plugin v3.1.9 for tcpx", v1.0.14 for tcpxo).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import kubernetes_validate
import pytest

from components.gcp._k8s import nccl_installer
from fleet.catalog import load_catalog

K8S_VERSION = "1.33"
HOST_LIB = "/home/kubernetes/bin/nvidia/lib64"
IMAGES = {
    "tcpx": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
    "tcpxo": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:"
             "v1.0.15@sha256:4c9f0de3f39455a2ea35e844e0fc92564ca5629f6b03250fde40e8160719dae4",
    "rdma": "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1",
}
ACCELERATORS = {"tcpx": ["nvidia-h100-80gb"], "tcpxo": ["nvidia-h100-mega-80gb"],
                "rdma": ["nvidia-b200", "nvidia-h200-141gb"]}


def pod_spec(kind: str) -> dict[str, Any]:
    obj = nccl_installer(kind, ACCELERATORS[kind])
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def script(container: dict[str, Any]) -> str:
    argv = [*container.get("command", []), *container.get("args", [])]
    return "\n".join(argv)


def host_path(spec: dict[str, Any], container: dict[str, Any], path: str) -> str | None:
    """Where `path` inside the container lands on the host, through its hostPath mounts."""
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    best = None
    for m in container.get("volumeMounts", []):
        mount = m["mountPath"].rstrip("/")
        if (path == mount or path.startswith(mount + "/")) and m["name"] in volumes and \
                (best is None or len(mount) > len(best[0])):
            best = (mount, volumes[m["name"]])
    if best is None:
        return None
    return posixpath.normpath(best[1] + path[len(best[0]):])


def copies(spec: dict[str, Any]) -> dict[str, str]:
    """source in the installer -> host directory, for every `cp -r SRC/. DST` it runs."""
    out = {}
    for c in spec["initContainers"]:
        for src, dst in re.findall(r"cp -r (\S+)/\. (\S+)", script(c)):
            landed = host_path(spec, c, dst)
            assert landed is not None, f"{dst} is not on a host volume in {c['name']}"
            out[src] = landed
    return out


@pytest.mark.parametrize("kind", sorted(IMAGES))
def test_installer_image_is_the_upstream_pin(kind: str) -> None:
    installers = [c for c in pod_spec(kind)["initContainers"]
                  if c["name"] == f"nccl-{kind}-installer"]
    assert [c["image"] for c in installers] == [IMAGES[kind]]


def test_tcpxo_runs_the_pre_installation_on_the_host_first() -> None:
    spec = pod_spec("tcpxo")
    first, installer = spec["initContainers"][0], spec["initContainers"][1]
    assert installer["name"] == "nccl-tcpxo-installer"
    assert first["securityContext"] == {"privileged": True}
    assert first["command"][:5] == ["nsenter", "-at", "1", "--", "sh"]  # PID 1's namespaces
    text = script(first)
    assert "iptables -I INPUT -p tcp -m tcp -j ACCEPT" in text
    assert "modprobe import-helper" in text
    assert "1ae0:0084" in text and "/dev/aperture_devices" in text and "mount --bind" in text
    assert spec["hostPID"] is True
    assert "@sha256:" in first["image"]


@pytest.mark.parametrize(("kind", "src"), [("tcpx", "/var/lib/tcpx/lib64"),
                                           ("tcpxo", "/var/lib/tcpxo/lib64"),
                                           ("rdma", "/var/lib/gib/lib64")])
def test_plugin_lands_where_workloads_load_it(kind: str, src: str) -> None:
    assert copies(pod_spec(kind))[src] == HOST_LIB


def test_rdma_copies_gib_and_installs_without_nccl() -> None:
    spec = pod_spec("rdma")
    assert copies(spec)["/var/lib/gib"] == "/home/kubernetes/bin/gib"
    text = script(spec["initContainers"][0])
    assert "/scripts/container_entry.sh install\n" in text + "\n"
    assert "--install-nccl" not in text
    lib = next(v for v in spec["volumes"] if v["name"] == "library-dir-host")
    assert lib["hostPath"] == {"path": HOST_LIB, "type": "DirectoryOrCreate"}


def test_tcpx_uses_the_current_layout() -> None:
    spec = pod_spec("tcpx")
    assert [c["name"] for c in spec["initContainers"]] == ["nccl-tcpx-installer"]
    text = script(spec["initContainers"][0])
    assert "--install-nccl" in text
    assert "remount" not in text and "nsenter" not in text


@pytest.mark.parametrize("kind", ["tcpxo", "rdma"])
def test_nccl_env_profile_is_where_the_installer_puts_it(kind: str) -> None:
    """The workload sources the fabric's env profile through its own host mounts."""
    fabric = load_catalog().fabrics[kind]
    mounts = {m.mount_path: m.host_path for m in fabric.mounts}
    mount = next(m for m in mounts if fabric.nccl_env_file.startswith(m + "/"))
    on_host = mounts[mount] + fabric.nccl_env_file[len(mount):]
    assert any(on_host.startswith(dst + "/") for dst in copies(pod_spec(kind)).values())
