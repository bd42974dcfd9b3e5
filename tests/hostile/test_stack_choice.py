"""Item 2: pool edits never default to the example stack. The stack is chosen as Pulumi users
expect ($ACCELFLEET_STACK / $PULUMI_STACK, the only stack file besides the example), a write
without one is refused (the example unchanged), every error names the file it read, and every
suggested command carries the stack."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fleet.errors import InputError
from fleet.stack_choice import choose_stack, stack_for_write
from fleet.stackfile import EXAMPLE_STACK
from tests.hostile.conftest import invoke

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
    with pytest.raises(InputError, match=r"Pulumi\.dev\.yaml, Pulumi\.example\.yaml, "
                                         r"Pulumi\.prod\.yaml"):
        stack_for_write(None, what="pool request", stacks_dir=stacks, env={})


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
