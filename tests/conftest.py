"""Fixtures for every test."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tests.controlplane.fixtures"]


@pytest.fixture(autouse=True)
def _smoke_history_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """`smoke run` and `smoke local` record every run in a history (by default
    .accelfleet/history.sqlite under the working directory): a test's runs go to a file of
    its own, never into the checkout."""
    path = tmp_path_factory.mktemp("history") / "history.sqlite"
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(path))
    return path


@pytest.fixture(autouse=True)
def _no_terminal_width_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI fits its output to $COLUMNS when set (cli._output): a test sees the width it
    asks for (`env={"COLUMNS": ...}`) or none, never the developer's shell's, nor the
    COLUMNS pytest-xdist sets in its workers."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True)
def _no_stack_chosen_outside(tmp_path_factory: pytest.TempPathFactory,
                             monkeypatch: pytest.MonkeyPatch) -> Path:
    """Which stack a command works on depends on the shell ($ACCELFLEET_STACK,
    $PULUMI_STACK) and on `pulumi stack select` (under $PULUMI_HOME): a test starts with
    none of them, whatever the developer's machine has selected."""
    for var in ("ACCELFLEET_STACK", "PULUMI_STACK", "PULUMI_BACKEND_URL"):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path_factory.mktemp("pulumi-home")
    monkeypatch.setenv("PULUMI_HOME", str(home))
    return home


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def own_project(tmp_path_factory: pytest.TempPathFactory,
                monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pulumi project folder of the test's own, made the working directory: this checkout's
    Pulumi.yaml and a copy of the example stack in its stacks/. A command that chooses its
    stack by default (fleet.stack.choice) reads this folder, never the checkout's stacks/,
    where a team keeps its own stacks (`stacks/Pulumi.acme.yaml` must not change a test's
    result, issue 29 item 2)."""
    import shutil

    from fleet.stack.read import EXAMPLE_STACK

    project = tmp_path_factory.mktemp("project")
    shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks").mkdir()
    shutil.copy(EXAMPLE_STACK, project / "stacks" / EXAMPLE_STACK.name)
    monkeypatch.chdir(project)
    return project


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """With ACCELFLEET_TEST_CPU=FILE, each test's CPU seconds (this process and the children it
    waited for) are appended to FILE, a line each: where the suite's time goes on a loaded
    machine, where wall-clock durations mislead (docs/testing.md)."""
    out = os.environ.get("ACCELFLEET_TEST_CPU")
    if not out:
        yield
        return
    import resource

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    start, wall = cpu(), time.monotonic()
    yield
    with open(out, "a", encoding="utf-8") as f:
        f.write(f"{cpu() - start:.3f}\t{time.monotonic() - wall:.3f}\t{item.nodeid}\n")
