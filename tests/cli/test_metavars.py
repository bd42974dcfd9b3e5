"""Issue 21 item 8: one metavar style across commands. Walks every command's options and
arguments: each value has an explicit metavar in the style most commands already used, an
upper-case word (FILE, N, NAME, STACK_FILE, KEY=REF, POOL,...) or its choices in lower case
joined by `|` (text|json|markdown); no Typer defaults (`<path>`, `<int range>`), no
one-letter words but N (a count), and one option spelled one way in every command."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from typer.core import TyperArgument, TyperOption
from typer.testing import CliRunner

from cli.main import app
from tests.cli.commands import leaf_commands

WORDS = re.compile(r"[A-Z][A-Z_]*%?([=|,](\.\.\.|[A-Z][A-Z_]*%?))*")
CHOICES = re.compile(r"[a-z0-9-]+(\|[a-z0-9-]+)+")
# Where one option means two things: `plan --out` writes a file, the others a directory.
SPELLED_TWO_WAYS = {"--out": {"FILE", "DIR"}}


def _params() -> list[tuple[str, TyperOption | TyperArgument]]:
    out: list[tuple[str, TyperOption | TyperArgument]] = []

    for path, cmd in leaf_commands().items():
        for p in getattr(cmd, "params", []):
            if getattr(p, "hidden", False) or (  # a hidden argument, too: shown nowhere
                    isinstance(p, TyperOption) and (p.is_flag or p.name == "help")):
                continue
            if isinstance(p, TyperOption | TyperArgument):
                out.append((" ".join(path), p))
    return out


PARAMS = _params()


def test_the_walk_sees_every_command() -> None:
    commands = {c for c, _ in PARAMS}
    assert {"plan", "pool request", "smoke run", "smoke local", "catalog list",
            "smoke nccl-log", "advise", "queue show"} <= commands
    assert len(PARAMS) > 80


@pytest.mark.parametrize(("command", "param"), PARAMS,
                         ids=[f"{c} {(p.opts or [p.name or ''])[0]}" for c, p in PARAMS])
def test_every_value_has_a_metavar_in_the_one_style(command: str,
                                                    param: TyperOption | TyperArgument
                                                    ) -> None:
    name = (param.opts or [param.name or ""])[0]
    metavar = param.metavar
    assert metavar is not None, f"{command} {name}: no metavar (Typer would show its own)"
    assert WORDS.fullmatch(metavar) or CHOICES.fullmatch(metavar), (
        f"{command} {name}: {metavar!r} is neither an upper-case word nor lower-case choices")
    assert len(metavar) > 1 or metavar == "N", f"{command} {name}: one letter {metavar!r}"
    desc = param.type_descriptor
    choices = desc.choices if desc.is_choice else None
    if choices:
        assert metavar == "|".join(str(getattr(c, "value", c)) for c in choices), (
            f"{command} {name}: the metavar does not list its choices")


def test_one_option_is_spelled_one_way_in_every_command() -> None:
    seen: dict[str, set[str]] = defaultdict(set)
    for _, p in PARAMS:
        if isinstance(p, TyperOption) and p.metavar:
            seen[p.opts[0]].add(p.metavar)
    differ = {o: m for o, m in seen.items() if len(m) > 1 and m != SPELLED_TWO_WAYS.get(o)}
    assert not differ


def test_help_shows_the_metavars_not_typers_defaults() -> None:
    result = CliRunner().invoke(app, ["catalog", "list", "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0
    assert "gcp|aws" in result.output and "<gcp|aws>" not in result.output
    result = CliRunner().invoke(app, ["plan", "--help"], env={"COLUMNS": "160"})
    assert "STACK_FILE" in result.output and "<path>" not in result.output
