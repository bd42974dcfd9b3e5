"""Issue 30: `pool request` on a stack in a read-only folder (its lock file there already,
writable or not) is refused in words, exit 2, the stack unchanged; never an internal error."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from fleet.stack.edit import lock_path
from fleet.stack.read import EXAMPLE_STACK
from tests.read_only import run_with_read_only

REPO = Path(__file__).resolve().parents[2]


def test_a_request_in_a_read_only_folder_holding_a_lock_file_exits_2(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.pool.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    lock = lock_path(stack)
    lock.write_text("", encoding="utf-8")  # left by an earlier request, writable still
    before = stack.read_bytes()
    result = run_with_read_only(tmp_path, writable=(lock,), argv=[
        sys.executable, "-m", "cli", "pool", "request", str(stack), "--team", "vision",
        "--accelerator", "h100", "--nodes", "1", "--requested-by", "bo@acme.com"], cwd=REPO)
    assert result.returncode == 2, result.stdout + result.stderr
    text = result.stdout + result.stderr
    assert "internal error" not in text and "cannot" in text, text
    assert stack.read_bytes() == before
