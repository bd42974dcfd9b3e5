"""`accelfleet plan`: the offline plan of a stack, from the same program `pulumi up` runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli import _complete
from cli._args import StackArg, StackOpt, one_stack
from cli._errors import command
from cli._terminal import echo, echo_json

if TYPE_CHECKING:
    from components.engine.plan import Plan


@command
def plan(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Deterministic JSON (for CI diffs).")
                       ] = False,
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE",
                                             help="Write the plan to FILE instead.",
                                             show_default=False)] = None,
    diff: Annotated[Path | None, typer.Option(
        "--diff", metavar="BASE", show_default=False,
        help="Show what changed against BASE, a saved `plan --json` file: resources added, "
        "removed and changed, replacements that destroy nodes, cost per pool and team.")] = None,
    base_ref: Annotated[str | None, typer.Option(
        "--base-ref", metavar="REF", show_default=False,
        help="Diff against the same stack file at git REF (e.g. origin/main), planned the "
        "same way.")] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", metavar="text|json|markdown", show_default=False,
        autocompletion=_complete.formats,
        help="Output format (default text); markdown is a pull-request comment.")] = None,
    policies: Annotated[bool, typer.Option(
        "--policies", help="Check the plan against accelfleet's policies (policies/rules.py): "
        "one line per violation, exit 1 when any.")] = False,
) -> None:
    """Run the stack's Pulumi program offline (Pulumi's mocks: no CLI, no credentials) and
    show every resource it would create, grouped by cluster and pool, with each pool's and
    team's monthly cost range (list prices, or the stack's `prices:`).

    Exit 0 with the plan (or the diff); 1 when `--policies` finds a violation; 2 when the
    stack file, the base plan or the git ref is missing or invalid; 3 on an internal error.
    """
    stack_file = one_stack(stack_file, stack)
    from cli._output import writable
    from cli.plan_diff import output_format, report
    from components.engine.plan import run_plan
    from fleet.errors import InputError
    from fleet.output_files import save
    from fleet.stack.choice import stack_to_read

    style = output_format(fmt, as_json)
    path = stack_to_read(stack_file)
    writable(out, reads=(("the stack file", path), ("the base plan", diff)))  # before any work
    try:
        if diff is not None or base_ref is not None or policies:
            report(path, diff=diff, base_ref=base_ref, fmt=style,
                   policies=policies, out=out)
            return
        result = run_plan(path)
    except InputError as exc:
        if style == "markdown":  # the PR comment says why there is no plan
            from cli.plan_diff import invalid_markdown

            text = invalid_markdown(path, exc)
            if out is None or save(out, text):
                echo(text, nl=False)
        raise
    _emit(result, style, out, path)


def _emit(result: Plan, style: str, out: Path | None, source: Path | None = None) -> None:
    """The plan in its format, printed or written to `out`."""
    from cli._output import terminal_width
    from fleet.errors import InputError
    from fleet.output_files import save

    width = terminal_width() if style == "text" and out is None else None
    text = result.to_json() if style == "json" else render(result, width, source)
    if style == "markdown":
        from cli.plan_diff import fenced

        text = "\n".join(fenced(text, "text")) + "\n"
    if out is not None:
        problem = save(out, text)
        if problem:
            raise InputError(problem, hint="choose another --out path")
        echo(f"wrote the plan of stack {result.stack} to {out} "
             f"({len([r for r in result.resources if r.custom])} resources)")
        return
    (echo_json if style == "json" else echo)(text, nl=False)


def render(result: Plan, width: int | None = None, source: Path | None = None) -> str:
    """The plan as a tree for people: components, then resource counts by type; its title
    names the stack file read (`source`). With `width` (a terminal's), long lines wrap
    between words to fit it; without, lines are never wrapped (a file, a PR comment, a
    pipe)."""
    from collections import Counter

    from rich.tree import Tree

    from cli._costs import (
        UNPRICED,
        control_plane_words,
        foreign_price,
        platform_pays,
        pool_usd,
        price_source,
        team_words,
    )
    from cli._gate_words import gate_lines
    from cli._terminal import literal, safe_console
    from cli.queue import queue_lines
    from fleet.model import PLATFORM_TEAM
    from fleet.words import usd_span

    data = result.to_dict()
    pools = {}
    for p in data["pools"]:
        comp = result.pool_component(p["name"])
        if comp is not None:
            pools[comp.urn] = p
    for p in data["system_pools"]:
        comp = result.system_pool_component(p["cluster"])
        if comp is not None:
            pools[comp.urn] = p
    regions = {(q.cluster.name if q.cluster else None, q.name): q.region
               for q in (*result.fleet.pools, *result.fleet.system_pools)}
    custom = [r for r in result.resources if r.custom]
    read = literal(f" ({source.as_posix()})") if source is not None else ""
    tree = Tree(f"stack [bold]{literal(result.stack)}[/]{read}: {len(custom)} resources")

    def label(urn: str, name: str, type_: str) -> str:
        count = sum(1 for d in result.descendants(urn) if d.custom)
        plural = "s" if count != 1 else ""
        text = f"[bold]{literal(name)}[/] " + literal(
            f"({type_.split(':')[-1]}, {count} resource{plural})")
        p = pools.get(urn)
        if p is not None:
            topo = f" {p['topology']}" if p["topology"] else ""
            usd = pool_usd(p)
            away = foreign_price(p, regions.get((p["cluster"], p["name"])))
            cost = (f", {UNPRICED}" if usd == UNPRICED
                    else f", {usd_span(p['min_monthly_usd'], p['max_monthly_usd'], estimate=True)}"
                    f"/month ({price_source(p)}"
                    f"{', ' + away if away else ''})")
            text += literal(f": {p['machine_type']}{topo} x{p['nodes']} nodes, {p['capacity']}"
                            f"{', ' + p['gpu_networking'] if p['gpu_networking'] else ''}{cost}")
        return text

    def add(node: Tree, parent: str | None) -> None:
        kids = result.children(parent)
        for kid in kids:
            if not kid.custom:
                add(node.add(label(kid.urn, kid.name, kid.type)), kid.urn)
        leaves = Counter(_short(k.type) for k in kids if k.custom)
        for type_, n in sorted(leaves.items()):
            node.add(literal(f"{n} x {type_}"))

    add(tree, None)
    console = safe_console(record=True, width=width or 160, highlight=False,
                           soft_wrap=width is None, force_terminal=False, color_system=None)
    with console.capture() as cap:
        console.print(tree)
        for line in gate_lines(result.fleet.pools):  # each pool's gate (docs/gate.md)
            console.print(literal(line))
        for c in data["control_planes"]:
            console.print(literal(control_plane_words(c)))
        for t in data["teams"]:
            paid = (f" ({platform_pays(bool(data['system_pools']), bool(data['control_planes']))})"
                    if t["name"] == PLATFORM_TEAM else "")
            console.print(literal(f"team {t['name']}{paid}: {team_words(t)}"))
        for line in queue_lines(result.fleet.routing):  # Kueue, flavors in order
            console.print(literal(line))
        for w in data["warnings"]:
            console.print(literal(f"warning: {w}"))
    return cap.get()


def _short(type_: str) -> str:
    """`gcp:container/nodePool:NodePool` -> `gcp NodePool`."""
    parts = type_.split(":")
    return f"{parts[0]} {parts[-1]}"
