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
