"""Issue 29 item 1: commands read and write the stack folder of the Pulumi project around the
working directory (the nearest `Pulumi.yaml` above it, and its `stackConfigDir`), never the
folder of the checkout accelfleet is installed from, and they name the file they read or wrote
by a path relative to where the user stands.

Two checkouts are built in temporary folders, each with the project's own Pulumi.yaml and a
stacks/ folder; a command run in the second never touches the first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.stack.choice import choose_stack, project_stacks_dir
from fleet.stack.read import EXAMPLE_STACK
from tests.hostile.conftest import ROOT, invoke

REQUEST = ("--team", "vision", "--accelerator", "h100", "--nodes", "1", "--requested-by",
           "ana@acme.com")


def _checkout(where: Path, stack: str, *, config_dir: str = "stacks") -> Path:
    """A checkout of a fleet project: the project's Pulumi.yaml (its stackConfigDir set to
    `config_dir`), the example stack and the company's stack `stack`."""
    where.mkdir()
    project = (ROOT / "Pulumi.yaml").read_text(encoding="utf-8")
    project = project.replace("stackConfigDir: stacks/", f"stackConfigDir: {config_dir}/")
    (where / "Pulumi.yaml").write_text(project, encoding="utf-8")
    folder = where / config_dir
    folder.mkdir()
    shutil.copy(EXAMPLE_STACK, folder / EXAMPLE_STACK.name)
    # the company's own project and account: a copy of the example in the example's project
    # would share its project-wide names, which validate refuses (fleet.rules.scope, issue 36)
    (folder / f"Pulumi.{stack}.yaml").write_text(
        EXAMPLE_STACK.read_text(encoding="utf-8").replace("acme-ml-prod", f"{stack}-fleet-prod")
        .replace("123456789012", "210987654321"), encoding="utf-8")
    return where


def _files(where: Path) -> dict[str, bytes]:
    return {str(p.relative_to(where)): p.read_bytes() for p in sorted(where.rglob("*"))
            if p.is_file()}


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    return _checkout(tmp_path / "first", "first"), _checkout(tmp_path / "second", "acme")


def test_a_request_in_the_second_checkout_writes_its_own_stack(
        two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = two
    before, installed = _files(first), EXAMPLE_STACK.read_bytes()
    monkeypatch.chdir(second)
    code, out = invoke("pool", "request", *REQUEST)
    assert code == 0, out
    assert out.startswith("wrote stacks/Pulumi.acme.yaml: "), out
    assert (second / "stacks" / "Pulumi.acme.yaml").read_bytes() != installed
    assert _files(first) == before and EXAMPLE_STACK.read_bytes() == installed


def test_reads_name_the_file_from_where_the_user_stands(
        two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = two
    (second / "docs").mkdir()
    monkeypatch.chdir(second)
    code, out = invoke("fleet", "validate")
    assert code == 0, out
    assert out.startswith("stacks/Pulumi.acme.yaml: "), out
    assert str(first) not in out and "first" not in out
    monkeypatch.chdir(second / "docs")  # Pulumi finds the project from a subfolder too
    code, out = invoke("pool", "list", "--json")
    assert code == 0, out
    assert '"stack": "../stacks/Pulumi.acme.yaml"' in out, out
    code, out = invoke("pool", "resize", "h100-train", "--nodes", "1")
    assert code == 0, out
    assert out.startswith("wrote ../stacks/Pulumi.acme.yaml: "), out


def test_the_stack_config_dir_of_the_project_is_honoured(tmp_path: Path) -> None:
    project = _checkout(tmp_path / "co", "prod", config_dir="config")
    (project / "deep" / "er").mkdir(parents=True)
    assert project_stacks_dir(project / "deep" / "er") == project / "config"
    choice = choose_stack(None, env={"ACCELFLEET_STACK": "prod"}, cwd=project / "deep")
    assert Path(os.path.abspath(choice.path)) == project / "config" / "Pulumi.prod.yaml"
    outside = tmp_path / "no-project"
    outside.mkdir()
    assert project_stacks_dir(outside) == outside / "stacks"


def test_the_example_read_by_default_is_the_projects_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "co"
    project.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks").mkdir()
    shutil.copy(EXAMPLE_STACK, project / "stacks" / EXAMPLE_STACK.name)
    monkeypatch.chdir(project)
    choice = choose_stack(None, env={})
    assert choice.is_default_example and choice.path == Path("stacks/Pulumi.example.yaml")


def test_another_installation_never_touches_the_first_checkout(two: tuple[Path, Path]
                                                               ) -> None:
    """As the issue ran it: the first clone's code (this checkout, on PYTHONPATH) run as a
    program in the second checkout."""
    first, second = two
    before = _files(first)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}
    for var in ("ACCELFLEET_STACK", "PULUMI_STACK"):
        env.pop(var, None)
    done = subprocess.run([sys.executable, "-m", "cli", "pool", "request", *REQUEST],
                          cwd=second, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("wrote stacks/Pulumi.acme.yaml: "), done.stdout
    assert _files(first) == before
    assert (second / "stacks" / "Pulumi.acme.yaml").read_bytes() != EXAMPLE_STACK.read_bytes()


def test_a_missing_stack_file_lists_the_stacks_there_are(
        two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _, second = two
    monkeypatch.chdir(second)
    for args in (("fleet", "validate", "stacks/Pulumi.acm.yaml"),
                 ("smoke", "run", "--stack", "stacks/Pulumi.acm.yaml"),
                 ("plan", "stacks/Pulumi.acm.yaml"),
                 ("pool", "resize", "h100-train", "--nodes", "3", "--stack",
                  "stacks/Pulumi.acm.yaml")):
        code, out = invoke(*args)
        assert code == 2, out
        assert "stack file stacks/Pulumi.acm.yaml does not exist" in out, out
        assert "Pulumi.acme.yaml, Pulumi.example.yaml" in out, out


def test_a_refusal_names_the_file_as_a_success_does(
        two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: successes said `stacks/...`, refusals the absolute path of another clone."""
    _, second = two
    (second / "docs").mkdir()
    monkeypatch.chdir(second / "docs")
    code, out = invoke("pool", "request", "--team", "nobody", "--accelerator", "h100",
                       "--requested-by", "ana@acme.com")
    assert code == 2, out
    assert out.startswith("error: ../stacks/Pulumi.acme.yaml: "), out
    assert str(second) not in out, out
