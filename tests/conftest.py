"""Fixtures for every test."""

from __future__ import annotations

from pathlib import Path

import pytest


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
