"""Item 2: pool edits never default to the example stack. The stack is chosen as Pulumi users
expect ($ACCELFLEET_STACK / $PULUMI_STACK, the only stack file besides the example), a write
without one is refused (the example unchanged), every error names the file it read, and every
suggested command carries the stack."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fleet.errors import InputError
from fleet.stack.choice import choose_stack, stack_for_write
from fleet.stack.read import EXAMPLE_STACK
from tests.hostile.conftest import invoke

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

REQUEST = ("--team", "vision", "--accelerator", "h100", "--nodes", "1", "--requested-by",
           "ana@acme.com")


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    folder = tmp_path / "stacks"
    folder.mkdir()
    shutil.copy(EXAMPLE_STACK, folder / EXAMPLE_STACK.name)
    return folder


def test_a_write_without_a_stack_never_touches_the_example(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    for var in ("ACCELFLEET_STACK", "PULUMI_STACK"):
        monkeypatch.delenv(var, raising=False)
    before = EXAMPLE_STACK.read_bytes()
    for args in (("pool", "request", *REQUEST), ("pool", "resize", "h100-train", "--nodes", "3"),
                 ("pool", "remove", "l4-spot")):
        code, out = invoke(*args)
        assert code == 2, out
        assert "needs a stack" in out and "ACCELFLEET_STACK" in out and "Pulumi." in out
    assert EXAMPLE_STACK.read_bytes() == before
    code, out = invoke("pool", "request", *REQUEST, "--dry-run")  # showing is fine
    assert code == 0, out


def test_the_env_var_and_pulumi_stack_name_the_stack(stacks: Path) -> None:
    prod = stacks / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, prod)
    assert choose_stack(None, stacks_dir=stacks, env={"ACCELFLEET_STACK": "prod"}).path == prod
    assert choose_stack(None, stacks_dir=stacks,
                        env={"PULUMI_STACK": "acme/accelfleet/prod"}).path == prod
    assert choose_stack(None, stacks_dir=stacks, env={"ACCELFLEET_STACK": str(prod)}
                        ).path == prod
    with pytest.raises(InputError, match=r"\$ACCELFLEET_STACK is 'dev'.*Pulumi.dev.yaml"):
        choose_stack(None, stacks_dir=stacks, env={"ACCELFLEET_STACK": "dev"})


def test_the_only_stack_besides_the_example_is_chosen(stacks: Path) -> None:
    assert choose_stack(None, stacks_dir=stacks, env={}).is_default_example
    with pytest.raises(InputError, match="needs a stack"):
        stack_for_write(None, what="pool request", stacks_dir=stacks, env={})
    prod = stacks / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, prod)
    assert stack_for_write(None, what="pool request", stacks_dir=stacks, env={}) == prod
    shutil.copy(EXAMPLE_STACK, stacks / "Pulumi.dev.yaml")
    # two stacks besides the example and none chosen: refused for reads and writes alike
    # (issue 38), naming both and the three ways to choose
    for choose in (lambda: stack_for_write(None, what="pool request", stacks_dir=stacks,
                                           env={}),
                   lambda: choose_stack(None, stacks_dir=stacks, env={})):
        with pytest.raises(InputError, match=r"which stack\?.* 2 stacks besides the example "
                                             r"\(Pulumi\.dev\.yaml, Pulumi\.prod\.yaml\)") as err:
            choose()
        assert "--stack" in err.value.hint and "ACCELFLEET_STACK=dev" in err.value.hint
        assert "pulumi stack select dev" in err.value.hint


def test_a_write_goes_to_the_stack_the_env_var_names(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    prod = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, prod)
    monkeypatch.setenv("ACCELFLEET_STACK", str(prod))
    before = EXAMPLE_STACK.read_bytes()
    code, out = invoke("pool", "request", *REQUEST)
    assert code == 0, out
    assert prod.read_bytes() != EXAMPLE_STACK.read_bytes() and EXAMPLE_STACK.read_bytes() == before


def test_an_unknown_pool_names_the_file_and_the_suggestion_carries_it(tmp_path: Path) -> None:
    prod = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, prod)
    code, out = invoke("pool", "remove", "h100-trian", "--stack", str(prod))
    assert code == 2, out
    assert f"{prod}: " in out and f"accelfleet pool list {prod}" in out


def test_pool_expired_suggests_remove_with_the_stack(tmp_path: Path) -> None:
    prod = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, prod)
    code, out = invoke("pool", "expired", str(prod), "--as-of", "2099-01-01")
    assert code == 0, out
    if "no pool has expired" not in out:
        assert f"accelfleet pool remove NAME --stack {prod}" in out


def _select(home: Path, project_file: Path, settings: str) -> Path:
    """What `pulumi stack select` writes (pulumi/pulumi sdk/go/common/workspace/workspace.go
    `settingsPath`: <PULUMI_HOME>/workspaces/<project>-<sha1 of the project file's path>-
    workspace.json)."""
    import hashlib

    digest = hashlib.sha1(str(project_file).encode()).hexdigest()
    path = home / "workspaces" / f"accelfleet-{digest}-workspace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(settings)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Pulumi project like this repository's: Pulumi.yaml with `stackConfigDir: stacks/`."""
    root = tmp_path / "infra"
    (root / "stacks").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: accelfleet\nruntime: python\n"
                                      "stackConfigDir: stacks/\n")
    shutil.copy(EXAMPLE_STACK, root / "stacks" / EXAMPLE_STACK.name)
    shutil.copy(EXAMPLE_STACK, root / "stacks" / "Pulumi.prod.yaml")
    shutil.copy(EXAMPLE_STACK, root / "stacks" / "Pulumi.dev.yaml")
    return root


def test_the_stack_pulumi_stack_select_chose(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "pulumi-home"
    env = {"PULUMI_HOME": str(home)}
    inner = project / "stacks"
    with pytest.raises(InputError, match="which stack"):  # two stacks, none chosen yet
        choose_stack(None, stacks_dir=inner, env=env, cwd=inner)
    # the legacy document every release wrote until 2026, from a folder below the project
    _select(home, project / "Pulumi.yaml", '{\n    "stack": "acme/accelfleet/prod"\n}')
    choice = choose_stack(None, stacks_dir=inner, env=env, cwd=inner)
    assert choice.path == project / "stacks" / "Pulumi.prod.yaml"
    assert choice.why == "`pulumi stack select`"
    assert stack_for_write(None, what="pool request", stacks_dir=inner, env=env,
                           cwd=project) == project / "stacks" / "Pulumi.prod.yaml"
    # the per-backend document of newer releases: the current backend's selection wins
    (home / "credentials.json").write_text('{"current": "https://api.pulumi.com"}')
    _select(home, project / "Pulumi.yaml", '{"stack": "prod", "stacks": {'
            '"https://api.pulumi.com": "dev", "file://~": "prod"}}')
    assert choose_stack(None, env=env, cwd=project).path == project / "stacks" / "Pulumi.dev.yaml"
    assert choose_stack(None, env={**env, "PULUMI_BACKEND_URL": "file://~"}, cwd=project
                        ).path == project / "stacks" / "Pulumi.prod.yaml"
    # an env var still wins over the selection; a named file over both
    assert choose_stack(None, stacks_dir=inner, env={**env, "ACCELFLEET_STACK": "prod"},
                        cwd=project).path == inner / "Pulumi.prod.yaml"


def test_a_selected_stack_without_a_file_or_a_broken_workspace_is_refused(
        project: Path, tmp_path: Path) -> None:
    home = tmp_path / "pulumi-home"
    env = {"PULUMI_HOME": str(home)}
    workspace = _select(home, project / "Pulumi.yaml", '{"stack": "staging"}')
    with pytest.raises(InputError, match=r"pulumi stack select` chose 'staging'.*"
                                         r"Pulumi\.staging\.yaml does not exist") as err:
        choose_stack(None, env=env, cwd=project)
    assert "Pulumi.dev.yaml, Pulumi.example.yaml, Pulumi.prod.yaml" in (err.value.hint or "")
    workspace.write_text('{"stack": ')
    with pytest.raises(InputError, match="Pulumi workspace file"):
        choose_stack(None, env=env, cwd=project)


def test_a_pool_edit_goes_to_the_selected_stack(project: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.chdir(project)
    _select(Path(os.environ["PULUMI_HOME"]), project / "Pulumi.yaml", '{"stack": "prod"}')
    prod = project / "stacks" / "Pulumi.prod.yaml"
    before = EXAMPLE_STACK.read_bytes()
    code, out = invoke("pool", "request", *REQUEST)
    assert code == 0, out
    assert prod.read_bytes() != before and EXAMPLE_STACK.read_bytes() == before
    assert (project / "stacks" / "Pulumi.dev.yaml").read_bytes() == before
