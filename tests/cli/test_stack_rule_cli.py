"""One rule for which stack a command reads, the same for reads and writes (issue 38): with
two or more stacks besides the example and none chosen, every command that needs a stack
exits 2 naming them and the three ways to choose; the read never silently answers for the
example (`pool expired` said "no pool has expired" while the user's own stack had one expired
35 days ago). Every output names the file it read; every stack `--help` states the rule."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from fleet.stack.rule import RULE
from tests.cli.commands import leaf_commands
from tests.hostile.conftest import invoke, refused

ROOT = Path(__file__).resolve().parents[2]
EXPIRED = (date.today() - timedelta(days=35)).isoformat()

pytestmark = pytest.mark.usefixtures("own_project")


@pytest.fixture
def two_stacks(own_project: Path) -> Path:
    """stacks/: the example, `acme` (h100-train expired 35 days ago) and `beta`."""
    stacks = own_project / "stacks"
    text = (stacks / "Pulumi.example.yaml").read_text(encoding="utf-8")
    marker = "      - name: h100-train\n"
    assert marker in text
    acme = text.replace(marker, marker + f"        expires: {EXPIRED}\n", 1)
    (stacks / "Pulumi.acme.yaml").write_text(acme, encoding="utf-8")
    # beta deploys to a project and an account of its own: two stacks deploying the same
    # project's names are refused (issue 36, fleet.rules.scope)
    beta = text.replace("acme-ml-prod", "acme-ml-beta").replace("123456789012", "210987654321")
    (stacks / "Pulumi.beta.yaml").write_text(beta, encoding="utf-8")
    return stacks


READS = [
    ("pool", "expired"),
    ("pool", "list"),
    ("queue", "show"),
    ("fleet", "validate"),
    ("plan",),
    ("advise", "-w", "llama3-8b-pretrain"),
    ("smoke", "render"),
    ("smoke", "run"),  # refused before any cluster is reached
    ("smoke", "status"),
    ("gate", "status"),
    ("pool", "request", "--team", "research", "--accelerator", "h100", "--nodes", "1",
     "--dry-run"),
    ("pool", "resize", "h100-train", "--nodes", "3", "--dry-run"),
    ("pool", "remove", "l4-spot", "--dry-run"),
    ("pool", "resize", "h100-train", "--nodes", "3"),  # a write, as before
]


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a[:2]))
def test_two_stacks_and_none_chosen_is_refused_naming_them_and_how_to_choose(
        two_stacks: Path, args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ACCELFLEET_STACK", "PULUMI_STACK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PULUMI_HOME", str(two_stacks.parent / "no-pulumi-home"))
    code, out = invoke(*args)
    refused(code, out, "which stack?", "Pulumi.acme.yaml", "Pulumi.beta.yaml", "--stack",
            "ACCELFLEET_STACK", "pulumi stack select")
    assert "no pool has expired" not in out


def test_a_chosen_stack_is_read_and_named(two_stacks: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELFLEET_STACK", "acme")
    code, out = invoke("pool", "expired")
    assert code == 0, out
    assert "stacks/Pulumi.acme.yaml" in out and "h100-train" in out and "35" in out, out
    code, out = invoke("queue", "show")
    assert code == 0, out
    assert out.startswith("stacks/Pulumi.acme.yaml: the queues of 2 teams"), out
    code, out = invoke("plan")
    assert code == 0, out
    assert "stack acme (stacks/Pulumi.acme.yaml):" in out, out[:300]
    code, out = invoke("advise", "-w", "llama3-8b-pretrain")
    assert code == 0, out
    assert "the pools of stacks/Pulumi.acme.yaml" in out, out
    code, out = invoke("advise", "-w", "llama3-8b-pretrain", "--json")
    assert '"stack": "stacks/Pulumi.acme.yaml"' in out, out[:300]
    code, out = invoke("smoke", "render", "--out", str(two_stacks.parent / "m"))
    assert code == 0, out
    assert "from stacks/Pulumi.acme.yaml" in out, out


def test_one_stack_besides_the_example_is_still_chosen_by_itself(
        two_stacks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCELFLEET_STACK", raising=False)
    monkeypatch.delenv("PULUMI_STACK", raising=False)
    monkeypatch.setenv("PULUMI_HOME", str(two_stacks.parent / "no-pulumi-home"))
    (two_stacks / "Pulumi.beta.yaml").unlink()
    code, out = invoke("pool", "expired")
    assert code == 0, out
    assert "stacks/Pulumi.acme.yaml" in out and "h100-train" in out, out


def test_every_stack_help_states_the_one_rule() -> None:
    checked = 0
    for words, cmd in leaf_commands().items():
        for param in cmd.params:
            if param.name not in ("stack", "stack_file") or getattr(param, "hidden", False):
                continue
            text = " ".join((getattr(param, "help", "") or "").split())
            assert RULE in text, (words, param.name, text)
            assert "default: the example" not in text, (words, text)
            checked += 1
    assert checked >= 25, checked
    doc = " ".join((ROOT / "docs" / "stack.md").read_text(encoding="utf-8").split())
    assert "two or more stack files besides the example and none chosen" in doc
    assert "exit 2" in doc
