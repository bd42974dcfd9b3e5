"""`accelfleet queue`: the Kueue queues a stack's routing makes, team by team."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import _complete
from cli._args import StackArg, StackOpt, one_stack
from cli._errors import command
from cli._output import console, print_json
from cli._terminal import literal
from cli._typer import App
from fleet.words import counted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fleet.routing import ClusterRouting, QueueFlavor, TeamQueue

app = App(rich_markup_mode="markdown", no_args_is_help=True,
                  help="The Kueue queues of a stack: where each team's jobs go.")

# Devices first: they are what a flavor is chosen for.
SHOWN_FIRST = ("nvidia.com/gpu", "google.com/tpu", "vpc.amazonaws.com/efa")


def amounts(values: dict[str, str] | dict[str, int], resources: tuple[str, ...] | list[str]
            ) -> str:
    """'nvidia.com/gpu 16, cpu 416, memory 3744Gi': devices first, zeros left out."""
    from fleet.routing import quantity

    order = [r for r in SHOWN_FIRST if r in resources] + [
        r for r in resources if r not in SHOWN_FIRST]
    shown = []
    for r in order:
        v = values.get(r)
        if v in (None, 0, "0"):
            continue
        shown.append(f"{r} {quantity(r, v) if isinstance(v, int) else v}")
    return ", ".join(shown) or "nothing"


def flavor_words(q: TeamQueue, f: QueueFlavor) -> str:
    """One flavor of a queue: its quota, or what it may borrow and from whom."""
    if f.borrowing_limit is not None:
        return (f"{f.flavor} (borrowed from {f.owner} while idle, up to "
                f"{amounts(dict(f.borrowing_limit), q.resources)})")
    lent = ""
    if f.lending_limit is not None:
        lent = f"; lends at most {amounts(dict(f.lending_limit), q.resources)}"
    return f"{f.flavor} ({amounts(dict(f.nominal), q.resources)}{lent})"


QUEUED_WORDS = "; nodes by ProvisioningRequest"


def queued_words(c: ClusterRouting, q: TeamQueue, f: QueueFlavor) -> str:
    """A flavor's words; a queued pool's say that its nodes come by ProvisioningRequest (the
    queue's admission check on that flavor)."""
    words = flavor_words(q, f)
    if f.flavor in {x.name for x in c.queued}:
        return words.removesuffix(")") + QUEUED_WORDS + ")"
    return words


def queue_lines(routing: Sequence[ClusterRouting], team: str | None = None) -> list[str]:
    """A queue per line: where to submit, then its flavors in the order Kueue tries them (a
    queued pool's flavor says its nodes come by ProvisioningRequest); then, for all teams,
    the queue smoke runs use on the cluster's queued pools."""
    lines = []
    for c in routing:
        def order(q: TeamQueue, c: ClusterRouting = c) -> str:
            return " -> ".join(queued_words(c, q, f) for f in q.flavors)

        for q in c.queues:
            if team is not None and q.team != team:
                continue
            how = "routing" if q.routed else "default order"
            lines.append(f"queue {c.cluster}/{q.name} (team {q.team}, {how}; cohort "
                         f"{q.cohort}): {order(q)}")
        if c.smoke is not None and team is None:
            lines.append(f"queue {c.cluster}/{c.smoke.name} (smoke runs, namespace "
                         f"{c.smoke.namespace}; borrows in cohort {c.smoke.cohort}): "
                         f"{order(c.smoke)}")
    return lines


def _json(routing: Sequence[ClusterRouting], team: str | None) -> list[dict[str, Any]]:
    out = []
    for c in routing:
        data = c.summary()
        if team is not None:
            data["queues"] = [q for q in data["queues"] if q["team"] == team]
            if not data["queues"]:
                continue
        out.append(data)
    return out


@app.command()
@command
def show(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    team: Annotated[str | None, typer.Option(
        "--team", metavar="TEAM", show_default=False, help="Only this team's queues.",
        autocompletion=_complete.teams)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show each team's queue on each cluster, its pools in the order Kueue tries them, and
    its quota.

    For each team: the namespace and LocalQueue its jobs name (label
    `kueue.x-k8s.io/queue-name: <queue>`), its flavors (one per pool) in routing order, each
    flavor's quota (the pool at its largest: devices, vCPUs, memory) and what it may borrow
    from other teams in the cluster's cohort.

    Exit 0; 2 when the stack is invalid or names no such team.
    """
    stack_file = one_stack(stack_file, stack)
    from fleet import load_fleet
    from fleet.errors import InputError, suggest
    from fleet.stack.choice import stack_to_read

    path = stack_to_read(stack_file)
    fleet = load_fleet(str(path))
    routing = fleet.routing
    if team is not None and team not in {q.team for c in routing for q in c.queues}:
        known = sorted({q.team for c in routing for q in c.queues})
        near = suggest(team, known)
        raise InputError(f"no queue of team {team!r} in {path}"
                         + (f"; did you mean {', '.join(map(repr, near))}?" if near else ""),
                         hint=f"teams with queues: {', '.join(known) or 'none'} (a team gets "
                         "a queue where it has pools or routing)")
    if as_json:
        print_json({"stack": str(path), "clusters": _json(routing, team)})
        return
    out = console()
    shown_teams = sorted({q.team for c in routing for q in c.queues
                          if team is None or q.team == team})
    out.print(literal(f"{path.as_posix()}: the queues of {counted(len(shown_teams), 'team')} "
                      f"on {counted(len(routing), 'cluster')}"))
    for c in routing:
        queues = [q for q in c.queues if team is None or q.team == team]
        if not queues:
            continue
        out.print(f"[bold]{literal(c.cluster)}[/]: " + literal(
            f"cohort {c.cohort}, {counted(len(c.flavors), 'flavor')} (one per pool)"))
        shown = [(f"team {q.team}", q, "its routing" if q.routed
                  else "its own pools, default order") for q in queues]
        if c.smoke is not None and team is None:
            shown.append(("smoke runs", c.smoke, "the queued pools, borrowed in the cohort"))
        for who, q, how in shown:
            out.print(literal(f"  {who}: namespace {q.namespace or q.name}, LocalQueue "
                              f"{q.name} -> ClusterQueue {q.name} ({how})"))
            out.print(literal(f"    quota: {amounts(q.nominal(), q.resources)}"))
            for i, f in enumerate(q.flavors, 1):
                out.print(literal(f"    {i}. {queued_words(c, q, f)}"), soft_wrap=True)
