"""`accelfleet fleet`: check and describe the fleet a stack file declares."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli._args import StackArg, StackOpt, one_stack
from cli._errors import command
from cli._output import console, print_json, print_table
from cli._typer import App

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fleet.errors import Problem, SpecError
    from fleet.model import Fleet, ResolvedPool

app = App(rich_markup_mode="markdown",
                  help="Validate and describe a stack's fleet.", no_args_is_help=True)

def _row(p: ResolvedPool) -> dict[str, Any]:
    tflops = p.shape.accelerator.bf16_tflops
    return {
        **p.summary(),
        "accelerator": p.shape.accelerator.name, "devices": p.devices,
        "zones": list(p.spec.zones), "region": p.region, "placement": p.placement,
        "bf16_tflops_total": tflops * p.devices if tflops and p.devices else None,
    }


def _warned(row: dict[str, Any], warnings: Sequence[Problem]) -> str:
    """`!` for a pool that a warning names (`pools 'NAME'`, `[NAME]`, `pool NAME`), else
    empty."""
    keys = [f"'{row['name']}'", f"[{row['name']}]", f"pool {row['name']}"]
    return "!" if any(k in w.where or k in w.message for w in warnings for k in keys) else ""


def _invalid(path: str, exc: SpecError) -> dict[str, Any]:
    """An invalid stack as `--json` reports it: every problem (pool, field, value, accepted,
    fix), and the team totals of the pools that could be resolved (none when the spec did
    not parse)."""
    partial = exc.partial
    teams = [t.summary() for t in partial.team_costs()] if partial is not None else None
    return {"stack": path, "valid": False, "problems": list(exc.records),
            "teams": teams, "teams_note": None if partial is not None else
            "the stack did not parse far enough to cost its pools",
            "warnings": [w.render() for w in partial.warnings] if partial is not None else []}


def stack_path(stack_file: Path | None) -> Path:
    from fleet.stack.choice import stack_to_read

    return stack_to_read(stack_file)


@app.command()
@command
def validate(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check a stack's fleet against the catalog and the rules; print its pools.

    Exit 0 when valid, 2 with every problem named (pool, field, value, fix) when not. Each
    cluster's system pool is listed with its cost, paid by the platform. Costs are monthly
    ranges, from the fewest to the most nodes a pool can have (budgets check the most), at list
    prices or the stack's own `prices:`; a pool with no price says "unpriced".
    """
    stack_file = one_stack(stack_file, stack)
    from fleet import load_fleet

    path = stack_path(stack_file)
    fleet = _load_as_json(path) if as_json else load_fleet(str(path))
    user = [_row(p) for p in fleet.pools]
    system = [_row(p) for p in fleet.system_pools]
    if as_json:
        print_json(_document(str(path), fleet, user, system))
    else:
        _show(str(path), fleet, user, system)


def _load_as_json(path: Path) -> Fleet:
    """The fleet; an invalid stack or an unreadable file is printed as the `--json` document
    (every problem named), then exits 2."""
    from cli._errors import exit_code, report
    from fleet import load_fleet
    from fleet.errors import InputError, SpecError

    try:
        return load_fleet(str(path))
    except SpecError as exc:
        print_json(_invalid(str(path), exc))
        raise typer.Exit(exit_code(exc)) from None
    except InputError as exc:  # the file itself: missing, not YAML, over a bound
        print_json({"stack": str(path), "valid": False, "teams": None,
                    "teams_note": "the stack file could not be read", "warnings": [],
                    "problems": [{"where": "file", "section": None, "name": None,
                                  "pool": None, "field": None, "value": None,
                                  "message": exc.message, "accepted": [],
                                  "fix": exc.hint}]})
        raise typer.Exit(report(exc)) from None


def _document(path: str, fleet: Fleet, user: list[dict[str, Any]],
              system: list[dict[str, Any]]) -> dict[str, Any]:
    """A valid stack as `--json` reports it."""
    from fleet.model import PLATFORM_TEAM

    platform_usd, _ = fleet.team_monthly_usd(PLATFORM_TEAM)
    return {"stack": path, "valid": True, "pools": user, "system_pools": system,
            "platform_monthly_usd": round(platform_usd, 2),
            "control_planes": [c.summary() for c in fleet.control_planes],
            "teams": list({t.name: t.summary() for t in fleet.team_costs()}.values()),
            "warnings": [w.render() for w in fleet.warnings]}


def _show(path: str, fleet: Fleet, user: list[dict[str, Any]],
          system: list[dict[str, Any]]) -> None:
    """The pools' table, each team's costs, the control planes, what the platform pays, and
    every warning."""
    from rich.table import Table

    from cli._compact import COMPACT_MIN_WIDTH, compact_table
    from cli._costs import control_plane_words, platform_pays, pool_usd, price_source, team_words
    from cli._gate_words import gate_lines
    from cli._terminal import literal
    from fleet.model import PLATFORM_TEAM
    from fleet.words import counted

    rows = user + system
    teams = {t.name: t.summary() for t in fleet.team_costs()}
    title = (f"{path}: {counted(len(user), 'pool')} and "
             f"{counted(len(system), 'system pool')}, valid")
    table = Table(title=literal(title))
    for col in ("pool", "team", "cluster", "machine", "accelerator", "topology", "nodes",
                "devices", "zones", "capacity", "fabric", "$/month", "price"):
        table.add_column(col, overflow="fold",
                         justify="right" if col in ("nodes", "devices", "$/month")
                         else "left")
    for r in rows:
        table.add_row(*map(literal, (
            r["name"], r["team"], r["cluster"] or "(tpu-vm)", r["machine_type"],
            r["accelerator"], r["topology"] or "-", r["nodes"], r["devices"],
            ",".join(r["zones"]) or "(at deploy)", r["capacity"],
            r["gpu_networking"] or "-", pool_usd(r),
            price_source(r, r["region"], provenance=True))))
    marks = [_warned(r, fleet.warnings) for r in rows]
    out = console()
    print_table(out, table, compact_table(title, rows, marks, out.width), COMPACT_MIN_WIDTH)
    for line in gate_lines(fleet.pools):  # each pool's gate (docs/gate.md)
        out.print(literal(line))
    for team in fleet.spec.teams:
        out.print(literal(f"team {team.name}: {team_words(teams[team.name])}"))
    for plane in fleet.control_planes:
        out.print(literal(control_plane_words(plane.summary())))
    if (system or fleet.control_planes) and PLATFORM_TEAM not in {t.name for t in
                                                                  fleet.spec.teams}:
        what = platform_pays(bool(system), bool(fleet.control_planes))
        out.print(literal(f"platform ({what}): {team_words(teams[PLATFORM_TEAM])}"))
    for w in fleet.warnings:
        out.print(literal(f"warning: {w.render()}"))
