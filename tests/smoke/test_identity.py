"""Which GPU a host carries (issue 37): the PCI device ID decides (catalog pci_device_ids, from
NVIDIA's driver table), never the name alone, so PCIe and NVL parts are not taken for SXM; and a
host whose PCI bus shows NVIDIA GPUs while CUDA fails is a FAIL, not a CPU run. On real
`lspci -nn` and `nvidia-smi` outputs (tests/smoke/data/pci, each with its source)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet.catalog import load_catalog
from smoke.expectations import detect
from smoke.probes import runner
from smoke.probes.backend import Device, nvidia_gpus_on_pci, pci_product_id
from smoke.probes.expect import matches
from smoke.probes.results import Verdict

DATA = Path(__file__).parent / "data" / "pci"
_LSPCI = re.compile(r"^(?P<addr>[0-9a-f]{2}:[0-9a-f]{2}\.\d) .*\[(?P<cls>[0-9a-f]{4})\]: .*"
                    r"\[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\]")
_SMI_ID = re.compile(r"^(?P<name>NVIDIA [^,]+), .*?0x(?P<id>[0-9A-F]{4})10DE\b|"
                     r"^(?P<name2>NVIDIA [^,]+), 0x(?P<id2>[0-9A-F]{4})10DE\b")


def _lspci(name: str) -> list[dict[str, str]]:
    lines = (DATA / name).read_text().splitlines()
    return [m.groupdict() for line in lines if (m := _LSPCI.match(line))]


def _sysfs(tmp_path: Path, rows: list[dict[str, str]], *, domain: str = "0000") -> Path:
    """A /sys/bus/pci/devices tree holding the recorded functions (vendor, device, class as
    the kernel writes them: 0x-prefixed hex), plus a non-GPU function beside them."""
    root = tmp_path / "devices"
    for r in rows:
        d = root / f"{domain}:{r['addr']}"
        d.mkdir(parents=True)
        (d / "vendor").write_text(f"0x{r['vendor']}\n")
        (d / "device").write_text(f"0x{r['device']}\n")
        (d / "class").write_text(f"0x{r['cls']}00\n")
    nic = root / f"{domain}:00:05.0"
    nic.mkdir(parents=True)
    (nic / "vendor").write_text("0x15b3\n")  # a Mellanox NIC: not a GPU
    (nic / "device").write_text("0x1021\n")
    (nic / "class").write_text("0x020700\n")
    return root


def _device(kind: str, pci_id: int | None, gib: float) -> Device:
    return Device(id="cuda0", index=0, platform="gpu", kind=kind, memory_gib=gib,
                  pci="0000:01:00", pci_device_id=pci_id)


@pytest.mark.parametrize(("name", "want"), [
    ("lspci-a100-sxm-torchruntime-15.txt", ["a100-40gb", "a100-80gb"]),  # two hosts
    ("lspci-l40s-akash-99.txt", ["l40s", "l40s"]),
    ("lspci-l40s-g6e-akash-95.txt", ["l40s"]),  # the host's pci.ids has no name: the ID does
])
def test_the_pci_id_in_sysfs_names_the_catalog_part(tmp_path: Path, name: str,
                                                   want: list[str]) -> None:
    got = []
    for i, r in enumerate(_lspci(name)):
        root = str(_sysfs(tmp_path / str(i), [r]))
        assert nvidia_gpus_on_pci(root) == [(f"0000:{r['addr']}", int(r["device"], 16))]
        pci_id = pci_product_id(f"0000:{r['addr'][:-2]}", root)  # torch's domain:bus:device
        exp = detect([_device("whatever the name says", pci_id, 80.0)], "torch")
        assert exp.accelerator is not None
        got.append(exp.accelerator.key)
    assert got == want


@pytest.mark.parametrize(("name", "key"), [
    ("nvidia-smi-h100-nvl-akash-91.txt", "h100-nvl"),
    ("lspci-l40s-akash-99.txt", "l40s"),
])
def test_nvidias_own_device_id_names_the_part(name: str, key: str) -> None:
    line = next(x for x in (DATA / name).read_text().splitlines() if _SMI_ID.match(x))
    m = _SMI_ID.match(line)
    assert m is not None
    gpu_name, pci_id = m.group("name") or m.group("name2"), int(m.group("id") or m.group("id2"),
                                                                 16)
    exp = detect([_device(gpu_name, pci_id, 94.0)], "torch")
    assert exp.accelerator is not None and exp.accelerator.key == key
    # the name alone (no ID readable) gives the same part, never the SXM one
    by_name = detect([_device(gpu_name, None, 94.0 if key == "h100-nvl" else 45.0)], "torch")
    assert by_name.accelerator is not None and by_name.accelerator.key == key


def test_pcie_parts_are_never_taken_for_sxm() -> None:
    # the driver's names (NVIDIA/open-gpu-kernel-modules g_nv_name_released.h) and IDs
    cases = [("NVIDIA H100 PCIe", 0x2331, 79.6, "h100-pcie"),
             ("NVIDIA H100 80GB HBM3", 0x2330, 79.6, "h100-80gb"),
             ("NVIDIA A100 80GB PCIe", 0x20B5, 79.2, "a100-80gb-pcie"),
             ("NVIDIA A100-PCIE-40GB", 0x20F1, 39.4, "a100-40gb-pcie"),
             ("NVIDIA A100-SXM4-80GB", 0x20B2, 79.2, "a100-80gb"),
             ("NVIDIA L4", 0x27B8, 22.0, "l4")]
    for name, pci_id, gib, key in cases:
        for pid in (pci_id, None):
            exp = detect([_device(name, pid, gib)], "torch")
            assert exp.accelerator is not None and exp.accelerator.key == key, (name, pid)
        assert matches(key, name)
    assert not matches("h100-80gb", "NVIDIA H100 PCIe")
    assert not matches("a100-80gb", "NVIDIA A100 80GB PCIe")
    # an ID the catalog does not list is not guessed from the name ("NVIDIA H100", 0x2339)
    assert detect([_device("NVIDIA H100", 0x2339, 94.0)], "torch").accelerator is None
    # the PCIe parts carry no NVLink expectation: a healthy card does not fail the link check
    cat = load_catalog()
    assert cat.accelerators["h100-pcie"].nvlinks == 0
    assert cat.accelerators["a100-80gb-pcie"].nvlinks == 0


def test_a_gpu_host_where_cuda_fails_is_a_fail(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, _lspci("lspci-l40s-akash-99.txt"))
    (r,) = runner._gpus_unused("torch", str(root))
    assert r.verdict is Verdict.FAIL and r.probe == "inventory" and r.device == "host"
    assert r.reason.startswith("2 NVIDIA GPU(s) on this host's PCI bus (0000:01:00.0 "
                               "(10de:26b9), 0000:91:00.0 (10de:26b9)) but the torch backend "
                               "sees none")
    # a host without NVIDIA GPUs (the NIC alone) runs on its CPU, as before
    assert runner._gpus_unused("torch", str(_sysfs(tmp_path / "cpu", []))) == []
    assert runner._gpus_unused("torch", str(tmp_path / "no-sysfs")) == []


def test_smoke_local_on_such_a_host_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """The whole run: torch on this CPU-only machine, its PCI bus given the recorded L40S
    host's GPUs. Before: "torch on cpu", every verdict pass."""
    pytest.importorskip("torch")
    from smoke.probes import backend

    monkeypatch.setattr(backend, "SYSFS_PCI", str(_sysfs(tmp_path, _lspci(
        "lspci-l40s-akash-99.txt"))))
    report = runner.run_local(backend="torch", tier=0)
    assert report.platform == "cpu"
    assert any(r.verdict is Verdict.FAIL and "NVIDIA GPU(s) on this host's PCI bus" in r.reason
               for r in report.results)
