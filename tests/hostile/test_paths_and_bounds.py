"""Issue 29 item 7: the bounds an NCCL log may hold (bytes, a line's length, ranks, a number's
digits: exit 2 saying which, never 3 or a minute of parsing), an output that would overwrite an
input of the same command is refused, and a report is written whole or not at all (an
interrupt or a full disk leaves the old file, never half of the new one)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT, invoke, refused

NCCL = ROOT / "tests" / "smoke" / "data" / "nccl" / "nccl-socket-gke-a3-info.log"
LINE = ("gke-hypercomputer-a3-a3-h100-dws-pool-16664d9c-hv7m:1596:2150 [0] NCCL INFO "
        "Using network Socket")  # a line of that real log (its header cites the source)


def _log(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nccl.log"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_line_past_the_bound_is_refused_saying_so(tmp_path: Path) -> None:
    from smoke.probes.nccl_log import MAX_LINE_CHARS

    text = NCCL.read_text(encoding="utf-8") + LINE + " " + "x" * MAX_LINE_CHARS + "\n"
    refused(*invoke("smoke", "nccl-log", str(_log(tmp_path, text))),
            f"is read up to {MAX_LINE_CHARS:,}", "characters long")


def test_a_long_line_under_the_bound_is_read_quickly(tmp_path: Path) -> None:
    """A line of letters just under the bound and no prefix: the prefix search was quadratic
    (31 s for 64 KiB); bounded, the log is judged (no time asserted: a slow parse would show
    in the run's durations)."""
    from smoke.probes.nccl_log import MAX_LINE_CHARS

    text = NCCL.read_text(encoding="utf-8") + "a" * (MAX_LINE_CHARS - 20) + " NCCL INFO x\n"
    code, output = invoke("smoke", "nccl-log", str(_log(tmp_path, text)))
    assert code == 0, output[-2000:]


@pytest.mark.parametrize("where", ["dev", "nic", "pid"])
def test_a_number_of_thousands_of_digits_is_refused_saying_so(where: str,
                                                              tmp_path: Path) -> None:
    digits = "9" * 5000
    line = {"dev": f"host:1:2 [{digits}] NCCL INFO Using network Socket",
            "nic": f"host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via "
                   f"NET/Socket/{digits}",
            "pid": f"[{digits}] NCCL INFO Using network Socket"}[where]
    text = NCCL.read_text(encoding="utf-8") + line + "\n"
    refused(*invoke("smoke", "nccl-log", str(_log(tmp_path, text))), "5,000 digits",
            "read up to 12 digits")


def test_more_ranks_than_the_bound_are_refused_saying_so(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import smoke.probes.nccl_log as reader

    monkeypatch.setattr(reader, "MAX_RANKS", 100)  # the same check as at 65,536, faster
    text = "".join(f"host{i}:{i}:1 [0] NCCL INFO Using network Socket\n" for i in range(101))
    refused(*invoke("smoke", "nccl-log", str(_log(tmp_path, text))),
            "more than 100 processes")


def test_dev_zero_and_an_endless_stdin_are_refused() -> None:
    refused(*invoke("smoke", "nccl-log", "/dev/zero"), "character device, not a regular file")
    with open("/dev/zero", "rb") as zeros:
        done = subprocess.run([sys.executable, "-m", "cli", "smoke", "nccl-log", "-"],
                              cwd=ROOT, stdin=zeros, capture_output=True, text=True,
                              timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "standard input holds over 256 MiB" in done.stderr


def test_plan_refuses_to_write_over_its_own_stack(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.example.yaml"
    stack.write_bytes((ROOT / "stacks" / "Pulumi.example.yaml").read_bytes())
    before = stack.read_bytes()
    refused(*invoke("plan", str(stack), "--out", str(stack)),
            "it is the stack file this command reads")
    assert stack.read_bytes() == before


def test_plan_refuses_to_write_over_the_base_it_diffs(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text('{"resources": []}', encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(base)  # the same file under another name
    refused(*invoke("plan", "--out", str(link), "--diff", str(base)),
            "it is the base plan this command reads")
    assert base.read_text(encoding="utf-8") == '{"resources": []}'


def test_smoke_run_refuses_a_report_over_its_outputs_file(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs.json"
    outputs.write_text("{}", encoding="utf-8")
    refused(*invoke("smoke", "run", "--outputs", str(outputs), "--html", str(outputs)),
            "it is the outputs file this command reads")
    assert outputs.read_text(encoding="utf-8") == "{}"


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"),
                                     KeyboardInterrupt()])
def test_a_report_is_written_whole_or_not_at_all(failure: BaseException, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills (or Ctrl-C comes) while the new report is written: the old report is
    left as it was and no temporary file stays beside it."""
    from fleet import output_files

    report = tmp_path / "report.html"
    report.write_text("the old report", encoding="utf-8")

    def fail(fd: int) -> None:
        raise failure

    monkeypatch.setattr(output_files.os, "fsync", fail)
    if isinstance(failure, OSError):
        assert output_files.save(report, "the new one" * 1000) == (
            f"cannot write {report}: no space left on the device")
    else:
        with pytest.raises(KeyboardInterrupt):
            output_files.save(report, "the new one" * 1000)
    assert report.read_text(encoding="utf-8") == "the old report"
    assert sorted(os.listdir(tmp_path)) == ["report.html"]


def test_a_fifo_nobody_reads_is_refused_not_waited_on(tmp_path: Path) -> None:
    from fleet.output_files import save

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert save(fifo, "x") == (f"cannot write {fifo}: it is a FIFO (named pipe) nobody "
                               "reads: writing would wait forever")


def test_a_name_near_the_limit_is_still_written(tmp_path: Path) -> None:
    """The temporary file beside it has a short name: a 250-byte report name fits."""
    from fleet.output_files import save

    report = tmp_path / ("r" * 245 + ".html")
    assert save(report, "x") is None
    assert report.read_text(encoding="utf-8") == "x"
