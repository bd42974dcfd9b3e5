"""Issue 29 item 7: every path option and argument of every command, given a hostile path, exits
2 with a sentence, never 3 and never a hang: a path of 5,000 characters (ENAMETOOLONG), one
nested 3,000 levels deep, a path under a regular file, /dev/zero (a read never ends) and a FIFO
nobody writes or reads (an open blocks forever). The FIFO cases run in a child process with a
timeout, so that a hang fails the test instead of holding the run.

/dev/zero given as an output file is written through, as /dev/null is (exit 0 or 2): only an
input must refuse it. `up` and `preview` are walked with the values refused before any work
only (the others would reach the Pulumi CLI where one is installed)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from tests.cli.commands import leaf_commands
from tests.hostile.conftest import ROOT, invoke

# what a command needs besides the path so that the path is what it reaches
BASE = {("advise",): ["--workload", "8b-pretrain"],
        ("pool", "request"): ["--team", "research", "--accelerator", "a3-highgpu-8g"],
        ("pool", "resize"): ["h100-train", "--nodes", "3"],
        ("pool", "remove"): ["h100-train"],
        ("smoke", "release"): ["--pool", "h100-train"],
        ("gate", "open"): ["h100-train", "--reason", "a proof outage"],
        ("gate", "close"): ["h100-train"]}
# what a command needs when the path under test is an option's, not its argument's
OPTION_BASE = {("smoke", "report"): [str(ROOT / "tests" / "smoke" / "data" / "recorded_run.json")]}
VERDICT = {("smoke", "report")}  # exits 1 when its input failed (the recorded run did)
OUTPUT_FILES = {"out", "junit", "html", "metrics", "patch"}  # written (--out: a plan file)
DIRECTORIES = {("smoke", "render"), ("smoke", "run"), ("up",)}  # their --out is a directory
ENGINE = {("up",), ("preview",)}
VALUES = ("long", "deep", "under-file", "devzero", "fifo")


# options typed as text that may name a file (a preset name or a workload file's path)
TEXT_PATHS = {("advise",): {"workload"}}


def _path_params(words: tuple[str, ...], cmd: Any) -> list[Any]:
    hints = typing.get_type_hints(inspect.unwrap(cmd.callback), include_extras=True)
    return [p for p in cmd.params if "Path" in repr(hints.get(p.name))
            or p.name in TEXT_PATHS.get(words, ())]


def _cases() -> list[tuple[tuple[str, ...], str, str]]:
    cases = []
    for words, cmd in leaf_commands().items():
        for param in _path_params(words, cmd):
            flag = param.opts[0] if param.param_type_name == "option" else ""
            for value in VALUES:
                if words in ENGINE and value in ("devzero", "fifo"):
                    continue
                cases.append((words, flag, value))
    return cases


CASES = _cases()


def test_the_walk_covers_every_path_of_every_command() -> None:
    walked = {(w, f) for w, f, _ in CASES}
    assert len(walked) >= 50, walked  # every --out, --junit, --stack, STACK_FILE, ... of 14
    for expected in ((("plan",), "--out"), (("smoke", "nccl-log"), ""),
                     (("smoke", "history"), "--history"), (("advise",), "--workload"),
                     (("smoke", "local"), "--html"), (("smoke", "release"), "--kubeconfig")):
        assert expected in walked, expected


def _value(kind: str, tmp: Path) -> str:
    if kind == "long":
        return str(tmp / ("a" * 5000))
    if kind == "deep":
        return str(tmp) + "/d" * 3000 + "/x"
    if kind == "under-file":
        (tmp / "afile").write_text("x", encoding="utf-8")
        return str(tmp / "afile" / "x.json")
    if kind == "devzero":
        return "/dev/zero"
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    return str(fifo)


@pytest.mark.slow
@pytest.mark.parametrize(("words", "flag", "kind"), CASES,
                         ids=[f"{' '.join(w)} {f or 'ARG'} {k}" for w, f, k in CASES])
def test_a_hostile_path_exits_2_with_a_sentence(words: tuple[str, ...], flag: str, kind: str,
                                                tmp_path: Path) -> None:
    value = _value(kind, tmp_path)
    args = [*words, *BASE.get(words, []), *(OPTION_BASE.get(words, []) if flag else []),
            *([flag, value] if flag else [value])]
    if kind == "fifo":  # a child process: a hang is a timeout, not a stuck test run
        try:
            done = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, timeout=90,
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"accelfleet {' '.join(words)} {flag} FIFO did not end in 90 s")
        code, output = done.returncode, done.stdout + done.stderr
    else:
        code, output = invoke(*args)
    assert "internal error" not in output and "Traceback" not in output, output[-2000:]
    name = flag.removeprefix("--")
    if kind == "devzero" and name in OUTPUT_FILES and words not in DIRECTORIES:
        # written through, as /dev/null is
        assert code in ((0, 1, 2) if words in VERDICT else (0, 2)), output[-2000:]
        return
    assert code == 2, output[-2000:]
    assert "error" in output.lower(), output[-2000:]
    if kind in ("long", "deep"):  # said before any work, naming the option
        said = flag.removeprefix("--") if words in TEXT_PATHS else flag or "FILE"
        assert "bytes long" in output and said in output, output[-2000:]
