"""`accelfleet up` and `accelfleet preview`: the stack through Pulumi's Automation API, then
smoke on the pools that changed. Pulumi is imported only inside the commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli._args import STACK_RULE, StackOpt, one_stack
from cli._errors import command
from cli._terminal import echo, safe

if TYPE_CHECKING:
    from components.engine.deploy import Engine
    from smoke.session import SmokeRequest, SmokeResult

StackArg = Annotated[Path | None, typer.Argument(
    metavar="STACK_FILE",
    help=f"A `stacks/Pulumi.<stack>.yaml` file of this project {STACK_RULE}",
    show_default=False)]
PolicyOpt = Annotated[bool, typer.Option(
    "--policy-pack", help="Run accelfleet's CrossGuard pack (policies/, needs the `policy` "
    "extra) with the engine.")]
# Tests swap these: an engine that replays recorded events, a smoke run that records its request.
engine_factory: Callable[[str, list[str]], Engine] | None = None
smoke_runner: Callable[[SmokeRequest], SmokeResult] | None = None


def _engine(stack: str, packs: list[str]) -> Engine:
    from components.engine.deploy import PROJECT_DIR, AutomationEngine, require_pulumi_cli
    from fleet.stack.pulumi_workspace import find_project

    if engine_factory is not None:
        return engine_factory(stack, packs)
    require_pulumi_cli()
    from cli import _errors

    # the Pulumi engine cancels its own update on Ctrl-C and must be heard out: this process
    # is never ended at once under it
    _errors.HARD_EXIT = False
    project_file = find_project(Path.cwd())  # the project Pulumi itself would run here
    return AutomationEngine(stack=stack, policy_packs=packs,
                            work_dir=project_file.parent if project_file else PROJECT_DIR)


def _cli_ready() -> None:
    """The Pulumi CLI is there, checked before the offline plan (seconds) that `_stack`
    runs: a missing CLI is said at once."""
    if engine_factory is None:
        from components.engine.deploy import require_pulumi_cli

        require_pulumi_cli()


def _stack(stack_file: Path | None) -> tuple[Path, str, dict[str, Any]]:
    """(stack file, stack name, offline plan JSON) of a valid stack Pulumi can select."""
    import json

    from components.engine.plan import run_plan
    from fleet.errors import InputError
    from fleet.stack.choice import project_stacks_dir, shown_path, stack_to_read
    from fleet.stack.read import stack_name

    path = stack_to_read(stack_file)
    name = stack_name(path)
    expected = (project_stacks_dir() / f"Pulumi.{name}.yaml").resolve()
    if path.resolve() != expected:
        raise InputError(f"Pulumi reads stack {name!r} from {shown_path(expected)}, not "
                         f"{path}", hint="put the stack file in the stack folder of the "
                         "Pulumi project you run from (its Pulumi.yaml's stackConfigDir)")
    return path, name, json.loads(run_plan(path).to_json())  # validates first (exit 2)


def _packs(policy_pack: bool) -> list[str]:
    from components.engine.deploy import PROJECT_DIR

    return [str(PROJECT_DIR / "policies")] if policy_pack else []


def _printer(events: list[Any]) -> Callable[[Any], None]:
    def on_event(event: Any) -> None:
        events.append(event)

    return on_event


@command
def preview(stack_file: StackArg = None, stack: StackOpt = None,
            policy_pack: PolicyOpt = False) -> None:
    """Preview the stack with the Pulumi engine (Automation API; needs the Pulumi CLI and
    credentials): what `up` would create, update and replace.

    Exit 0; 1 when the engine or a policy refuses; 2 when the stack is invalid or the Pulumi CLI
    is missing (with how to install it).
    """
    stack_file = one_stack(stack_file, stack)
    from components.engine.deploy import engine_error

    _cli_ready()
    path, name, _ = _stack(stack_file)
    engine = _engine(name, _packs(policy_pack))
    try:
        counts = engine.preview(on_event=_printer([]), on_output=echo)
    except Exception as exc:
        if type(exc).__module__.startswith("pulumi.automation"):
            raise engine_error(exc) from None
        raise
    echo(f"preview of stack {name} ({path.as_posix()}): {_counts(counts)}")


def _counts(counts: dict[str, int]) -> str:
    shown = [f"{n} to {op}" for op, n in sorted(counts.items()) if op != "same" and n]
    return ", ".join(shown) or "no changes"


@command
def up(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    yes: Annotated[bool, typer.Option("--yes", help="Deploy without asking (CI).")] = False,
    smoke: Annotated[str, typer.Option(
        "--smoke", metavar="changed|all|none", help="After the update, run `smoke run` on "
        "the pools whose resources changed (default), on every pool, or on none.")
    ] = "changed",
    policy_pack: PolicyOpt = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", metavar="FILE", help="Smoke's JUnit XML.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="Keep the smoke run (report, JUnit, manifests) here.",
        show_default=False)] = None,
) -> None:
    """Deploy the stack (Automation API: preview, confirm, `up` with streamed progress), then
    prove it: `accelfleet smoke run` on the pools whose resources changed (or all).

    Exit 0 when deployed and proven; 1 when the update or smoke fails; 2 when the stack is
    invalid, the Pulumi CLI is missing (with how to install it) or no terminal can confirm
    (pass --yes); 130 when interrupted.
    """
    stack_file = one_stack(stack_file, stack)
    from cli._output import writable
    from components.engine.deploy import changed_pools, pools_to_smoke

    pools_to_smoke(smoke, set(), [])  # the choice is checked before any work
    writable(junit)
    writable(out, directory=True)
    _cli_ready()
    path, name, plan = _stack(stack_file)
    deployed = _deploy(_engine(name, _packs(policy_pack)), name, yes, path)
    if deployed is None:
        return
    outputs, events = deployed
    every = [str(p["name"]) for p in plan.get("pools") or []]
    chosen = pools_to_smoke(smoke, changed_pools(events, plan), every)
    if not chosen:
        echo("smoke: nothing to prove" + (" (--smoke none)" if smoke == "none" else
                                          " (no pool changed)"))
        return
    echo(f"smoke: {', '.join(chosen)}")
    _prove(name, path, outputs, chosen, junit=junit, out=out)
    echo(f"stack {name}: deployed and proven ({len(chosen)} pool(s))")


def _deploy(engine: Engine, name: str, yes: bool, path: Path
            ) -> tuple[dict[str, Any], list[Any]] | None:
    """Preview, confirm (unless `yes`) and update: the stack's outputs and the engine's
    events; None when the person said no."""
    import sys

    from components.engine.deploy import engine_error
    from fleet.errors import InputError

    events: list[Any] = []
    try:
        counts = engine.preview(on_event=_printer([]), on_output=echo)
        echo(f"preview of stack {name} ({path.as_posix()}): {_counts(counts)}")
        if not yes:
            if not sys.stdin.isatty():
                raise InputError("no terminal to confirm the update",
                                 hint="pass --yes to deploy without asking (CI)")
            if not typer.confirm(safe(f"deploy stack {name}?"), default=False):
                echo("not deployed")
                return None
        outputs = engine.up(on_event=_printer(events), on_output=echo)
    except Exception as exc:
        if type(exc).__module__.startswith("pulumi.automation"):
            raise engine_error(exc) from None
        raise
    return outputs, events


def _prove(name: str, path: Path, outputs: dict[str, Any], pools: list[str], *,
           junit: Path | None, out: Path | None) -> None:
    """`smoke run` on `pools`, in this process, reaching the clusters through the outputs'
    kubeconfigs (kept in memory, never written); shown as `smoke run` shows it. Exit 130 when
    interrupted; a failed check, or a smoke that could not run, fails the command (exit 1)."""
    import json

    from cli.smoke import exit_if_interrupted, show_run
    from fleet.errors import AccelfleetError, CheckFailed
    from smoke.session import SmokeRequest

    plain = json.loads(json.dumps(outputs, default=str))  # as `pulumi stack output --json`
    request = SmokeRequest(stack_file=path, outputs=plain, pools=pools, junit=junit, out=out)
    try:
        result = (smoke_runner or _smoke)(request)
    except AccelfleetError as exc:
        raise CheckFailed(f"smoke could not run on stack {name}: {exc.message}",
                          hint=exc.hint) from None
    show_run(result)
    exit_if_interrupted(result.report)
    problems = result.problems()
    if problems:
        raise CheckFailed(f"smoke failed on stack {name} ({len(problems)} problem(s)):\n  "
                          + "\n  ".join(problems[:50]),
                          hint="the smoke report above names each failing node and probe")


def _smoke(request: SmokeRequest) -> SmokeResult:
    from cli._terminal import safe_console
    from cli.smoke import LiveTable
    from smoke.session import run_smoke

    return run_smoke(request, progress=LiveTable(safe_console(stderr=True)))
