"""Nothing the user did not ask to change is changed. Item 13: `--patch FILE` naming a device
or a FIFO writes through it, never renames a regular file over it. Item 15: a pool edit on a
CRLF stack keeps every CRLF outside the edit (and its own lines are CRLF), and its `--patch`
applies with `git apply`."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from fleet.stack.read import EXAMPLE_STACK, read_stack_file
from tests.hostile.conftest import invoke

REQUEST = ("--team", "vision", "--accelerator", "h100", "--nodes", "1", "--requested-by",
           "ana@acme.com")


@pytest.fixture
def crlf_stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.crlf.yaml"
    path.write_bytes(EXAMPLE_STACK.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    return path


def test_a_pool_edit_keeps_crlf_line_endings(crlf_stack: Path) -> None:
    before = crlf_stack.read_bytes()
    code, out = invoke("pool", "request", str(crlf_stack), *REQUEST)
    assert code == 0, out
    after = crlf_stack.read_bytes()
    assert after.count(b"\n") == after.count(b"\r\n")  # every line ends CRLF
    assert after.count(b"\r\n") > before.count(b"\r\n")
    old, new = before.split(b"\r\n"), after.split(b"\r\n")
    added = len(new) - len(old)
    start = next(i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
    assert new[:start] == old[:start] and new[start + added:] == old[start:]
    assert "vision-a3-highgpu-8g" in {p["name"] for p in read_stack_file(crlf_stack)["pools"]}


def test_the_patch_of_a_crlf_stack_applies(crlf_stack: Path, tmp_path: Path) -> None:
    before = crlf_stack.read_bytes()
    patch = tmp_path / "pool.patch"
    code, out = invoke("pool", "request", str(crlf_stack), *REQUEST, "--patch", str(patch))
    assert code == 0, out
    assert crlf_stack.read_bytes() == before
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "apply", str(patch)], cwd=tmp_path, check=True)
    after = crlf_stack.read_bytes()
    assert after.count(b"\n") == after.count(b"\r\n")
    assert "vision-a3-highgpu-8g" in {p["name"] for p in read_stack_file(crlf_stack)["pools"]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_patch_to_a_fifo_writes_through_it(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.pool.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    fifo = tmp_path / "patch.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code, out = invoke("pool", "request", str(stack), *REQUEST, "--patch", str(fifo))
    reader.join(timeout=60)
    assert code == 0, out
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO, not a file renamed over it
    assert got and b"+      - name: vision-a3-highgpu-8g" in got[0]


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")
def test_patch_to_dev_null_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.pool.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    before = stack.read_bytes()
    link = tmp_path / "null.patch"
    link.symlink_to("/dev/null")
    code, out = invoke("pool", "request", str(stack), *REQUEST, "--patch", str(link))
    assert code == 0, out
    assert Path("/dev/null").is_char_device() and link.is_symlink()
    assert stack.read_bytes() == before
