"""Issue 28 item 4: the fabric installer's NCCL is preloaded only where it is not of an older
minor release than the NCCL torch was built with; otherwise tier 3 fails with a sentence that
says what to do, not with an undefined symbol at `import torch`.

Real version numbers: torch's CI pins NCCL 2.27.5 (issue 28); NCCL 2.21.5 is what an EKS pod
loaded in aws/aws-ofi-nccl#889 (tests/smoke/data/nccl/nccl-efa-cloudwatch-889.log), 2.27.3 the
EKS p4d log's (nccl-efa-ofi-eks-p4d-gdrdma-info.log), 2.22.3 the GKE a3 log's. The ctypes reader
runs against a small real shared library built here when a C compiler is present."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from smoke.probes import _nccl_version as NV
from smoke.probes._fabric import nccl_environment
from smoke.probes.nccl_log import parse
from smoke.probes.results import Verdict

DATA = Path(__file__).parent / "data" / "nccl"
TORCH_NCCL = (2, 27, 5)


def _logged(name: str) -> tuple[int, int, int]:
    """The NCCL version a recorded real log names, as a tuple."""
    (version,) = parse((DATA / name).read_text(encoding="utf-8")).versions()
    major, minor, patch = version.split("+")[0].split(".")
    return int(major), int(minor), int(patch)


def test_version_codes_decode_as_nccl_h_defines_them() -> None:
    # nccl.h: NCCL_VERSION(X,Y,Z) = X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9
    assert NV.from_code(22705) == (2, 27, 5)
    assert NV.from_code(22105) == (2, 21, 5)
    assert NV.from_code(2804) == (2, 8, 4)
    assert NV.from_code(20903) == (2, 9, 3)


@pytest.mark.parametrize(("log", "refused"), [
    ("nccl-efa-cloudwatch-889.log", True),  # 2.21.5 under torch's 2.27.5: refused
    ("nccl-socket-gke-a3-info.log", True),  # 2.22.3
    ("nccl-efa-ofi-eks-p4d-gdrdma-info.log", False),  # 2.27.3: a patch behind, same symbols
])
def test_an_older_installer_nccl_is_refused_with_what_to_do(log: str, refused: bool) -> None:
    installer = _logged(log)
    why = NV.refusal("/usr/local/nvidia/lib64/libnccl.so.2", installer, TORCH_NCCL)
    assert (why is not None) is refused
    if why is not None:
        assert f"NCCL {NV.text(installer)} (/usr/local/nvidia/lib64/libnccl.so.2) is older " \
            "than the NCCL 2.27.5 torch was built with" in why
        assert "upgrade the fabric's NCCL installer to NCCL >= 2.27" in why
        assert f"built with NCCL <= {installer[0]}.{installer[1]}" in why


def test_unknown_versions_or_a_newer_installer_are_preloaded() -> None:
    assert NV.refusal("x", None, TORCH_NCCL) is None
    assert NV.refusal("x", (2, 21, 5), None) is None  # a CPU torch: nothing to compare
    assert NV.refusal("x", (2, 28, 3), TORCH_NCCL) is None


def test_the_version_is_read_from_the_file_nccl_installs(tmp_path: Path) -> None:
    # NCCL's install: libnccl.so.2 -> libnccl.so.2.21.5
    real = tmp_path / "libnccl.so.2.21.5"
    real.write_bytes(b"\x7fELF not loaded")
    (tmp_path / "libnccl.so.2").symlink_to(real.name)
    assert NV.installer_version(str(tmp_path / "libnccl.so.2")) == ((2, 21, 5),
                                                                     "file name libnccl.so.2.21.5")
    version, why = NV.installer_version(str(tmp_path / "missing.so"))
    assert version is None and "missing.so" in why


@pytest.fixture
def built_nccl(tmp_path: Path) -> Path:
    """A real shared object named as installers copy it (`libnccl.so.2`, no version in the
    name) whose ncclGetVersion answers NCCL 2.21.5's code."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the test library")
    src = tmp_path / "nccl.c"
    src.write_text("int ncclGetVersion(int *version) { *version = 22105; return 0; }\n")
    lib = tmp_path / "lib64" / "libnccl.so.2"
    lib.parent.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o", str(lib),
                    str(src)], check=True)
    return lib


def test_ncclgetversion_is_read_through_ctypes_in_a_child(built_nccl: Path) -> None:
    assert NV.installer_version(str(built_nccl)) == ((2, 21, 5), "ncclGetVersion")


def test_a_refused_library_is_not_preloaded(built_nccl: Path) -> None:
    env, notes = nccl_environment({}, nccl_lib=str(built_nccl), base={},
                                  torch_nccl=lambda: TORCH_NCCL)
    assert "LD_PRELOAD" not in env and "nccl_preload" not in notes
    assert notes["nccl_installer_version"] == "2.21.5 (ncclGetVersion)"
    assert "older than the NCCL 2.27.5 torch was built with" in notes["nccl_preload_refused"]
    env, notes = nccl_environment({}, nccl_lib=str(built_nccl), base={},
                                  torch_nccl=lambda: (2, 21, 0))
    assert env["LD_PRELOAD"] == str(built_nccl) and "nccl_preload_refused" not in notes


def test_tier_3_fails_with_the_sentence(built_nccl: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from smoke.probes import agent

    monkeypatch.setattr(os, "environ", {
        **{k: v for k, v in os.environ.items() if k != "LD_PRELOAD"},
        "ACCELFLEET_NODES": "2", "ACCELFLEET_COORDINATOR": "127.0.0.1",
        "JOB_COMPLETION_INDEX": "0"})
    monkeypatch.setattr(NV, "torch_version", lambda: TORCH_NCCL)
    monkeypatch.setattr(agent, "_local_gpus", lambda: 8)

    def no_collective(*_: object, **__: object) -> None:
        raise AssertionError("the collective must not run without the fabric's NCCL")

    monkeypatch.setattr("smoke.probes._fabric.torch_across_nodes", no_collective)
    args = agent.parse_args(["--tier", "3", "--cross-node", "torch", "--nccl-lib",
                             str(built_nccl), "--expect-fabric", "rdma"])
    notes = agent.prepare_nccl(args)
    assert "LD_PRELOAD" not in os.environ
    report = SimpleNamespace(platform="gpu", duration_s=1.0)
    got = agent._cross_node(args, report, notes)  # type: ignore[arg-type]
    assert got.verdict is Verdict.FAIL
    assert "the fabric installer's NCCL 2.21.5" in got.reason
    assert "upgrade the fabric's NCCL installer to NCCL >= 2.27" in got.reason
