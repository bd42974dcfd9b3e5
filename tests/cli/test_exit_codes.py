"""The console entry point (`cli.main.run`) and every command end the same way for the same
error: cli._errors.report is the one mapping (issue 22)."""

from __future__ import annotations

import pytest

import cli.main
from fleet.errors import CheckFailed, Problem, SpecError


def _run(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> int:
    def boom() -> None:
        raise exc

    monkeypatch.setattr(cli.main, "app", boom)
    with pytest.raises(SystemExit) as done:
        cli.main.run()
    return int(done.value.code or 0)


@pytest.mark.parametrize(("exc", "code", "said"), [
    (CheckFailed("2 checks failed", hint="read them"), 1,
     "error: 2 checks failed\n  hint: read them"),
    (SpecError([Problem("pools 'a'.nodes", "is required")]), 2, "pools 'a'.nodes: is required"),
    (ZeroDivisionError("division by zero"), 3, "internal error: ZeroDivisionError"),
])
def test_run_ends_as_the_commands_do(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str], exc: BaseException,
                                     code: int, said: str) -> None:
    assert _run(monkeypatch, exc) == code
    assert said in capsys.readouterr().err
