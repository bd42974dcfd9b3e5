"""Run a command with one folder read-only, as a person's read-only checkout or mount is.

The tests run as root in CI, whom no permission bit stops: there the folder is bind-mounted
read-only in a mount namespace of the command's own (`unshare -m`), which stops root too.
Elsewhere the folder's write bits are taken away for the command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_READ_ONLY_THEN_RUN = """
import json, subprocess, sys
folder, writable, argv = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
subprocess.run(["mount", "--bind", folder, folder], check=True)
subprocess.run(["mount", "-o", "remount,ro,bind", folder], check=True)
for source, path in writable:  # a file that stays writable in the read-only folder
    subprocess.run(["mount", "--bind", source, path], check=True)
sys.exit(subprocess.run(argv).returncode)
"""


def run_with_read_only(folder: Path, argv: list[str], *, cwd: Path,
                       writable: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run `argv` with `folder` read-only but for the files `writable` in it (each must exist:
    as root, a writable copy is mounted over it for the command); skips the test where a
    read-only folder cannot be arranged."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        os.chmod(folder, 0o555)
        try:
            return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=120)
        finally:
            os.chmod(folder, mode)
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(8) to make a read-only folder as root")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("no mount namespace here (unshare -m refused): "
                    + probe.stderr.decode(errors="replace")[-200:])
    with tempfile.TemporaryDirectory() as spare:
        pairs = []
        for i, path in enumerate(writable):
            copy = Path(spare) / str(i)
            shutil.copy2(path, copy)
            pairs.append((str(copy), str(path)))
        return subprocess.run(["unshare", "-m", sys.executable, "-c", _READ_ONLY_THEN_RUN,
                               str(folder), json.dumps(pairs), *argv], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120)
