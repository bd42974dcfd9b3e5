"""Issue 30: a read never writes. `smoke history` (and every reader of the history) leaves no
`-wal`/`-shm` file beside the history it read, changes no byte of it, and reads a history in a
folder it cannot write to (run as an unprivileged user where the tests run as root, whom no
folder permission stops)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from smoke.history import History
from tests.smoke.test_history import recorded

REPO = Path(__file__).resolve().parents[2]


def _history(folder: Path) -> Path:
    path = folder / "history.sqlite"
    with History.open(path) as h:  # a writer: WAL mode, closed cleanly (no -wal left)
        h.append(recorded(), kind="cluster")
    assert sorted(p.name for p in folder.iterdir()) == ["history.sqlite"]
    return path


def test_reading_the_history_leaves_no_file_and_changes_no_byte(tmp_path: Path) -> None:
    path = _history(tmp_path)
    before = path.read_bytes()
    result = CliRunner().invoke(app, ["smoke", "history", "--history", str(path)])
    assert result.exit_code == 0, result.output
    assert "h100-train" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.sqlite"]
    assert path.read_bytes() == before


_READ_ONLY_THEN_RUN = """
import subprocess, sys
folder, argv = sys.argv[1], sys.argv[2:]
subprocess.run(["mount", "--bind", folder, folder], check=True)
subprocess.run(["mount", "-o", "remount,ro,bind", folder], check=True)
sys.exit(subprocess.run(argv).returncode)
"""


def test_a_history_in_a_read_only_folder_is_read(tmp_path: Path) -> None:
    path = _history(tmp_path)
    argv = [sys.executable, "-m", "cli", "smoke", "history", "--history", str(path)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if os.geteuid() == 0:  # root writes anywhere a permission allows nothing: a read-only
        # bind mount of the folder, in a mount namespace of its own, stops root too
        if shutil.which("unshare") is None or shutil.which("mount") is None:
            pytest.skip("needs unshare(1) and mount(8) to make a read-only folder as root")
        probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30)
        if probe.returncode != 0:
            pytest.skip("no mount namespace here (unshare -m refused): "
                        + probe.stderr.decode(errors="replace")[-200:])
        argv = ["unshare", "-m", sys.executable, "-c", _READ_ONLY_THEN_RUN, str(tmp_path),
                *argv]
    else:
        os.chmod(tmp_path, 0o555)
    try:
        result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=120)
    finally:
        os.chmod(tmp_path, 0o755)
    assert result.returncode == 0, result.stderr
    assert "h100-train" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.sqlite"]
