"""Item 8 (completion half): `accelfleet completion bash|zsh|fish` prints Typer's completion
script, and the shell's completion requests are answered (commands, options)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT, invoke

BIN = Path(sys.executable).parent / "accelfleet"


@pytest.mark.parametrize(("shell", "says"), [
    ("bash", "complete -o default -F"), ("zsh", "compdef"),
    ("fish", "complete --command accelfleet")])
def test_completion_prints_the_script(shell: str, says: str) -> None:
    code, out = invoke("completion", shell)
    assert code == 0 and says in out and "_ACCELFLEET_COMPLETE" in out


def test_an_unknown_shell_is_refused() -> None:
    code, out = invoke("completion", "tcsh")
    assert code == 2 and "bash, zsh, fish" in out


@pytest.mark.skipif(not BIN.exists(), reason="the accelfleet script is not installed")
def test_the_shell_gets_commands_and_options() -> None:
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_ACCELFLEET_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}
        done = subprocess.run([str(BIN)], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("accelfleet po") == ["pool"]
    assert "--stack" in complete("accelfleet pool remove --st")
