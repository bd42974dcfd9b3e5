"""`accelfleet pool`: teams ask for pools, resize and give them back; each a checked change of
the stack file, written in place, as a diff, or as a commit on a new branch for review.

The decisions are `fleet.requests.request` (what a request becomes, or why it is refused and
what would work); the file edits `fleet.stack.edit` (round trip, lock, atomic replace) and
`fleet.stack.git` (the branch). This module puts them into words."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import _complete
from cli._args import STACK_RULE, StackArg, one_stack
from cli._errors import command
from cli._output import console, print_json, print_table
from cli._terminal import echo
from cli._typer import App

if TYPE_CHECKING:
    from collections.abc import Callable

    from fleet.requests.request import Change
    from fleet.stack.edit import Edit

app = App(rich_markup_mode="markdown", no_args_is_help=True,
                  help="Ask for accelerator pools, resize them and give them back: each a "
                  "change of the stack file checked against every rule and budget.")

StackOpt = Annotated[Path | None, typer.Option(
    "--stack", metavar="FILE", show_default=False,
    help=f"The stack file {STACK_RULE} A write never goes to the example by default.")]
DryRun = Annotated[bool, typer.Option(
    "--dry-run", help="Show what the change does and the diff; write nothing.")]
PatchOpt = Annotated[Path | None, typer.Option(
    "--patch", metavar="FILE", show_default=False,
    help="Write the change as a unified diff to FILE (`git apply FILE`); the stack is left "
    "as it is.")]
BranchOpt = Annotated[str | None, typer.Option(
    "--branch", metavar="NAME", show_default=False,
    help="Commit the change on a new git branch NAME, made from HEAD, with a message that "
    "carries the request; the working tree and the checked-out branch are left as they are.")]
PlanOpt = Annotated[bool, typer.Option(
    "--plan", help="Also plan the stack before and after offline (Pulumi's mocks, a few "
    "seconds) and count the resources the change adds, removes and replaces.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
# What a user who writes the stack first, as other commands take it (`pool resize STACK NAME`),
# gives after NAME: caught to say how to write it, instead of Click's bare "extra argument".
ExtraArgs = Annotated[list[str] | None, typer.Argument(hidden=True, show_default=False)]


def _stack(path: Path | None) -> Path:
    """The stack to read (fleet.stack.choice): named, $ACCELFLEET_STACK / $PULUMI_STACK, the
    only stack besides the example, else the example."""
    from fleet.stack.choice import stack_to_read

    return stack_to_read(path)


def _target(path: Path | None, *, dry_run: bool, patch: Path | None, what: str) -> Path:
    """The stack a pool edit works on: a write (not --dry-run, not --patch) needs a chosen
    stack and never defaults to the example."""
    from fleet.stack.choice import stack_for_write

    if dry_run or patch is not None:
        return _stack(path)
    return stack_for_write(path, what=what)


@app.command()
@command
def request(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    team: Annotated[str, typer.Option("--team", metavar="TEAM",
                                      autocompletion=_complete.teams,
                                      help="The team that owns the "
                                      "pool and pays for it.")] = "",
    accelerator: Annotated[str, typer.Option(
        "--accelerator", metavar="ACCELERATOR", help="What to run: `h100`, `a3-highgpu-8g`, "
        "`p5.48xlarge`, `v5p-128`, `\"v6e 2x4\"` (`accelfleet catalog list`).")] = "",
    topology: Annotated[str | None, typer.Option(
        "--topology", metavar="TOPOLOGY", show_default=False,
        help="A TPU slice's topology, e.g. 2x4 or 4x4x4.")] = None,
    nodes: Annotated[int | None, typer.Option(
        "--nodes", metavar="N", show_default=False,
        help="Nodes of a GPU or CPU pool (default 1); a TPU slice's follow from its "
        "topology.")] = None,
    zone: Annotated[str | None, typer.Option(
        "--zone", metavar="ZONE", show_default=False,
        help="The zone (default: one of the cluster's region that offers the accelerator).")
    ] = None,
    capacity: Annotated[str | None, typer.Option(
        "--capacity", metavar="CAPACITY", show_default=False,
        autocompletion=_complete.capacities,
        help="on-demand (default), spot, flex-start or queued.")] = None,
    name: Annotated[str | None, typer.Option(
        "--name", metavar="NAME", show_default=False,
        help="The pool's name (default: team and accelerator, e.g. vision-v6e-2x4).")] = None,
    cluster: Annotated[str | None, typer.Option(
        "--cluster", metavar="NAME", show_default=False,
        help="The cluster (default: one of the accelerator's cloud, the team's own first).")
    ] = None,
    reason: Annotated[str | None, typer.Option(
        "--reason", metavar="TEXT", show_default=False,
        help="Why the team needs it (kept in the stack as `reason`).")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", metavar="DATE", show_default=False,
        help="The last day it is needed: YYYY-MM-DD, or 30d / 8w from today (kept as "
        "`expires`; `fleet validate` warns once it has passed).")] = None,
    requested_by: Annotated[str | None, typer.Option(
        "--requested-by", metavar="WHO", show_default=False,
        help="Who asks (default: your git user.email, else your login name).")] = None,
    dry_run: DryRun = False, patch: PatchOpt = None, branch: BranchOpt = None,
    plan: PlanOpt = False, as_json: JsonOpt = False,
) -> None:
    """Ask for a pool: the accelerator resolved with the catalog, a cluster of its cloud, a
    zone that offers it, a free DNS-safe name. The whole resulting fleet is checked (every rule,
    every team's budget) before anything is written; a refusal changes nothing and says why and
    what would work (another zone, spot, a smaller pool or slice, the team's remaining budget).

    Exit 0 with the change made (or shown, with `--dry-run`); 2 when refused or the input is
    wrong. The write keeps every comment, key order and quoting of the file, and is atomic
    under a lock: concurrent requests all land.
    """
    stack_file = one_stack(stack_file, stack)
    from datetime import date

    from fleet.catalog import load_catalog
    from fleet.errors import InputError
    from fleet.requests.request import PoolRequest, parse_until, request_pool

    if not team or not accelerator:
        raise InputError("--team and --accelerator are required",
                         hint='e.g. accelfleet pool request --team vision --accelerator "v6e 2x4"')
    today = date.today()
    req = PoolRequest(team=team, accelerator=accelerator, topology=topology, nodes=nodes,
                      zone=zone, capacity=capacity, name=name, cluster=cluster, reason=reason,
                      requested_by=requested_by or _whoami(),
                      expires=parse_until(until, today) if until else None)
    catalog = load_catalog()  # loaded before the stack's lock is taken

    def decide(raw: dict[str, Any]) -> Change:
        return request_pool(raw, req, catalog=catalog, today=today)

    words = f'accelfleet pool request --team {team} --accelerator "{accelerator}"'
    _apply(_target(stack_file, dry_run=dry_run, patch=patch, what="pool request"), decide,
           words, dry_run=dry_run, patch=patch, branch=branch,
           plan=plan, as_json=as_json)


@app.command()
@command
def resize(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The pool.",
                                        show_default=False, autocompletion=_complete.pools)],
    nodes: Annotated[int | None, typer.Option(
        "--nodes", metavar="N", show_default=False, help="New node count (GPU, CPU pools).")
    ] = None,
    topology: Annotated[str | None, typer.Option(
        "--topology", metavar="TOPOLOGY", show_default=False,
        help="New topology (TPU slices: a multi-host slice changes topology, never node "
        "count).")] = None,
    reason: Annotated[str | None, typer.Option(
        "--reason", metavar="TEXT", show_default=False,
        help="Why: required when the resize raises the pool's monthly cost (kept in the "
        "stack as the pool's `reason`).")] = None,
    stack: StackOpt = None, dry_run: DryRun = False, patch: PatchOpt = None,
    branch: BranchOpt = None, plan: PlanOpt = False, as_json: JsonOpt = False,
    extra: ExtraArgs = None,
) -> None:
    """Resize a pool: `--nodes N` for a GPU or CPU pool, `--topology X` for a TPU slice. The
    same checks and guarantees as `pool request`. Raising the pool's monthly cost needs
    `--reason TEXT`, which the stack keeps as its `reason`."""
    name = _one_name("resize", name, extra, "--nodes N")
    from fleet.catalog import load_catalog
    from fleet.requests.request import resize_pool

    catalog = load_catalog()

    def decide(raw: dict[str, Any]) -> Change:
        return resize_pool(raw, name, nodes=nodes, topology=topology, catalog=catalog,
                           reason=reason)

    size = f"--nodes {nodes}" if nodes is not None else f"--topology {topology}"
    if reason:
        size += f' --reason "{reason}"'
    _apply(_target(stack, dry_run=dry_run, patch=patch, what="pool resize"), decide,
           f"accelfleet pool resize {name} {size}", dry_run=dry_run,
           patch=patch, branch=branch, plan=plan, as_json=as_json)


@app.command()
@command
def remove(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The pool.",
                                        show_default=False, autocompletion=_complete.pools)],
    stack: StackOpt = None, dry_run: DryRun = False, patch: PatchOpt = None,
    branch: BranchOpt = None, plan: PlanOpt = False, as_json: JsonOpt = False,
    extra: ExtraArgs = None,
) -> None:
    """Give a pool back: its entry and its own heading comment leave the stack, nothing else
    does. Refused while the rest of the stack refers to it."""
    name = _one_name("remove", name, extra, "")
    from fleet.catalog import load_catalog
    from fleet.requests.request import remove_pool

    catalog = load_catalog()

    def decide(raw: dict[str, Any]) -> Change:
        return remove_pool(raw, name, catalog=catalog)

    _apply(_target(stack, dry_run=dry_run, patch=patch, what="pool remove"), decide,
           f"accelfleet pool remove {name}", dry_run=dry_run,
           patch=patch, branch=branch, plan=plan, as_json=as_json)


def _one_name(verb: str, name: str, extra: list[str] | None, size: str) -> str:
    """The pool NAME, the only positional argument of `pool resize` and `pool remove`: the
    stack goes with --stack (a pool edit never takes the stack as a positional argument)."""
    if not extra:
        return name
    from fleet.errors import InputError

    given = [name, *extra]
    stacks = [a for a in given if a.endswith((".yaml", ".yml")) or Path(a).is_file()]
    pools = [a for a in given if a not in stacks]
    example = " ".join(["accelfleet pool", verb, pools[0] if len(pools) == 1 else "NAME",
                        *([size] if size else []),
                        "--stack", stacks[0] if len(stacks) == 1 else "FILE"])
    raise InputError(f"`pool {verb}` takes one argument, the pool's NAME; it was given "
                     f"{len(given)}: {', '.join(given)}",
                     hint=f"name the stack with --stack: `{example}`")


def _whoami() -> str | None:
    import getpass

    from fleet.stack.git import user_email

    email = user_email()
    if email:
        return email
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):
        return None


def _apply(path: Path, decide: Callable[[dict[str, Any]], Change], words: str, *,
           dry_run: bool, patch: Path | None, branch: str | None, plan: bool,
           as_json: bool) -> None:
    import os

    from cli._output import writable
    from cli._pool_words import commit_message, unified_diff
    from fleet.errors import InputError
    from fleet.stack.edit import edit_stack, write_atomic

    if sum((dry_run, patch is not None, branch is not None)) > 1:
        raise InputError("--dry-run, --patch and --branch exclude one another",
                         hint="choose one: show the change, write it as a diff, or commit it "
                         "on a branch (none of them: write the stack file)")
    writable(patch)
    if patch is not None and os.path.realpath(patch) == os.path.realpath(path):
        raise InputError("--patch names the stack file itself",
                         hint="give another file for the diff, e.g. pool.patch")
    decide = _naming(path, decide)
    commit = None
    if branch is not None:
        from fleet.stack.git import commit_change

        edit, commit = commit_change(path, branch, decide,
                                     lambda e: commit_message(e, words))
    else:
        edit = edit_stack(path, decide, write=not dry_run and patch is None)
        if patch is not None and not edit.change.changes_nothing:
            target = Path(os.path.realpath(patch))
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, unified_diff(edit, _diff_name(path)))
    diff = _plan(edit) if plan and not edit.change.changes_nothing else None
    _report(edit, path, dry_run=dry_run, patch=patch, commit=commit, diff=diff,
            as_json=as_json)


def _naming(path: Path, decide: Callable[[dict[str, Any]], Change]
            ) -> Callable[[dict[str, Any]], Change]:
    """`decide`, whose refusals name the stack file they read and carry it in the commands
    they suggest (an "unknown pool" from another file than the user thought is a puzzle)."""
    from fleet.errors import InputError

    def named(raw: dict[str, Any]) -> Change:
        try:
            return decide(raw)
        except InputError as exc:
            if str(path) not in exc.message:
                exc.message = f"{path}: {exc.message}"
            listing = f"`accelfleet pool list {path}`"
            exc.message = exc.message.replace("`accelfleet pool list`", listing)
            exc.hint = exc.hint.replace("`accelfleet pool list`", listing)
            raise

    return named


def _shown(path: Path) -> str:
    """The stack's path as the user names it from here (`stacks/Pulumi.prod.yaml`,
    `../stacks/Pulumi.prod.yaml`): what a message and a diff's header say was written."""
    from fleet.stack.choice import shown_path

    return shown_path(path).as_posix()


def _diff_name(path: Path) -> str:
    """The stack's path in a diff's header: relative to here when it is under here (what
    `git apply` run here finds), else its name."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def _plan(edit: Edit) -> Any:
    """The offline plans of the stack before and after the change, diffed."""
    import tempfile

    from components.engine.diff import diff_plans
    from components.engine.plan import run_plan

    with tempfile.TemporaryDirectory(prefix="accelfleet-pool-plan-") as tmp:
        plans = []
        for which, text in (("before", edit.old_text), ("after", edit.new_text)):
            where = Path(tmp) / which / edit.path.name
            where.parent.mkdir()
            where.write_text(text, encoding="utf-8")
            plans.append(run_plan(where).to_dict())
    return diff_plans(plans[0], plans[1], base="the stack before the change")


def _report(edit: Edit, path: Path, *, dry_run: bool, patch: Path | None, commit: Any,
            diff: Any, as_json: bool) -> None:
    from cli._pool_words import change_lines, headline, plan_words, unified_diff

    change = edit.change
    if change.changes_nothing:
        if as_json:
            print_json({"stack": str(path), "changed": False, "written": False})
        else:
            echo(f"pool {change.name} already has that size: nothing to change")
        return
    summary = change.summary()
    if as_json:
        print_json({**summary, "stack": str(path), "changed": True, "written": edit.written,
                    "patch": str(patch) if patch else None,
                    "branch": commit.branch if commit else None,
                    "commit": commit.sha if commit else None,
                    "plan": diff.to_dict()["summary"] if diff is not None else None})
        return
    shown = _shown(path)
    if dry_run:
        first = f"dry run, nothing written: {headline(summary)} in {shown}"
    elif patch is not None:
        first = f"wrote the {headline(summary)} as a diff to {patch} ({shown} is unchanged; " \
            f"apply it with `git apply {patch}`)"
    elif commit is not None:
        first = (f"committed the {headline(summary)} on new branch {commit.branch} "
                 f"({commit.sha[:10]}, from {commit.base[:10]}); the working tree is unchanged")
    else:
        first = f"wrote {shown}: {headline(summary)}"
    planned = plan_words(diff) if diff is not None else (
        "not run (add --plan to plan the stack before and after offline and count the "
        "resources the change adds)")
    lines = [first, *change_lines(summary, [("plan", planned)])]
    lines += [f"  note: {n}" for n in summary["notes"]]
    if commit is not None:
        if commit.worktree_differs:
            lines.append(f"  note: your working copy of {commit.path} has changes HEAD does "
                         "not; the branch holds HEAD's version plus this change only")
        lines.append(f"  next: git push -u origin {commit.branch}, and open a pull request")
    echo("\n".join(lines))
    if dry_run:
        echo("\nthe change to the stack file:\n" + unified_diff(edit, _diff_name(path)),
             nl=False)


@app.command(name="list")
@command
def list_(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    team: Annotated[str | None, typer.Option("--team", metavar="TEAM", show_default=False,
                                             autocompletion=_complete.teams,
                                             help="Only this team's pools.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The stack's pools: team, accelerator, nodes and devices, zones, monthly cost, who asked
    for each and until when (an expired one says so)."""
    stack_file = one_stack(stack_file, stack)
    from datetime import date

    from cli._pool_words import pool_row
    from fleet import load_fleet
    from fleet.errors import UnknownNameError
    from fleet.rules.expiry import is_expired

    path = _stack(stack_file)
    fleet = load_fleet(str(path))
    teams = [t.name for t in fleet.spec.teams]
    if team is not None and team not in teams:
        raise UnknownNameError("team", team, teams, hint=f"teams: {', '.join(teams)}")
    today = date.today()
    rows = [pool_row(p, is_expired(p, today)) for p in fleet.pools
            if team is None or p.team == team]
    if as_json:
        print_json({"stack": str(path), "pools": rows})
        return
    _table(f"{path}: {len(rows)} pool{'s' if len(rows) != 1 else ''}" +
           (f" of team {team}" if team else ""), rows)


@app.command()
@command
def expired(
    stack_file: StackArg = None,
    stack: StackOpt = None,
    as_of: Annotated[str | None, typer.Option(
        "--as-of", metavar="DATE", show_default=False,
        help="List what has expired by DATE (YYYY-MM-DD; default today).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The pools past their `expires` date, with what each still costs a month, for the
    platform team to reclaim (`accelfleet pool remove NAME --stack FILE`)."""
    stack_file = one_stack(stack_file, stack)
    from datetime import date

    from cli._pool_words import pool_row
    from fleet import load_fleet
    from fleet.requests.request import parse_until
    from fleet.rules.expiry import days_expired, expired_pools
    from fleet.words import usd

    path = _stack(stack_file)
    fleet = load_fleet(str(path))
    today = parse_until(as_of, date.today()) if as_of else date.today()
    pools = expired_pools(fleet.pools, today)
    rows = [{**pool_row(p, True), "days_expired": days_expired(p, today)} for p in pools]
    total = sum(r["monthly_usd"] or 0.0 for r in rows)
    if as_json:
        print_json({"stack": str(path), "as_of": today.isoformat(), "pools": rows,
                    "monthly_usd": round(total, 2),
                    "unpriced": [r["name"] for r in rows if r["monthly_usd"] is None]})
        return
    if not rows:
        echo(f"{path}: no pool has expired (as of {today})")
        return
    _table(f"{path}: {len(rows)} expired pool{'s' if len(rows) != 1 else ''} as of {today}, "
           f"about {usd(total)} a month", rows)
    echo(f"give each back with `accelfleet pool remove NAME --stack {path}`, or move "
         "its `expires` later")


def _table(title: str, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from cli._costs import pool_usd
    from cli._terminal import literal

    table = Table(title=literal(title))
    for col in ("pool", "team", "cluster", "accelerator", "nodes", "devices", "zones",
                "capacity", "$/month", "requested by", "expires"):
        table.add_column(col, overflow="fold", justify="right" if col in (
            "nodes", "devices", "$/month") else "left")
    for r in rows:
        expires = r["expires"] or "-"
        if r["expired"]:
            days = f", {r['days_expired']} days" if "days_expired" in r else ""
            expires += f" (expired{days})"
        table.add_row(*map(literal, (
            r["name"], r["team"], r["cluster"] or "(tpu-vm)", r["accelerator"], r["nodes"],
            r["devices"], ",".join(r["zones"]), r["capacity"], pool_usd(r),
            r["requested_by"] or "-", expires)))
    from cli._compact import COMPACT_MIN_WIDTH, compact_table

    marks = [("expired " + str(r["expires"]) if "days_expired" in r else "expired")
             if r["expired"] else "" for r in rows]
    out = console()
    print_table(out, table, compact_table(title, rows, marks, out.width), COMPACT_MIN_WIDTH)
