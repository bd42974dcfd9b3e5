"""`accelfleet up` / `accelfleet preview` around the engine: no Pulumi CLI exists here, so the
engine is a recording (real engine events, parsed by the Automation API's own EngineEvent) and
the smoke run a recorder; what is real is everything accelfleet decides (which pools changed,
confirmation, the smoke command, exit codes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import up as up_cli
from cli.main import app
from components.engine.deploy import changed_pools, smoke_argv, summary_of, urn_key
from fleet.stack.read import EXAMPLE_STACK

runner = CliRunner()
EVENTS = (Path(__file__).parent.parent / "components" / "fixtures"
          / "engine-events-example-up.jsonl")
SNAPSHOT = Path(__file__).parent.parent / "components" / "snapshots" / "example_plan.json"
CHANGED = ["g6-ci", "h100-train", "p5-train", "v5p-slice"]


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EVENTS.read_text().splitlines() if line.strip()]


class Recording:
    """An engine that replays a recorded `pulumi up` (events as the Automation API parses
    them), or fails as the Automation API does."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.calls: list[str] = []

    def preview(self, on_event: Callable[[Any], None], on_output: Callable[[str], None]
                ) -> dict[str, int]:
        self.calls.append("preview")
        if self.fail:
            raise self.fail
        on_output("Previewing update (example)")
        return {"same": 80, "update": 2, "replace": 1}

    def up(self, on_event: Callable[[Any], None], on_output: Callable[[str], None]
           ) -> dict[str, Any]:
        from pulumi.automation.events import EngineEvent

        self.calls.append("up")
        for data in recorded():
            on_event(EngineEvent.from_json(data))
        on_output("Updating (example)")
        return {"inventory": {"pools": []}, "kubeconfigs": {"ml-gke": "apiVersion: v1"}}


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recording]:
    rec = Recording()
    monkeypatch.setattr(up_cli, "engine_factory", lambda stack, packs: rec)
    yield rec


@pytest.fixture
def smoke(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, Any]]]:
    seen: list[tuple[list[str], dict[str, Any]]] = []

    def run(argv: Sequence[str], code: int = 0) -> int:
        outputs = Path(argv[argv.index("--outputs") + 1])
        seen.append((list(argv), json.loads(outputs.read_text())))
        return code

    monkeypatch.setattr(up_cli, "smoke_runner", run)
    return seen


def test_changed_pools_from_recorded_events() -> None:
    plan = json.loads(SNAPSHOT.read_text())
    # the JSON form (an event log) and the Automation API's objects give the same answer
    from pulumi.automation.events import EngineEvent

    assert sorted(changed_pools(recorded(), plan)) == CHANGED
    parsed = [EngineEvent.from_json(e) for e in recorded()]
    assert sorted(changed_pools(parsed, plan)) == CHANGED
    assert summary_of(parsed) == {"same": 80, "update": 2, "replace": 1}
    assert summary_of(recorded()[:-1]) is None
    # nothing but "same": nothing to smoke
    same = [e for e in recorded() if '"same"' in json.dumps(e)]
    assert changed_pools(same, plan) == set()


def test_urn_key() -> None:
    assert urn_key("urn:pulumi:s::p::a:b:C$gcp:container/nodePool:NodePool::x-pool") == \
        "gcp:container/nodePool:NodePool::x-pool"


def test_up_smokes_the_changed_pools(engine: Recording, smoke: list[Any],
                                     tmp_path: Path) -> None:
    result = runner.invoke(app, ["up", str(EXAMPLE_STACK), "--yes",
                                 "--junit", str(tmp_path / "smoke.xml")])
    assert result.exit_code == 0, result.output
    assert engine.calls == ["preview", "up"]
    assert "preview of stack example: 1 to replace, 2 to update" in result.output
    argv, outputs = smoke[0]
    assert argv[1:5] == ["-m", "cli", "smoke", "run"]
    assert argv[argv.index("--pools") + 1] == ",".join(CHANGED)
    assert argv[argv.index("--junit") + 1] == str(tmp_path / "smoke.xml")
    assert outputs["kubeconfigs"] == {"ml-gke": "apiVersion: v1"}
    assert not Path(argv[argv.index("--outputs") + 1]).exists()  # secrets not left behind
    assert "deployed and proven (4 pool(s))" in result.output


def test_up_smoke_all_none_and_failure(engine: Recording, smoke: list[Any],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    every = sorted(p["name"] for p in json.loads(SNAPSHOT.read_text())["pools"])
    result = runner.invoke(app, ["up", "--yes", "--smoke", "all"])
    assert result.exit_code == 0, result.output
    assert smoke[-1][0][smoke[-1][0].index("--pools") + 1] == ",".join(every)
    count = len(smoke)
    none = runner.invoke(app, ["up", "--yes", "--smoke", "none"])
    assert none.exit_code == 0 and len(smoke) == count and "--smoke none" in none.output
    monkeypatch.setattr(up_cli, "smoke_runner", lambda argv: 1)
    failed = runner.invoke(app, ["up", "--yes"])
    assert failed.exit_code == 1
    assert "smoke failed on stack example (exit 1)" in failed.output


def test_up_without_a_terminal_needs_yes(engine: Recording, smoke: list[Any]) -> None:
    result = runner.invoke(app, ["up"], input="")
    assert result.exit_code == 2
    assert "pass --yes" in result.output and engine.calls == ["preview"]


def test_engine_failure_is_exit_1(monkeypatch: pytest.MonkeyPatch, smoke: list[Any]) -> None:
    from pulumi.automation._cmd import CommandResult
    from pulumi.automation.errors import CommandError

    failing = Recording(CommandError(CommandResult("", "error: getting credentials", 255)))
    monkeypatch.setattr(up_cli, "engine_factory", lambda stack, packs: failing)
    result = runner.invoke(app, ["preview"])
    assert result.exit_code == 1
    assert "pulumi failed" in result.output and "credentials" in result.output


def test_no_pulumi_cli_is_exit_2_with_how_to_install(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(up_cli, "engine_factory", None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pulumi` anywhere on it
    for args in (["preview"], ["up", "--yes"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "Pulumi CLI is not on PATH" in result.output
        assert "get.pulumi.com" in result.output and "Traceback" not in result.output


def test_bad_stack_and_options_exit_2(engine: Recording, tmp_path: Path) -> None:
    elsewhere = tmp_path / "Pulumi.example.yaml"
    elsewhere.write_text(EXAMPLE_STACK.read_text())
    result = runner.invoke(app, ["up", str(elsewhere), "--yes"])
    assert result.exit_code == 2 and "Pulumi reads stack 'example'" in result.output
    bad = runner.invoke(app, ["up", "--yes", "--smoke", "some"])
    assert bad.exit_code == 2 and "unknown --smoke" in bad.output
    assert engine.calls == []


def test_smoke_argv_is_a_list() -> None:
    argv = smoke_argv(Path("stacks/Pulumi.x.yaml"), Path("/t/o.json"), ["b", "a"])
    assert argv[-2:] == ["--pools", "a,b"] and all(isinstance(a, str) for a in argv)


def test_help() -> None:
    for cmd in ("up", "preview"):
        result = runner.invoke(app, [cmd, "--help"])
        assert result.exit_code == 0 and "Automation API" in result.output
