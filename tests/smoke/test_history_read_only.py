"""Issue 30: a read never writes. `smoke history` (and every reader of the history) leaves no
`-wal`/`-shm` file beside the history it read, changes no byte of it, and reads a history in a
folder it cannot write to (run as an unprivileged user where the tests run as root, whom no
folder permission stops)."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from smoke.history import History
from tests.read_only import run_with_read_only
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


def test_a_history_in_a_read_only_folder_is_read(tmp_path: Path) -> None:
    path = _history(tmp_path)
    result = run_with_read_only(tmp_path, [sys.executable, "-m", "cli", "smoke", "history",
                                           "--history", str(path)], cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "h100-train" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.sqlite"]
