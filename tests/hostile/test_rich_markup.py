"""Issue 29 item 4: square brackets in a text from a stack are never read as Rich console markup.

Rich reads `[bold]`, `[/]` and `[link=URL]` in any string it prints or puts in a table cell as
a style, a closing tag or a hyperlink (https://rich.readthedocs.io/en/stable/markup.html, read
2026-11-27): the `admins` example of an EKS warning's fix line (`admins: [arn:aws:iam::...]`)
lost its brackets and ARN, and a pool's `requested_by` of `[/]bob` ended `pool list` in an
internal error (MarkupError). Every such text goes through `cli._terminal.literal` first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

ADMINS = "`admins: [arn:aws:iam::123456789012:role/ci-deployer]`"
# what a user may type in a free-text field (`requested_by`): a style, a lone closing tag, a
# hyperlink; each pool expired (`pool expired` lists it)
MARKUP = ("[bold]ml-lead[/bold]", "[/]bob", "[link=https://evil.example]ann[/link]")

EKS = """config:
  accelfleet:fleet:
    clouds:
      aws: {{account: "123456789012", region: us-east-1}}
    clusters:
      - {{name: eks, cloud: aws, kubernetes_version: "1.35"}}
    teams:
      - {{name: ml}}
    pools:
{pools}"""
POOL = ("      - {{name: g6-{i}, cluster: eks, team: ml, accelerator: g6.xlarge, nodes: 1,"
        " zone: us-east-1a, requested_by: '{who}', expires: 2026-01-31}}\n")


def _stack(tmp_path: Path) -> Path:
    stack = tmp_path / "Pulumi.brackets.yaml"
    pools = "".join(POOL.format(i=i, who=who) for i, who in enumerate(MARKUP))
    stack.write_text(EKS.format(pools=pools), encoding="utf-8")
    return stack


def _run(columns: int, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout + result.stderr


def _squeezed(text: str) -> str:
    """`text` without white space and table rules: Rich wraps a long line at a space and folds
    a long cell anywhere, so a value is looked for with both undone."""
    return re.sub(r"[\s│┃]", "", text)


def test_literal_shows_markup_as_written() -> None:
    from rich.console import Console

    from cli._terminal import literal

    console = Console(width=200, record=True, color_system=None)
    for text in (*MARKUP, ADMINS, "[#ff0000]red[/#ff0000]", "C:\\[bold] x"):
        with console.capture() as cap:
            console.print(literal(text))
        assert cap.get() == text + "\n"
    # inside markup of our own, a value's trailing backslash never escapes the closing tag
    with console.capture() as cap:
        console.print("[bold]" + literal("ends with a backslash \\") + "[/bold] after")
    assert cap.get() == "ends with a backslash \\ after\n"


@pytest.mark.parametrize("columns", [250, 130, 90])  # the table, the compact one, key/value
@pytest.mark.parametrize("command", [("fleet", "validate"), ("plan",)])
def test_the_admins_example_of_a_warning_keeps_its_brackets(
        command: tuple[str, ...], columns: int, tmp_path: Path) -> None:
    code, out = _run(columns, *command, str(_stack(tmp_path)))
    assert code == 0, out[-3000:]
    assert "no cluster admins" in out
    assert "warning: clusters 'eks'.admins" in out, out[-3000:]
    # every warning line, plain and Rich, keeps the example whole
    flat = _squeezed(out)
    assert flat.count(_squeezed(ADMINS)) == flat.count("`admins:"), out[-3000:]
    assert "`admins:`" not in flat


@pytest.mark.parametrize("columns", [250, 130, 90])
@pytest.mark.parametrize("command", [("pool", "list"), ("pool", "expired"),
                                     ("fleet", "validate")])
def test_markup_in_a_stack_value_is_shown_as_written(command: tuple[str, ...], columns: int,
                                                     tmp_path: Path) -> None:
    stack = _stack(tmp_path)
    code, out = _run(columns, *command, str(stack))
    assert code == 0, out[-3000:]
    assert "internal error" not in out and "MarkupError" not in out
    if command[0] == "pool" and columns != 130:  # (the compact table has no `requested by`)
        flat = _squeezed(out)
        for who in MARKUP:
            assert _squeezed(who) in flat, (who, out[-3000:])
    # the title names the file; at 90 columns a long temporary path wraps inside it
    assert "Pulumi.brackets.yaml" in _squeezed(out)


def test_a_title_with_brackets_in_the_key_value_blocks_is_shown_as_written(
        tmp_path: Path) -> None:
    """A stack whose folder name holds markup: the table's title names it."""
    folder = tmp_path / "[bold]fleet[red]"
    folder.mkdir()
    code, out = _run(90, "pool", "list", str(_stack(folder)))
    assert code == 0, out[-3000:]
    assert "/[bold]fleet[red]/Pulumi.brackets.yaml" in _squeezed(out), out


def test_the_live_table_of_smoke_run_shows_a_reason_as_written() -> None:
    from rich.console import Console

    from cli.smoke import LiveTable

    console = Console(width=200, record=True, color_system=None)
    live = LiveTable(console)
    live.update("g6-[bold]x", "failed", 0, 1, "pod: [/] [link=https://evil.example]x[/link]")
    with console.capture() as cap:
        console.print(live)
    text = cap.get()
    assert "g6-[bold]x" in text and "pod: [/] [link=https://evil.example]x[/link]" in text
