"""`accelfleet smoke release` and `smoke status`: the nodes a run quarantined, listed and let
back into the scheduler's reach."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._args import STACK_RULE, StackOpt, one_stack
from cli._errors import command
from cli._terminal import echo
from cli.smoke_options import ContextOpt, KubeconfigOpt, OutputsOpt, StackArg

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from smoke.cluster.sources import RunSource


def _clients(stack_file: Path | None, outputs: Path | None, kubeconfig: Path | None,
             context: list[str] | None, clusters: list[str] | None = None
             ) -> tuple[RunSource, dict[str, ApiClient]]:
    from fleet.errors import InputError
    from smoke.cluster.access import connect, parse_contexts
    from smoke.cluster.sources import load_source

    source = load_source(stack_file, outputs)
    used = clusters if clusters is not None else sorted(
        {p.cluster for p in source.inventory.pools if p.cluster})
    if not used:
        raise InputError("the stack has no Kubernetes cluster with pools",
                         hint="quarantine applies to pools on GKE or EKS clusters")
    contexts = {c: ctx for c, ctx in parse_contexts(context or []).items() if c in used}
    return source, connect([source.clusters[c] for c in used], kubeconfig=kubeconfig,
                           contexts=contexts, outputs_kubeconfigs=source.kubeconfigs)


@command
def release(
    nodes: Annotated[list[str] | None, typer.Argument(
        metavar="NODE", help="The nodes to release (looked up in every cluster of the "
        "stack; a TPU host brings back its whole slice).", show_default=False)] = None,
    pool: Annotated[str | None, typer.Option(
        "--pool", metavar="POOL", help="Release every quarantined node of this pool.",
        show_default=False)] = None,
    stack: Annotated[Path | None, typer.Option(
        "--stack", metavar="FILE", help="The stack file whose clusters to reach; none "
        f"with --outputs alone {STACK_RULE}", show_default=False)] = None,
    outputs: OutputsOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")]
        = False,
) -> None:
    """Undo what `smoke run --quarantine` did to these nodes, and nothing else: uncordon only
    a node it cordoned, remove its taint, label and annotations, restore what they replaced,
    and record an Event. A node cordoned by somebody else stays cordoned.

    Exit 0 when every node is released (or was not quarantined by accelfleet); 2 for bad
    input (no node or pool named, an unknown node) or a change the cluster refused.
    """
    from cli._output import print_json
    from fleet.errors import InputError, SetupError, UnknownNameError
    from smoke.cluster.release import release as undo

    if bool(nodes) == (pool is not None):
        raise InputError("name the nodes to release, or one --pool, not both and not neither",
                         hint="e.g. `accelfleet smoke release gke-ml-h100-7f3a`, or "
                         "`accelfleet smoke release --pool h100-train`")
    source, clients = _clients(stack, outputs, kubeconfig, context)
    if pool is not None:
        names = [p.name for p in source.inventory.pools]
        if pool not in names:
            raise UnknownNameError("pool", pool, names, hint=f"pools: {', '.join(names)}")
        cluster = source.inventory.pool(pool).cluster
        clients = {c: cl for c, cl in clients.items() if c == cluster}
    report = undo(clients, nodes=nodes or (), pool=pool)
    if as_json:
        print_json(report.to_dict())
    elif not report.actions:
        echo(f"no quarantined node in pool {pool}" if pool else "nothing to release")
    for line in [] if as_json else report.lines():
        echo(line)
    errors = report.of("error")
    if errors:
        raise SetupError(f"{len(errors)} node(s) not released:\n  "
                         + "\n  ".join(a.line() for a in errors),
                         hint="fix the access named above and run the release again: it "
                         "only undoes what is still there")


@command
def status(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    outputs: OutputsOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the nodes as JSON.")] = False,
) -> None:
    """List the nodes quarantined by `smoke run --quarantine` in every cluster of the stack,
    oldest first: pool, why (probe, figure, threshold), which run, and for how long.

    Exit 0 (whether or not nodes are quarantined); 2 for bad input or a cluster that cannot
    be reached.
    """
    stack_file = one_stack(stack_file, stack)
    from rich.markup import escape
    from rich.table import Table

    from cli._output import console, print_json, print_table
    from smoke.cluster.release import age, quarantined

    source, clients = _clients(stack_file, outputs, kubeconfig, context)
    read = f"read {source.read(outputs)}"
    rows = quarantined(clients)
    if as_json:
        print_json([r.to_dict() for r in rows])
        echo(read, err=True)
        return
    out = console()
    if not rows:
        out.print(escape(f"no quarantined node in cluster(s) {', '.join(sorted(clients))} "
                         f"({read})"))
        return
    t = Table(title=f"{len(rows)} node(s) quarantined by accelfleet smoke")
    for col in ("cluster", "pool", "node", "age", "probe", "figure", "threshold", "run",
                "reason"):
        t.add_column(col, overflow="fold")
    for r in rows:
        host = r.get("host")
        node = r.node + (f"\n(slice of {host})" if host and r.node not in host.split(",")
                         else "")
        reason = escape(r.get("reason")) + (f"\n[yellow]{escape(r.notes)}[/yellow]"
                                            if r.notes else "")
        t.add_row(*map(escape, (r.cluster, r.get("pool"), node, age(r.age_s),
                                f"{r.get('device')} {r.get('probe')}", r.get("figure"),
                                r.get("threshold"), r.get("run"))), reason)
    print_table(out, t)
    out.print(escape(read))
    out.print("release with `accelfleet smoke release NODE...` or `--pool POOL`")
