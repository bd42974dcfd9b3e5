"""`accelfleet gate`: every node of a gated pool proven before it takes work (docs/gate.md).

The controller (`smoke.gate`) is imported inside each command only.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._args import STACK_RULE, StackOpt, one_stack
from cli._errors import command
from cli._terminal import echo
from cli._typer import App
from cli.smoke_options import (
    ContextOpt,
    HistoryOpt,
    KubeconfigOpt,
    NoHistoryOpt,
    OutputsOpt,
    StackArg,
)

if TYPE_CHECKING:
    from smoke.gate.controller import GateSummary
    from smoke.gate.session import GateRequest

app = App(rich_markup_mode="markdown",
          help="The gate: new and repaired nodes of gated pools stay tainted until their "
          "proof passes (run the controller, see every node's state, open or close a pool's "
          "gate by hand).", no_args_is_help=True)

InventoryOpt = Annotated[Path | None, typer.Option(
    "--inventory", metavar="FILE", help="A saved inventory (JSON, `accelfleet plan "
    "--inventory FILE`): the pools and their gates, instead of the stack's.",
    show_default=False)]
ClusterOpt = Annotated[str | None, typer.Option(
    "--cluster", metavar="NAME", help="Only this cluster of the inventory (with "
    "--in-cluster: the cluster the controller runs in).", show_default=False)]
NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", metavar="NS", help="Where proofs run and the controller's Lease lives "
    "(default: the stack's smoke namespace).", show_default=False)]


def _chosen(stack_file: Path | None, outputs: Path | None, inventory: Path | None
            ) -> tuple[Path | None, str]:
    """The stack file to read (by the one rule when none is named and no outputs or
    inventory stand in for it: docs/stack.md) and what is read, in words."""
    if stack_file is None and outputs is None and inventory is None:
        from fleet.stack.choice import stack_to_read

        stack_file = stack_to_read(None)
    parts = [f"{what}{p.as_posix()}" for what, p in (("", stack_file), ("outputs ", outputs),
                                                     ("inventory ", inventory))
             if p is not None]
    return stack_file, "read " + " and ".join(parts)


def _request(stack_file: Path | None, outputs: Path | None, inventory: Path | None,
             kubeconfig: Path | None, context: list[str] | None, cluster: str | None,
             namespace: str | None, **more: object) -> GateRequest:
    from smoke.cluster.access import parse_contexts
    from smoke.gate.session import GateRequest

    return GateRequest(stack_file=stack_file, outputs=outputs, inventory=inventory,
                       kubeconfig=kubeconfig, contexts=parse_contexts(context or []),
                       cluster=cluster, namespace=namespace, **more)  # type: ignore[arg-type]


def _who() -> str:
    return f"{os.environ.get('USER') or 'unknown'}@{socket.gethostname()}"


@app.command()
@command
def run(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    outputs: OutputsOpt = None,
    inventory: InventoryOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    in_cluster: Annotated[bool, typer.Option(
        "--in-cluster", help="Run inside the cluster, as its ServiceAccount (needs "
        "--inventory and --cluster).")] = False,
    cluster: ClusterOpt = None,
    namespace: NamespaceOpt = None,
    once: Annotated[bool, typer.Option(
        "--once", help="Prove every gated node present now, then exit.")] = False,
    timeout_s: Annotated[int | None, typer.Option(
        "--timeout-s", min=1, metavar="SECONDS", help="One proof's deadline (default: the "
        "stack's smoke.timeout_s).", show_default=False)] = None,
    health_port: Annotated[int | None, typer.Option(
        "--health-port", min=1, max=65535, metavar="PORT", help="Serve /healthz and /readyz "
        "here.", show_default=False)] = None,
    metrics_port: Annotated[int | None, typer.Option(
        "--metrics-port", min=1, max=65535, metavar="PORT", help="Serve OpenMetrics "
        "/metrics here.", show_default=False)] = None,
    lease_s: Annotated[float, typer.Option(
        "--lease-s", min=1.0, max=300.0, metavar="SECONDS", help="The leader Lease's "
        "duration: a standby takes over this long after the leader stops renewing.")] = 15.0,
    history: HistoryOpt = None,
    no_history: NoHistoryOpt = False,
) -> None:
    """Run the gate controller: watch the nodes of every gated pool and prove each one that
    turns Ready (pinned to it, judged as `smoke run` judges), then lift its gate taint, or
    keep it, say why on the node and quarantine within the pool's cap. Leader election on a
    Lease: of several replicas, one acts.

    With --once: exit 0 when every gated node present at the start passed, 1 when any failed
    (or never became Ready within the deadline); 2 for bad input or a cluster that cannot be
    reached. Without: runs until SIGTERM or ctrl-C.
    """
    from smoke.gate.session import run_gate

    stack_file = one_stack(stack_file, stack)
    read = ""
    if not in_cluster:  # in the cluster, the inventory (--inventory) is all it reads
        stack_file, read = _chosen(stack_file, outputs, inventory)
    request = _request(stack_file, outputs, inventory, kubeconfig, context, cluster,
                       namespace, in_cluster=in_cluster, once=once, timeout_s=timeout_s,
                       health_port=health_port, metrics_port=metrics_port, history=history,
                       record_history=not no_history, lease_s=lease_s)
    with _signals() as stop:
        summaries = run_gate(request, stop)
    _show(summaries)
    if read:
        echo(read)
    if once and not all(s.ok for s in summaries):
        from fleet.errors import CheckFailed

        bad = [f"{s.cluster}/{r.node}" for s in summaries for r in s.results.values()
               if not s.ok and r.verdict != "pass"]
        errors = [e for s in summaries for e in s.errors]
        raise CheckFailed(f"{len(bad)} gated node(s) not proven"
                          + (f": {', '.join(bad[:20])}" if bad else "")
                          + ("".join(f"\n  {e}" for e in errors[:10])),
                          hint="each node's reason is above; `accelfleet gate status` shows "
                          "every gated node's state")


def _show(summaries: list[GateSummary]) -> None:
    for s in summaries:
        for r in sorted(s.results.values(), key=lambda r: (r.pool, r.node)):
            word = {"pass": "PASS", "fail": "FAIL", "infra": "RETRY", "gone": "GONE",
                    "waiting": "WAITING"}.get(r.verdict, r.verdict.upper())
            run_id = f" ({r.run_id})" if r.run_id else ""
            echo(f"{word} {s.cluster}/{r.pool} {r.node}{run_id}"
                       + ("" if r.verdict == "pass" else f": {r.reason}"))
        for e in s.errors:
            echo(f"ERROR {s.cluster}: {e}", err=True)
        if not s.results:
            echo(f"{s.cluster}: no gated node to prove")


class _signals:
    """SIGINT and SIGTERM set the stop event while inside (the previous handlers after)."""

    def __enter__(self) -> threading.Event:
        import signal

        self.stop = threading.Event()
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, lambda *_: self.stop.set())
        return self.stop

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


@app.command()
@command
def status(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    outputs: OutputsOpt = None,
    inventory: InventoryOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    cluster: ClusterOpt = None,
    namespace: NamespaceOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the nodes as JSON.")] = False,
) -> None:
    """Every node of every gated pool, per cluster, team and pool: its gate state (unproven,
    proving, proven at T, failed and why, open), whether it is quarantined, and its age; and
    whether each cluster's controller is up (a live Lease). With no controller up, new nodes
    stay gated (the gate fails closed).

    Exit 0; 2 for bad input or a cluster that cannot be reached.
    """
    from cli._output import console, print_json, print_table
    from smoke.gate.session import gate_status

    stack_file, read = _chosen(one_stack(stack_file, stack), outputs, inventory)
    result = gate_status(_request(stack_file, outputs, inventory, kubeconfig, context,
                                  cluster, namespace))
    if as_json:
        print_json(result.to_dict())
        echo(read, err=True)
        return
    from rich.markup import escape
    from rich.table import Table

    from fleet.words import duration

    out = console()
    for c in result.controllers:
        out.print(f"cluster {escape(c.cluster)}: controller " + (
            f"up ({escape(c.holder)}, renewed {c.renewed})" if c.up else
            "[red]DOWN[/red]: no live Lease; new nodes stay gated until it runs"))
    t = Table(title=f"{len(result.nodes)} node(s) of gated pools")
    for col in ("cluster", "team", "pool", "node", "state", "age", "since", "reason"):
        t.add_column(col, overflow="fold")
    for r in result.nodes:
        state = r.state + (" (quarantined)" if r.quarantined else "")
        t.add_row(*map(escape, (r.cluster, r.team, r.pool, r.node, state,
                                "" if r.age_s is None else duration(r.age_s), r.since,
                                r.reason)))
    print_table(out, t)
    out.print(escape(read))


@app.command("open")
@command
def open_pool_gate(
    pool: Annotated[str, typer.Argument(metavar="POOL", help="The pool whose gate to open.",
                                        show_default=False)],
    reason: Annotated[str, typer.Option(
        "--reason", metavar="TEXT", help="Why (recorded on every node of the pool).",
        show_default=False)],
    stack_file: Annotated[Path | None, typer.Option(
        "--stack", metavar="FILE", help="The stack file; none with --outputs or "
        f"--inventory alone {STACK_RULE}", show_default=False)] = None,
    outputs: OutputsOpt = None,
    inventory: InventoryOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Lift the gate of POOL by hand: every node of the pool loses the gate taint and
    records who opened it, when and why (an Event too); the controller leaves them alone
    until `gate close`.

    Exit 0; 2 for bad input (an unknown pool, no reason) or a cluster that cannot be reached.
    """
    from smoke.gate.session import open_pool

    changed = open_pool(_request(stack_file, outputs, inventory, kubeconfig, context, None,
                                 None), pool, reason=reason, by=_who())
    for c in changed:
        echo(f"{c.what.upper()} {pool} {c.node}")
    if not changed:
        echo(f"pool {pool} has no node now; nothing to open")


@app.command()
@command
def close(
    pool: Annotated[str, typer.Argument(metavar="POOL", help="The pool whose gate to close.",
                                        show_default=False)],
    stack_file: Annotated[Path | None, typer.Option(
        "--stack", metavar="FILE", help="The stack file; none with --outputs or "
        f"--inventory alone {STACK_RULE}", show_default=False)] = None,
    outputs: OutputsOpt = None,
    inventory: InventoryOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Restore the gate of POOL: the open record goes, and every node without a passed proof
    gets the gate taint back (the controller proves it).

    Exit 0; 2 for bad input or a cluster that cannot be reached.
    """
    from smoke.gate.session import close_pool

    changed = close_pool(_request(stack_file, outputs, inventory, kubeconfig, context, None,
                                  None), pool, by=_who())
    for c in changed:
        echo(f"{c.what.upper()} {pool} {c.node}")
