"""The command reference of docs/commands.md, generated from the Typer app so it cannot drift
from `--help`.

    python -m cli._docs docs/commands.md   # rewrite the reference in place

Every group and command of `cli.main.app`, in the order `--help` lists them: its usage line,
its help text (markdown, as `--help` renders it) and a table of its arguments and options (name,
value, default, help). Plain text from Click's own records: no terminal width, no colour, no
Rich boxes, so the output is the same on every machine. A test compares the reference in
docs/commands.md with `render()`. Only this command imports the module: `accelfleet --help`
never does.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

BEGIN = "<!-- commands:begin (generated: python -m cli._docs docs/commands.md) -->"
END = "<!-- commands:end -->"
PROG = "accelfleet"


def _cell(text: str) -> str:
    """`text` as one markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _default(param: Any, ctx: Any) -> str:
    """The default `--help` shows beside a parameter (empty when it shows none): Typer's own
    rule, so the two agree."""
    value = param._extract_default_help_str(ctx=ctx)
    as_text = isinstance(param.show_default, str)
    if not as_text and (value is None or not (param.show_default or ctx.show_default)):
        return ""
    return str(param._get_default_string(ctx=ctx, show_default_is_str=as_text,
                                         default_value=value))


def _param_row(param: Any, ctx: Any) -> str:
    if param.param_type_name == "argument":
        name = param.metavar or param.name.upper()
        value = ""
    else:
        name = ", ".join([*param.opts, *param.secondary_opts])
        value = "" if param.is_flag and param.metavar is None else (
            param.display_type_rich(ctx) or "")
    bounds = param._get_number_range_help_str()
    if bounds:
        value = f"{value} [{bounds}]".strip()
    help_text = param.help or ""
    if param.required:
        help_text = f"{help_text} (required)".strip()
    return (f"| {_code(_cell(name))} | {_code(_cell(value))} | "
            f"{_code(_cell(_default(param, ctx)))} | {_cell(help_text)} |")


def _help(cmd: Any) -> str:
    text = inspect.cleandoc(cmd.help or "")
    return text.replace("\b\n", "").replace("\b", "")


def _section(cmd: Any, words: tuple[str, ...], ctx: Any) -> list[str]:
    title = ctx.command_path
    out = [f"{'#' * min(2 + len(words), 4)} `{title}`", ""]
    usage = " ".join([title, *cmd.collect_usage_pieces(ctx)])
    out += ["```", usage, "```", ""]
    text = _help(cmd)
    if text:
        out += [text, ""]
    params = [p for p in cmd.get_params(ctx)
              if not getattr(p, "hidden", False) and p.name != "help"]
    if params:
        out += ["| argument or option | value | default | help |", "|---|---|---|---|"]
        out += [_param_row(p, ctx) for p in params]
        out.append("")
    return out


def _tree(cmd: Any, words: tuple[str, ...], parent: Any) -> list[tuple[Any, Any, tuple[str, ...]]]:
    """Every group and command under `cmd` (itself first) with its context and words, in the
    order `--help` lists them."""
    ctx = cmd.make_context(words[-1] if words else PROG, [], parent=parent,
                           resilient_parsing=True)
    out = [(cmd, ctx, words)]
    for name, sub in getattr(cmd, "commands", {}).items():
        out += _tree(sub, (*words, name), ctx)
    return out


def _summary(tree: list[tuple[Any, Any, tuple[str, ...]]]) -> list[str]:
    """One row per runnable command: its name (a link to its section) and the first paragraph
    of its help, as a group's `--help` lists it."""
    rows = ["## Commands at a glance", "", "| command | what it does |", "|---|---|"]
    for cmd, ctx, _words in tree:
        if getattr(cmd, "commands", None):
            continue
        anchor = ctx.command_path.replace(" ", "-")
        first = _help(cmd).split("\n\n")[0]
        rows.append(f"| [`{ctx.command_path}`](#{anchor}) | {_cell(first)} |")
    return [*rows, ""]


def reference() -> str:
    """The whole command tree as markdown: a summary table, then a section per group and
    command."""
    import typer

    from cli.main import app

    tree = _tree(typer.main.get_command(app), (), None)
    out = _summary(tree)
    for cmd, ctx, words in tree:
        out += _section(cmd, words, ctx)
    return "\n".join(out).rstrip() + "\n"


def render(doc: str) -> str:
    """`doc` with the text between the markers replaced by the current reference."""
    from fleet.output_files import between_markers

    return between_markers(doc, BEGIN, END, f"\n{reference()}")


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/commands.md")
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
