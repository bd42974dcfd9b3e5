"""Item 9: stack files that were internal errors (exit 3) or hangs are refused with exit 2.
Fuzzing found each (issue 21); the FIFO and /dev/zero cases run in a subprocess whose timeout
(the runner's bound, never asserted as a timing) stands for "never blocks"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import BASE_STACK, ROOT, invoke, refused

CASES = {
    # name: (stack text, what the message says)
    "tag-does-not-convert": (BASE_STACK.replace("nodes: 2", 'nodes: !!int "x"'),
                             "does not convert to its YAML tag"),
    "float-tag": (BASE_STACK.replace("nodes: 2", 'nodes: !!float "many"'),
                  "does not convert to its YAML tag"),
    "int-over-4300-digits": (BASE_STACK.replace("nodes: 2", "nodes: " + "9" * 4400),
                             "more than 4,300 digits"),
    "json-int-over-4300-digits": ('{"config": {"accelfleet:fleet": {"x": ' + "9" * 4400
                                  + "}}}\n", "more than 4,300 digits"),
    "complex-key": (BASE_STACK.replace("    teams:", "    ? [a, b]\n    : 1\n    teams:"),
                    "uses a list or mapping as a key"),
    "complex-key-in-pool": (BASE_STACK.replace("nodes: 2,", "nodes: 2, ? [q] : 3,"),
                            "uses a list or mapping as a key"),
    "negative-prefix": (BASE_STACK.replace("nodes: 2", "nodes: 100000000"),
                        "no private range holds that many nodes"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_stack_is_refused_with_exit_2(case: str, tmp_path: Path) -> None:
    text, says = CASES[case]
    path = tmp_path / "Pulumi.hostile.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = invoke("fleet", "validate", str(path))
    refused(code, output, says)


def test_a_million_tiny_values_are_refused_before_they_are_built(tmp_path: Path) -> None:
    """2 MiB of `0,` is about a million values: counted by libyaml's event parser and refused
    at 200,001 instead of ~40 s of building them (timing shown by the benchmark, not here)."""
    from fleet.errors import StackFileError
    from fleet.stack.read import MAX_STACK_BYTES, read_stack_file

    head = "config:\n  accelfleet:fleet:\n    x: ["
    body = "0," * ((MAX_STACK_BYTES - len(head) - 4) // 2)
    path = tmp_path / "Pulumi.million.yaml"
    path.write_text(head + body + "0]\n", encoding="utf-8")
    with pytest.raises(StackFileError, match=r"more than 200,000 values \(mappings"):
        read_stack_file(path)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    out = run_cli("fleet", "validate", str(fifo))
    refused(out.returncode, out.stderr, "is a FIFO (named pipe), not a regular file")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_without_reading() -> None:
    out = run_cli("fleet", "validate", "/dev/zero")
    refused(out.returncode, out.stderr, "is a character device, not a regular file")
