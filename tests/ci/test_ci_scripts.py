"""Issue 29 item 3: the workflows' shell logic (.github/scripts/), run here on real git
repositories: the matrix of changed stack files, deploy only on an explicit opt-in, the sticky
comment written even when a stack is invalid; and every variable and secret the workflows read
is documented in docs/ci.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stacks import ONE_GKE_CLUSTER

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / ".github" / "scripts"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ZEROS = "0" * 40

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None,
                                reason="needs git and bash, as a GitHub runner has")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout.strip()


def _commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    where = tmp_path / "repo"
    where.mkdir()
    _git(where, "init", "-q", "-b", "main")
    _commit(where, {"Pulumi.yaml": (ROOT / "Pulumi.yaml").read_text(encoding="utf-8"),
                    "stacks/__main__.py": "# the program\n",
                    "stacks/Pulumi.example.yaml": ONE_GKE_CLUSTER,
                    "stacks/Pulumi.acme.yaml": ONE_GKE_CLUSTER,
                    "stacks/Pulumi.prod.yaml": ONE_GKE_CLUSTER,
                    "fleet/model.py": "x = 1\n", "README.md": "hi\n"}, "start")
    return where


def _run(repo: Path, script: str, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPTS / script), *args], cwd=repo,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=120, check=False)


def _changed(repo: Path, base: str, head: str, *extra: str) -> list[str]:
    done = _run(repo, "changed-stacks.sh", base, head, *extra)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert isinstance(result, list)
    return result


def test_the_matrix_is_the_changed_stack_files(repo: Path) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    head = _commit(repo, {"stacks/Pulumi.acme.yaml": ONE_GKE_CLUSTER + "# more\n"}, "acme")
    assert _changed(repo, base, head) == ["acme"]
    added = _commit(repo, {"stacks/Pulumi.dev.yaml": ONE_GKE_CLUSTER,
                           "README.md": "more\n"}, "dev")
    assert _changed(repo, head, added) == ["dev"]
    assert _changed(repo, base, added) == ["acme", "dev"]
    gone = _commit(repo, {"stacks/Pulumi.dev.yaml": None}, "dev gone")
    assert _changed(repo, added, gone) == []  # a deleted stack is not deployed
    docs = _commit(repo, {"README.md": "docs only\n"}, "docs")
    assert _changed(repo, gone, docs) == []


def test_the_example_is_never_in_the_matrix_unless_asked(repo: Path) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    head = _commit(repo, {"stacks/Pulumi.example.yaml": ONE_GKE_CLUSTER + "# x\n"}, "ex")
    assert _changed(repo, base, head) == []
    assert _changed(repo, base, head, "--with-example") == ["example"]


@pytest.mark.parametrize("path", ["fleet/model.py", "stacks/__main__.py", "Pulumi.yaml",
                                  "components/gcp/x.py", "policies/p.py", "pyproject.toml"])
def test_a_change_to_the_code_every_stack_is_built_from_lists_every_stack(
        repo: Path, path: str) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    head = _commit(repo, {path: "# changed\n"}, "code")
    assert _changed(repo, base, head) == ["acme", "prod"]


def test_a_new_branch_lists_every_stack_and_odd_names_are_skipped(repo: Path) -> None:
    head = _commit(repo, {'stacks/Pulumi.a"],x.yaml': ONE_GKE_CLUSTER}, "odd")
    done = _run(repo, "changed-stacks.sh", ZEROS, head)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["acme", "prod"]
    assert 'skipped stacks/Pulumi.a"],x.yaml' in done.stderr
    assert _changed(repo, "", head) == ["acme", "prod"]


def _deploy(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return _run(repo, "deploy-stacks.sh", env={"DEPLOY_ON_PUSH": "", **env})


def test_a_push_deploys_nothing_without_the_opt_in(repo: Path) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    head = _commit(repo, {"stacks/Pulumi.prod.yaml": ONE_GKE_CLUSTER + "# x\n"}, "prod")
    for opt_in in ("", "false", "yes", "TRUE "):
        done = _deploy(repo, EVENT="push", BEFORE=base, AFTER=head, DEPLOY_ON_PUSH=opt_in)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "stacks=[]\n"
        assert "ACCELFLEET_DEPLOY_ON_PUSH" in done.stderr
    done = _deploy(repo, EVENT="push", BEFORE=base, AFTER=head, DEPLOY_ON_PUSH="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'stacks=["prod"]\n'


def test_a_manual_run_deploys_the_stack_it_names(repo: Path) -> None:
    done = _deploy(repo, EVENT="workflow_dispatch", INPUT_STACK="acme")
    assert done.returncode == 0 and done.stdout == 'stacks=["acme"]\n', done.stderr
    for bad in ("nope", 'acme"]', "../acme"):
        done = _deploy(repo, EVENT="workflow_dispatch", INPUT_STACK=bad)
        assert done.returncode == 2 and "stacks=" not in done.stdout, done.stdout
        assert "no stack file" in done.stderr


def test_the_comment_is_written_when_a_stack_is_invalid(repo: Path, tmp_path: Path) -> None:
    """The real `accelfleet` (this checkout's) plans a valid and an invalid stack: the script
    finishes, the comment holds both, and the worst exit code (2) is kept for the last step."""
    _commit(repo, {"stacks/Pulumi.acme.yaml": "config:\n  accelfleet:fleet:\n    pools: 3\n",
                   "stacks/Pulumi.prod.yaml": None, "stacks/Pulumi.example.yaml": None},
            "bad acme")
    (repo / "stacks" / "Pulumi.ok.yaml").write_text(ONE_GKE_CLUSTER, encoding="utf-8")
    wrapper = tmp_path / "accelfleet"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m cli "$@"\n',
                       encoding="utf-8")
    wrapper.chmod(0o755)
    output = tmp_path / "github-output"
    done = _run(repo, "plan-comment.sh", "HEAD", str(wrapper),
                env={"GITHUB_OUTPUT": str(output), "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert output.read_text() == "status=2\n"
    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert "stack `acme` is invalid" in comment and "`pools`" in comment, comment
    assert re.search(r"stack `ok`", comment), comment
    assert (repo / "plans" / "Pulumi.ok.json").is_file()
    assert "pools" in (repo / "plans" / "Pulumi.acme.err").read_text(encoding="utf-8")


def test_every_variable_and_secret_the_workflows_read_is_documented() -> None:
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    read = set()
    for workflow in WORKFLOWS:
        read |= set(re.findall(r"(?<![\w.])(?:vars|secrets)\.([A-Za-z_][A-Za-z0-9_]*)",
                               workflow.read_text(encoding="utf-8")))
    assert read >= {"ACCELFLEET_DEPLOY_ON_PUSH", "PULUMI_ACCESS_TOKEN", "GOOGLE_CREDENTIALS"}
    for name in sorted(read):
        assert f"`{name}`" in doc, f"docs/ci.md does not document {name}"


def test_the_workflows_call_the_scripts_and_authenticate_gcloud() -> None:
    deploy = (ROOT / ".github" / "workflows" / "deploy.yml").read_text(encoding="utf-8")
    preview = (ROOT / ".github" / "workflows" / "preview.yml").read_text(encoding="utf-8")
    assert ".github/scripts/deploy-stacks.sh" in deploy
    assert "'example'" not in deploy and "default: example" not in deploy
    assert "matrix.stack" in deploy and "matrix.stack" in preview
    assert ".github/scripts/plan-comment.sh" in preview
    assert ".github/scripts/changed-stacks.sh" in preview
    for text in (deploy, preview):
        assert "google-github-actions/auth@" in text
        assert "install_components: gke-gcloud-auth-plugin" in text
    for script in SCRIPTS.glob("*.sh"):
        assert os.access(script, os.X_OK), f"{script.name} is not executable"
