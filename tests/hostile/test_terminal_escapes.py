"""Issue 29 item 5: a text that came from a file, a cluster or a pod never reaches a terminal raw.
Terminal control in a stack value (an EKS cluster's `kubernetes_version`), in a stack outputs
file, in an NCCL log and in a pod's log is shown escaped (`\\x1b`, `\\u202e`) on stdout and
stderr, in plain and Rich output alike; JSON escapes it as JSON does (`\\u001b`).

The sequences are the ones an attacker uses: OSC 52 writes the reader's clipboard (xterm's
ctlseqs, "Manipulate Selection Data"), OSC 0 sets the window title, CSI 2J clears the screen,
C1 CSI (0x9b) is CSI in one byte, and the Unicode bidi overrides and isolates (U+202E, U+2066)
reorder what a line shows ("Trojan Source", CVE-2021-42574)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.hostile.conftest import ROOT

# A base64 payload, as OSC 52 carries it; the title; a screen clear; the one-byte C1 CSI; DEL;
# a right-to-left override and a left-to-right isolate.
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
OSC0 = "\x1b]0;pwned\x07"
CSI = "\x1b[2J"
PAYLOAD = OSC52 + OSC0 + CSI + "\x9b31m\x7f\u202eevil\u2066"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# the payload as YAML double-quoted escapes (a stack file is text; YAML makes the controls)
YAML_PAYLOAD = r"\e]52;c;ZWNobyBwd25lZA==\a\e]0;pwned\a\e[2J\x9b31m\x7f\u202eevil\u2066"

EKS_STACK = f"""config:
  accelfleet:fleet:
    clouds:
      aws: {{account: "123456789012", region: us-east-1}}
    clusters:
      - {{name: eks, cloud: aws, kubernetes_version: "1.33{YAML_PAYLOAD}"}}
    teams:
      - {{name: ml}}
    pools:
      - {{name: g6, cluster: eks, team: ml, accelerator: g6.xlarge, nodes: 1, zone: us-east-1a}}
"""


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def assert_safe(stdout: str, stderr: str) -> None:
    """No control character (but newline and tab), DEL, C1 or bidi control on either stream."""
    for name, text in (("stdout", stdout), ("stderr", stderr)):
        raw = RAW.findall(text.replace("\n", "").replace("\t", ""))
        assert not raw, (name, raw[:5], text[-1500:])


def test_safe_shows_every_control_escaped_and_leaves_the_rest() -> None:
    from cli._terminal import safe

    assert safe(PAYLOAD) == ("\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b]0;pwned\\x07\\x1b[2J"
                             "\\x9b31m\\x7f\\u202eevil\\u2066")
    assert safe("tab\there\nnext line, café, 東京, ✓") == "tab\there\nnext line, café, 東京, ✓"
    assert safe("\r\x00\u061c\u200f\u202a\u2069") == "\\x0d\\x00\\u061c\\u200f\\u202a\\u2069"


@pytest.mark.parametrize("command", [
    ["fleet", "validate"], ["pool", "list"], ["pool", "expired"], ["queue", "show"],
    ["smoke", "render"]])
def test_a_stack_value_is_shown_escaped(command: list[str], tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.hostile.yaml"
    stack.write_text(EKS_STACK, encoding="utf-8")
    code, out, err = _run(*command, str(stack))
    assert code == 2, out + err
    assert_safe(out, err)
    assert "1.33\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b]0;pwned" in err  # said, escaped
    assert "\\u202eevil\\u2066" in err


def test_json_escapes_as_json_does(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.hostile.yaml"
    stack.write_text(EKS_STACK, encoding="utf-8")
    code, out, err = _run("fleet", "validate", str(stack), "--json")
    assert code == 2
    assert_safe(out, err)
    doc = json.loads(out)
    assert any(PAYLOAD in p["message"] for p in doc["problems"])  # JSON reads back the value


def test_a_pool_name_in_a_hostile_outputs_file_is_shown_escaped(tmp_path: Path) -> None:
    from fleet import load_fleet
    from fleet.inventory import build_inventory

    inv = build_inventory(load_fleet(str(ROOT / "stacks" / "Pulumi.example.yaml")), "example")
    doc = json.loads(json.dumps(inv.to_dict()))
    doc["pools"][0]["name"] = "h100" + PAYLOAD
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"inventory": doc}), encoding="utf-8")
    code, out, err = _run("smoke", "render", "--outputs", str(outputs))
    assert code == 2, out + err
    assert_safe(out, err)
    assert "h100\\x1b]52;c;" in out + err


NCCL = ROOT / "tests" / "smoke" / "data" / "nccl" / "nccl-socket-gke-a3-info.log"
VERSION = "NCCL version 2.22.3+cuda12.6"


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_an_nccl_log_line_is_shown_escaped_in_the_table_and_json(extra: list[str],
                                                                 tmp_path: Path) -> None:
    """A real NCCL log (tests/smoke/data/nccl, source in its header) whose version line
    carries the payload: the Rich table and summary and the JSON document show it escaped."""
    log = tmp_path / "nccl.log"
    log.write_text(NCCL.read_text(encoding="utf-8").replace(VERSION, VERSION + PAYLOAD),
                   encoding="utf-8")
    code, out, err = _run("smoke", "nccl-log", str(log), *extra)
    assert code == 0, out + err
    assert_safe(out, err)
    if extra:
        doc = json.loads(out)
        assert doc["nccl_versions"] == ["2.22.3+cuda12.6" + PAYLOAD]
        assert "\\u007f" in out and "\\x7f" not in out  # JSON's escape, never Python's
    else:  # (Rich drops BEL itself; ESC, C1, DEL and the overrides are shown escaped)
        assert "2.22.3+cuda12.6\\x1b]52;c;ZWNobyBwd25lZA==\\x1b]0;pwned\\x1b[2J" in out
        assert "\\x9b31m\\x7f\\u202eevil\\u2066" in out


def test_an_error_message_and_its_hint_are_shown_escaped(tmp_path: Path) -> None:
    """A file name is text from the file system: a refusal that names it shows it escaped."""
    missing = tmp_path / ("Pulumi." + OSC0 + "x.yaml")
    code, out, err = _run("fleet", "validate", str(missing))
    assert code == 2, out + err
    assert_safe(out, err)
    assert "\\x1b]0;pwned\\x07" in err


def test_every_write_of_the_cli_goes_through_the_safe_writer() -> None:
    """The CLI writes through cli/_terminal.py (echo, echo_json, safe_console) only: a raw
    typer.echo, click.echo, print, sys.stdout/stderr write or Rich Console elsewhere in cli/
    would bypass it. (cli/entry.py writes one constant word before anything is imported.)"""
    banned = re.compile(r"\btyper\.echo\(|\bclick\.echo\(|\bsecho\(|(?<![\w.])print\(|"
                        r"sys\.std(out|err)\.write|(?<![\w.])Console\(|typer\.(confirm|prompt)\(")
    found = []
    for path in sorted((ROOT / "cli").glob("*.py")):
        if path.name == "_terminal.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if banned.search(line) and not (path.name == "entry.py" and
                                            'write("interrupted\\n")' in line):
                if "typer.confirm(safe(" in line:
                    continue
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, found
