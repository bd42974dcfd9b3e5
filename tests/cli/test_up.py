"""`accelfleet up` / `accelfleet preview` around the engine: no Pulumi CLI exists here, so the
engine is a recording (real engine events, parsed by the Automation API's own EngineEvent) and
the smoke run (the library call `smoke.session.run_smoke`, in this process) a recorder
that answers with a recorded run; what is real is everything accelfleet decides (which pools
changed, confirmation, the smoke request, what is shown, exit codes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import up as up_cli
from cli.main import app
from components.engine.deploy import changed_pools, summary_of, urn_key
from fleet.errors import SetupError
from fleet.stack.read import EXAMPLE_STACK
from smoke.cluster.run import RunReport
from smoke.session import SmokeRequest, SmokeResult
from tests.smoke.recorded import BAD_NODE, recorded_run

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

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


def passing_run() -> RunReport:
    """The recorded run without its failing pool: two healthy v5p slices, an idle pool."""
    run = recorded_run()
    return replace(run, pools=tuple(p for p in run.pools if p.name != "h100-train"))


@pytest.fixture
def smoke(monkeypatch: pytest.MonkeyPatch) -> list[SmokeRequest]:
    seen: list[SmokeRequest] = []

    def run(request: SmokeRequest) -> SmokeResult:
        seen.append(request)
        return SmokeResult(passing_run())

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


def test_up_smokes_the_changed_pools(engine: Recording, smoke: list[SmokeRequest],
                                     tmp_path: Path, own_project: Path) -> None:
    example = own_project / "stacks" / EXAMPLE_STACK.name  # where Pulumi reads it from here
    result = runner.invoke(app, ["up", str(example), "--yes",
                                 "--junit", str(tmp_path / "smoke.xml")])
    assert result.exit_code == 0, result.output
    assert engine.calls == ["preview", "up"]
    assert f"preview of stack example ({example.as_posix()}): 1 to replace, 2 to update" \
        in result.output  # the file read (issue 38)
    [request] = smoke
    assert request.stack_file is not None
    assert request.stack_file.resolve() == example.resolve()
    assert list(request.pools or []) == CHANGED
    assert request.junit == tmp_path / "smoke.xml" and request.out is None
    # the outputs, kubeconfigs included, are handed over in memory: no file holds the secrets
    assert isinstance(request.outputs, dict)
    assert request.outputs["kubeconfigs"] == {"ml-gke": "apiVersion: v1"}
    assert request.record_history and request.quarantine is None  # as `smoke run` does
    assert "v5p-ms" in result.output  # the smoke report is shown, as `smoke run` shows it
    assert "deployed and proven (4 pool(s))" in result.output


def test_up_smoke_all_none_and_failure(engine: Recording, smoke: list[SmokeRequest],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    every = sorted(p["name"] for p in json.loads(SNAPSHOT.read_text())["pools"])
    result = runner.invoke(app, ["up", "--yes", "--smoke", "all"])
    assert result.exit_code == 0, result.output
    assert list(smoke[-1].pools or []) == every
    count = len(smoke)
    none = runner.invoke(app, ["up", "--yes", "--smoke", "none"])
    assert none.exit_code == 0 and len(smoke) == count and "--smoke none" in none.output
    monkeypatch.setattr(up_cli, "smoke_runner", lambda request: SmokeResult(recorded_run()))
    failed = runner.invoke(app, ["up", "--yes"])
    assert failed.exit_code == 1, failed.output
    assert "smoke failed on stack example" in failed.output
    assert BAD_NODE in failed.output and "deployed and proven" not in failed.output


def test_up_smoke_that_cannot_run_or_is_interrupted(engine: Recording,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(request: SmokeRequest) -> SmokeResult:
        raise SetupError("cannot reach cluster ml-gke", hint="check the kubeconfig")

    monkeypatch.setattr(up_cli, "smoke_runner", unreachable)
    result = runner.invoke(app, ["up", "--yes"])
    assert result.exit_code == 1, result.output  # deployed, not proven: the smoke failed
    assert "smoke could not run on stack example: cannot reach cluster ml-gke" in result.output
    assert "check the kubeconfig" in result.output
    stopped = replace(passing_run(), cancelled=True)
    monkeypatch.setattr(up_cli, "smoke_runner", lambda request: SmokeResult(stopped))
    interrupted = runner.invoke(app, ["up", "--yes"])
    assert interrupted.exit_code == 130, interrupted.output
    assert "every object it created was deleted" in interrupted.output


def test_up_runs_smoke_in_this_process(engine: Recording,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """No `accelfleet smoke run` subprocess: the library call, with the live table."""
    import subprocess

    import smoke.session as session

    calls: list[tuple[SmokeRequest, object]] = []

    def run_smoke(request: SmokeRequest, *, progress: object = None) -> SmokeResult:
        calls.append((request, progress))
        return SmokeResult(passing_run())

    def no_subprocess(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("smoke ran as a subprocess")

    monkeypatch.setattr(up_cli, "smoke_runner", None)
    monkeypatch.setattr(session, "run_smoke", run_smoke)
    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    result = runner.invoke(app, ["up", "--yes"])
    assert result.exit_code == 0, result.output
    [(request, progress)] = calls
    assert list(request.pools or []) == CHANGED and hasattr(progress, "update")


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


def test_help() -> None:
    for cmd in ("up", "preview"):
        result = runner.invoke(app, [cmd, "--help"])
        assert result.exit_code == 0 and "Automation API" in result.output
