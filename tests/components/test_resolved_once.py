"""Routing is resolved, and the fleet validated, once per plan and once per `fleet validate`
(issue 22): the validated `Fleet` carries its routing (`Fleet.routing`), and the offline plan
hands the stack program the fleet it validated (components.engine.handoff).

A counter replaces the routing resolver and the validator; a second call fails the test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

import fleet.rules.routing as routing_rules
import fleet.rules.validate as validate_rules
from cli.main import app
from components.engine.handoff import handed, program_fleet
from components.engine.plan import run_plan
from fleet.stack.read import EXAMPLE_STACK


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    seen: Counter[str] = Counter()

    def once(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            seen[name] += 1
            assert seen[name] == 1, f"{name} called a second time"
            return real(*args, **kwargs)
        return counted

    monkeypatch.setattr(routing_rules._Resolver, "run",
                        once("routing", routing_rules._Resolver.run))
    monkeypatch.setattr(validate_rules, "validate_fleet",
                        once("validate", validate_rules.validate_fleet))
    return seen


def test_a_plan_validates_and_resolves_routing_once(calls: Counter[str]) -> None:
    plan = run_plan(EXAMPLE_STACK)
    data = plan.to_dict()
    assert data["routing"] and plan.fleet.routing  # the routing is there, read from the fleet
    assert calls == {"validate": 1, "routing": 1}


def test_the_plan_command_validates_and_resolves_routing_once(calls: Counter[str]) -> None:
    result = CliRunner().invoke(app, ["plan", str(EXAMPLE_STACK)])
    assert result.exit_code == 0, result.output
    assert "LocalQueue" in result.output or "queue" in result.output
    assert calls == {"validate": 1, "routing": 1}


@pytest.mark.parametrize("argv", [["fleet", "validate"], ["queue", "show"]])
def test_fleet_validate_and_queue_show_resolve_once(calls: Counter[str], argv: list[str]
                                                    ) -> None:
    result = CliRunner().invoke(app, [*argv, str(EXAMPLE_STACK)])
    assert result.exit_code == 0, result.output
    assert calls == {"validate": 1, "routing": 1}


def test_the_program_validates_a_config_nobody_handed_it(calls: Counter[str]) -> None:
    from fleet.stack.read import read_stack_file

    raw = read_stack_file(str(EXAMPLE_STACK))
    fleet = program_fleet(raw, source="stack example")  # `pulumi up`: nothing handed
    assert calls == {"validate": 1, "routing": 1}
    with handed({**raw, "teams": []}, fleet):  # handed for another config: not taken
        with pytest.raises(AssertionError, match="second time"):
            program_fleet(raw, source="stack example")
    with handed(raw, fleet):
        assert program_fleet(raw, source="stack example") is fleet
