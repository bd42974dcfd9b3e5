"""`accelfleet gate`: every node of a gated pool proven before it takes work (docs/gate.md).

The controller (`smoke.gate`) is imported inside each command only.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    from smoke.gate.session import GateRequest, GateStatus

app = App(rich_markup_mode="markdown",
          help="The gate: new and repaired nodes of gated pools stay tainted until their "
          "proof passes (run the controller, see every node's state, open or close a pool's "
          "gate by hand).", no_args_is_help=True)

InventoryOpt = Annotated[Path | None, typer.Option(
    "--inventory", metavar="FILE", help="A saved inventory (JSON, `pulumi stack "
    "output inventory --json > FILE`): the pools and their gates, instead of the stack's.",
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
        "--timeout-s", min=1, metavar="SECONDS", help="One proof's deadline (default 600; at "
        "most 780: it must end inside the cluster-autoscaler's 15-minute startup window, "
        "docs/gate.md).", show_default=False)] = None,
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
    image_pull_secret: Annotated[list[str] | None, typer.Option(
        "--image-pull-secret", metavar="NAME", help="A Secret (kubernetes.io/dockerconfigjson, "
        "in the proofs' namespace) every proof pod pulls its images with; repeat for more. "
        "The deployed controller gets the stack's `gate.image_pull_secrets` here.",
        show_default=False)] = None,
) -> None:
    """Run the gate controller: watch the nodes of every gated pool and prove each one that
    turns Ready (pinned to it, judged as `smoke run` judges), then lift its gate taint, or
    keep it, say why on the node and quarantine within the pool's cap. Leader election on a
    Lease: of several replicas, one acts.

    With --once: exit 0 only when every gated node present at the start got its verdict
    and passed; 1 when any failed, was held with its failed slice or unit, or never became
    Ready within the deadline; 2 for bad input, a cluster that cannot be reached, or an API
    that failed the run (the node list never answered, the controller stopped); 130 on ctrl-C.
    Without: runs until SIGTERM or ctrl-C (130).
    """
    from smoke.gate.recording import history_choice
    from smoke.gate.session import run_gate

    pull_secrets = _pull_secrets(image_pull_secret)
    stack_file = one_stack(stack_file, stack)
    read = ""
    if not in_cluster:  # in the cluster, the inventory (--inventory) is all it reads
        stack_file, read = _chosen(stack_file, outputs, inventory)
    request = _request(stack_file, outputs, inventory, kubeconfig, context, cluster,
                       namespace, in_cluster=in_cluster, once=once, timeout_s=timeout_s,
                       health_port=health_port, metrics_port=metrics_port, history=history,
                       record_history=not no_history, lease_s=lease_s,
                       image_pull_secrets=pull_secrets)
    note = history_choice(in_cluster, history, not no_history)[1]
    if note:  # once, at the start (the controller's log)
        echo(note, err=True)
    with _signals() as signals:
        summaries = run_gate(request, signals.stop)
    _show(summaries)
    if read:
        echo(read)
    if signals.interrupted:
        raise KeyboardInterrupt  # said "interrupted", exit 130 (cli._errors)
    if once:
        _once_verdict(summaries)


def _show(summaries: list[GateSummary]) -> None:
    for s in summaries:
        for r in sorted(s.results.values(), key=lambda r: (r.pool, r.node)):
            word = {"pass": "PASS", "fail": "FAIL", "infra": "RETRY", "gone": "GONE",
                    "waiting": "WAITING", "unit": "HELD",
                    "malformed": "SKIPPED"}.get(r.verdict, r.verdict.upper())
            run_id = f" ({r.run_id})" if r.run_id else ""
            echo(f"{word} {s.cluster}/{r.pool} {r.node}{run_id}"
                       + ("" if r.verdict == "pass" else f": {r.reason}"))
        for e in [*s.errors, *s.api_problems]:
            echo(f"ERROR {s.cluster}: {e}", err=True)
        if not s.results:
            echo(f"{s.cluster}: no gated node to prove")


class _signals:
    """SIGINT and SIGTERM set the stop event while inside (the previous handlers after);
    `interrupted`: a SIGINT (ctrl-C) came."""

    def __enter__(self) -> _signals:
        import signal

        self.stop = threading.Event()
        self.interrupted = False
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._on)
        return self

    def _on(self, signum: int, frame: object) -> None:
        import signal

        self.interrupted = self.interrupted or signum == signal.SIGINT
        self.stop.set()

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _pull_secrets(names: list[str] | None) -> tuple[str, ...]:
    from fleet.spec.fields import SpecValueError, secret_names

    try:
        return tuple(secret_names(list(names or [])))
    except SpecValueError as exc:
        from fleet.errors import InputError

        raise InputError(f"--image-pull-secret: {exc}", hint=exc.fix) from None


def _once_verdict(summaries: list[GateSummary]) -> None:
    """`gate run --once`'s exit: 2 when the API failed the run, 1 when a gated node was not
    proven, else 0."""
    problems = [f"{s.cluster}: {p}" for s in summaries for p in s.api_problems]
    if problems and not all(s.ok for s in summaries):
        from fleet.errors import SetupError

        raise SetupError("the gate could not finish: the Kubernetes API failed it:"
                         + "".join(f"\n  {p}" for p in problems[:10]),
                         hint="check the cluster's API server (`kubectl get --raw /readyz`) "
                         "and the controller's permissions, then run again")
    if not all(s.ok for s in summaries):
        from fleet.errors import CheckFailed

        bad = [f"{s.cluster}/{r.node}" for s in summaries for r in s.results.values()
               if not s.ok and r.verdict != "pass"]
        errors = [e for s in summaries for e in s.errors]
        raise CheckFailed(f"{len(bad)} gated node(s) not proven"
                          + (f": {', '.join(bad[:20])}" if bad else "")
                          + ("".join(f"\n  {e}" for e in errors[:10])),
                          hint="each node's reason is above; `accelfleet gate status` shows "
                          "every gated node's state")


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

    Exit 0 when every cluster's controller renewed its Lease within the lease's duration; 1
    when one did not (none renewed in time, or its renewTime is ahead of this clock: clock
    skew, never taken as alive); 2 for bad input or a cluster that cannot be reached.
    """
    from rich.markup import escape

    from cli._output import console, print_json
    from smoke.gate.session import gate_status

    stack_file, read = _chosen(one_stack(stack_file, stack), outputs, inventory)
    result = gate_status(_request(stack_file, outputs, inventory, kubeconfig, context,
                                  cluster, namespace))
    if as_json:
        print_json(result.to_dict())
        echo(read, err=True)
        _down(result)
        return
    out = console()
    _show_status(out, result)
    out.print(escape(read))
    _down(result)


def _show_status(out: Any, result: GateStatus) -> None:
    """`gate status`'s words: each controller, the skipped objects, the open pools, then the
    table of nodes."""
    from rich.markup import escape
    from rich.table import Table

    from cli._output import print_table
    from fleet.words import duration

    for c in result.controllers:
        out.print(f"cluster {escape(c.cluster)}: controller " + (
            f"up ({escape(c.holder)}, renewed {c.renewed})" if c.up else
            f"[red]DOWN[/red]: {escape(c.problem or 'no live Lease')}; new nodes stay gated "
            "until it runs"))
    for line in result.skipped:
        out.print(f"[yellow]skipped[/yellow] {escape(line)}")
    for cluster, pool, record in result.open_pools:
        out.print(f"cluster {escape(cluster)}: pool {escape(pool)} is [yellow]OPEN[/yellow] "
                  f"(by {escape(str(record.get('by', '?')))} at "
                  f"{escape(str(record.get('at', '?')))}: "
                  f"{escape(str(record.get('reason', '')))}); its new nodes are opened by "
                  "the controller while it runs")
    t = Table(title=f"{len(result.nodes)} node(s) of gated pools")
    for col in ("cluster", "team", "pool", "node", "state", "age", "since", "reason"):
        t.add_column(col, overflow="fold")
    for r in result.nodes:
        state = r.state + (" (quarantined)" if r.quarantined else "")
        t.add_row(*map(escape, (r.cluster, r.team, r.pool, r.node, state,
                                "" if r.age_s is None else duration(r.age_s), r.since,
                                r.reason)))
    print_table(out, t)


def _down(result: GateStatus) -> None:
    """Exit 1 when a cluster's controller is not up (the gate fails closed: said, not 0)."""
    from fleet.errors import CheckFailed

    down = [c for c in result.controllers if not c.up]
    if down:
        raise CheckFailed(f"no gate controller renewed its Lease in time on "
                          f"{', '.join(c.cluster for c in down)}: "
                          + "; ".join(f"{c.cluster}: {c.problem or 'no live Lease'}"
                                      for c in down),
                          hint="new nodes stay gated until it runs: check the Deployment "
                          "`accelfleet-gate` (`kubectl -n <namespace> get pods`)")


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
    """Lift the gate of POOL by hand: the pool is recorded open (who, when, why) in the
    gate's ConfigMap `accelfleet-gate-pools`, every node of the pool loses the gate taint
    (and a failed proof's cordon) with the record on it (an Event too), and the controller
    opens the nodes that join later, until `gate close`. While no controller runs, nodes
    that join stay gated: run `gate open` again.

    Exit 0; 2 for bad input (an unknown pool, no reason) or a cluster that cannot be reached.
    """
    from smoke.gate.session import open_pool

    changed = open_pool(_request(stack_file, outputs, inventory, kubeconfig, context, None,
                                 None), pool, reason=reason, by=_who())
    for c in changed:
        echo(f"{c.what.upper()} {pool} {c.node}" if c.node else f"warning: pool {pool}: {c.what}")
    if not [c for c in changed if c.node]:
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
    """Restore the gate of POOL: the open record goes; a node opened while proven is proven
    again, every other node gets the gate taint back and a fresh proof (a node that had
    failed too).

    Exit 0; 2 for bad input or a cluster that cannot be reached.
    """
    from smoke.gate.session import close_pool

    changed = close_pool(_request(stack_file, outputs, inventory, kubeconfig, context, None,
                                  None), pool, by=_who())
    for c in changed:
        echo(f"{c.what.upper()} {pool} {c.node}" if c.node else f"warning: pool {pool}: {c.what}")
