"""`accelfleet plan --diff / --base-ref / --policies`: where the base plan comes from (a saved
plan JSON, or the same stack file at a git ref, planned the same way) and how a diff and policy
violations read as text, JSON and a pull-request comment (markdown)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the base plan: a saved plan JSON or the stack file at a git ref (cli/_plan_base.py)
from cli._plan_base import MAX_PLAN_BYTES as MAX_PLAN_BYTES
from cli._plan_base import PLAN_HINT as PLAN_HINT
from cli._plan_base import load_plan_json as load_plan_json
from cli._plan_base import plan_at_ref as plan_at_ref
from cli._terminal import echo, echo_json
from fleet.words import usd

if TYPE_CHECKING:
    from components.engine.diff import CostDelta, PlanDiff, ResourceChange
    from components.engine.plan import Plan
    from fleet.errors import InputError
    from policies.rules import Violation

MARKER = "<!-- accelfleet-plan -->"  # finds the sticky PR comment to update
MAX_VALUE = 60  # characters of a value shown in a table cell or line
MAX_LINES = 200  # field lines in the folded details of a PR comment (GitHub caps at 65,536 B)


# --- rendering ------------------------------------------------------------------------------

def _value(value: Any) -> str:
    """A value on one line: a string as it is unless it holds a line break or another
    control character (then JSON-quoted, `\\n` shown), anything else as JSON."""
    plain = isinstance(value, str) and value.isprintable()
    text = value if plain else json.dumps(value, sort_keys=True)
    text = "(none)" if value is None else text
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"


def _nodes(value: int | None) -> str:
    return "–" if value is None else str(value)


def _usd(value: float | None, *, sign: bool = False) -> str:
    return usd(value, sign=sign)


def _before(row: CostDelta) -> str:
    """A row's old cost: "new" for what the change adds (never "unpriced")."""
    return "new" if row.status == "added" else _usd(row.old_usd)


def _after(row: CostDelta) -> str:
    return "gone" if row.status == "removed" else _usd(row.new_usd)


def pool_status(diff: PlanDiff, row: CostDelta) -> str:
    """added | removed | replaced | rolled | resized | changed | same, for a pool's row
    (rolled: kept, but every node replaced by a new one)."""
    if row.status in ("added", "removed"):
        return row.status
    mine = [r for r in diff.resources if r.pool == row.name]
    if any(r.replaced for r in mine):
        return "replaced"
    if any(r.rolls_nodes for r in mine):
        return "rolled"
    if row.nodes[0] != row.nodes[1]:
        return "resized"
    return "changed" if mine or row.status == "changed" else "same"


def _count(nodes: int | None) -> str:
    return "its nodes" if nodes is None else f"its {nodes} node{'s' if nodes != 1 else ''}"


def _gate_words(gated: bool) -> str:
    return ("the gate proves each new node again before it takes work" if gated
            else "ungated: new nodes take work unproven")


def _their_nodes(diff: PlanDiff, pool: str | None, how: str) -> str:
    """What a change does to a pool's nodes, counted from the plans' pool rows, and whether
    the gate proves the new ones: `destroy` (removed), `replace` (destroyed and created
    anew), `roll` (each replaced by a new node, the pool kept)."""
    before, after, gated = diff.nodes_of(pool)
    if how == "destroy":
        return f"{_count(before)} are destroyed"
    if how == "replace":
        made = "" if after in (None, before) else f", {after} created"
        return (f"{_count(before)} are destroyed{made or ' and recreated'}; "
                f"{_gate_words(gated)}")
    return (f"{_count(after if after is not None else before)} are each replaced by a new "
            f"node; {_gate_words(gated)}")


def _replacement_lines(diff: PlanDiff) -> list[str]:
    out = []
    for r in diff.replacements:
        why = ", ".join(f"{f.path} {_value(f.old)} -> {_value(f.new)}"
                        for f in r.fields if f.replaces)
        if r.destroys_nodes:
            what = f"{r.pool_kind or r.type.rsplit(':', 1)[-1]} {r.pool or r.name}"
            out.append(f"REPLACES {what} ({_their_nodes(diff, r.pool, 'replace')}): {why}")
        else:
            owner = f" of pool {r.pool}" if r.pool else ""
            out.append(f"REPLACES {r.type.rsplit(':', 1)[-1]} {r.name}{owner} (deleted and "
                       f"created anew): {why}")
    for r in diff.destroyed_pools:
        out.append(f"DESTROYS {r.pool_kind or 'pool'} {r.pool or r.name} ({r.key}; "
                   f"{_their_nodes(diff, r.pool, 'destroy')})")
    for roll in diff.node_rolls:
        policy = f"; upgrade policy: {roll.policy}" if roll.policy else ""
        out.append(f"ROLLS {roll.pool_kind or 'pool'} {roll.pool} "
                   f"({_their_nodes(diff, roll.pool, 'roll')}{policy}): "
                   f"{'; '.join(roll.changes)}")
    return out


def render_text(diff: PlanDiff) -> str:
    replaced = len(diff.node_replacements) + len(diff.destroyed_pools)
    others = len(diff.replacements) - len(diff.node_replacements)
    rolls = len(diff.node_rolls)
    lines = [f"plan diff of stack {diff.stack} against {diff.base}: "
             f"+{len(diff.of('add'))} to add, ~{len(diff.of('change'))} to change, "
             f"-{len(diff.of('remove'))} to remove"
             + (f", {replaced} replacement{'s' if replaced != 1 else ''} destroying nodes"
                if replaced else "")
             + (f", {rolls} pool{'s' if rolls != 1 else ''} rolling every node"
                if rolls else "")
             + (f", {others} other replacement{'s' if others != 1 else ''}" if others else "")
             + f"; monthly cost {_usd(diff.cost_delta_usd, sign=True)}"]
    lines += _replacement_lines(diff)
    pools = [(p, pool_status(diff, p)) for p in diff.pools]
    if any(s != "same" for _, s in pools):
        lines.append("pools:")
        for p, status in pools:
            if status != "same":
                lines.append(f"  {p.name} ({p.team}): {status}, nodes "
                             f"{_nodes(p.nodes[0])} -> {_nodes(p.nodes[1])}, "
                             f"{_before(p)} -> {_after(p)}/month "
                             f"({_usd(p.delta_usd, sign=True)})")
    teams = [t for t in diff.teams if t.status != "same"]
    if teams:
        lines.append("teams:")
        for t in teams:
            budget = f", budget {_usd(t.budget_usd)}" if t.budget_usd is not None else ""
            lines.append(f"  {t.name}: {_before(t)} -> {_after(t)}/month "
                         f"({_usd(t.delta_usd, sign=True)}){budget}")
    if diff.resources:
        lines.append("resources:")
    for r in diff.resources:
        lines += _resource_lines(r, indent="  ")
    if diff.empty:
        lines.append("no changes")
    return "\n".join(lines) + "\n"


def _resource_lines(r: ResourceChange, *, indent: str, code: str = "") -> list[str]:
    mark = {"add": "+", "remove": "-", "change": "~"}[r.action]
    if r.replaced:
        mark = "+-"
    owner = f" (pool {r.pool})" if r.pool else ""
    out = [f"{indent}{mark} {code}{r.key}{code}{owner}"]
    for f in r.fields:
        flag = "  [forces replacement]" if f.replaces else ""
        if f.ignored is not None:
            flag = (f"  [ignored: ignore_changes {f.ignored.path}, set by the component; "
                    "pulumi up keeps the deployed value]")
        for path, old, new in _elements(f.path, f.old, f.new):
            out.append(f"{indent}    {code}{path}{code}: {code}{_value(old)}{code} -> "
                       f"{code}{_value(new)}{code}{flag}")
            flag = ""
    return out


def _json_document(value: Any) -> Any:
    """A text field that holds a JSON object or list (a ConfigMap's `inventory.json`), parsed;
    None for anything else."""
    import json

    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        doc = json.loads(value)
    except ValueError:
        return None
    return doc if isinstance(doc, dict | list) else None


def _elements(path: str, old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """A list change element by element (an appended Kueue flavor shows as the element it
    is, not as a cut-off whole list); a text field holding JSON (the gate's ConfigMap
    `inventory.json`) by the keys that changed inside it, `path{pools[0].gate.max_tier}`
    (issue 38: it showed as one cut-off JSON string); anything else as it is."""
    from components.engine.diff import diff_values

    old_doc, new_doc = _json_document(old), _json_document(new)
    if old_doc is not None and new_doc is not None:
        inner = (_elements("", old_doc, new_doc) if isinstance(old_doc, list)
                 else diff_values(old_doc, new_doc))
        if inner and all(p for p, _, _ in inner):
            return [(f"{path}{{{p.lstrip('.')}}}", o, n) for p, o, n in inner]
    if not (isinstance(old, list) and isinstance(new, list)):
        return [(path, old, new)]
    out: list[tuple[str, Any, Any]] = []
    for i in range(max(len(old), len(new))):
        o = old[i] if i < len(old) else None
        n = new[i] if i < len(new) else None
        if o != n:
            out += diff_values(o, n, f"{path}[{i}]") if isinstance(o, dict) and \
                isinstance(n, dict) else [(f"{path}[{i}]", o, n)]
    return out or [(path, old, new)]


def _md(text: str) -> str:
    """Text for a markdown line or table cell: one line, no table or HTML break-out, no
    inline code span closed early."""
    text = "".join(c if c.isprintable() else " " for c in text)
    return text.replace("|", "\\|").replace("<", "&lt;").replace("`", "'")


def fenced(body: str, info: str = "") -> list[str]:
    """`body` as a markdown code block whose fence is longer than any run of backticks in it
    (CommonMark: a fence closes only on a run at least as long), so no value in it can
    close the block early and write markdown of its own into the comment."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body.splitlines(), fence]


def render_markdown(diff: PlanDiff, violations: list[Violation] | None = None) -> str:
    """A PR comment a reviewer reads in ten seconds: the verdict line, replacements, the cost
    per pool and team; every resource and field folded in <details>."""
    add, change, remove = len(diff.of("add")), len(diff.of("change")), len(diff.of("remove"))
    out = [MARKER, f"### accelfleet plan: stack `{_md(diff.stack)}` vs `{_md(diff.base)}`", ""]
    replaced = diff.node_replacements + diff.destroyed_pools
    others = len(diff.replacements) - len(diff.node_replacements)
    head = (f"**{add} to add, {change} to change, {remove} to remove** · monthly cost "
            f"**{_usd(diff.cost_delta_usd, sign=True)}**")
    if replaced:
        many = len(replaced) > 1
        head += (f" · :warning: **{len(replaced)} replacement{'s' if many else ''} "
                 f"destroy{'' if many else 's'} nodes**")
    if others:
        head += f" · {others} other replacement{'s' if others != 1 else ''}"
    if diff.node_rolls:
        many = len(diff.node_rolls) > 1
        head += (f" · :warning: **{len(diff.node_rolls)} pool{'s' if many else ''} "
                 f"roll{'' if many else 's'} every node**")
    if violations:
        head += f" · :x: **{len(violations)} policy violation(s)**"
    elif violations is not None:
        head += " · policies pass"
    out += [head if not diff.empty else "**No changes.**", ""]
    for line in _replacement_lines(diff):
        out.append(f"> :warning: {_md(line).replace(' -> ', ' → ')}")
    if replaced or others or diff.node_rolls:
        out.append("")
    pools = [(p, pool_status(diff, p)) for p in diff.pools]
    changed = [(p, s) for p, s in pools if s != "same"]
    if changed:
        out += ["| pool | team | change | nodes | $/month | delta |", "|---|---|---|--:|--:|--:|"]
        for p, status in changed:
            shown = f"**{status}**" if status in ("replaced", "rolled", "removed") else status
            out.append(f"| `{_md(p.name)}` | {_md(p.team or '-')} | {shown} | "
                       f"{_nodes(p.nodes[0])} → {_nodes(p.nodes[1])} | "
                       f"{_usd(p.new_usd if p.status != 'removed' else 0)} | "
                       f"{_usd(p.delta_usd, sign=True)} |")
        out.append("")
    teams = [t for t in diff.teams if t.status != "same"]
    if teams:
        out += ["| team | before | after | delta | budget |", "|---|--:|--:|--:|--:|"]
        for t in teams:
            over = (" :x:" if t.budget_usd is not None and t.new_usd is not None
                    and t.new_usd > t.budget_usd else "")
            out.append(f"| {_md(t.name)} | {_usd(t.old_usd)} | {_usd(t.new_usd)} | "
                       f"{_usd(t.delta_usd, sign=True)} | "
                       f"{_usd(t.budget_usd) if t.budget_usd is not None else '-'}{over} |")
        out.append("")
    if violations:
        out += ["<details open><summary>Policy violations</summary>", ""]
        out += [f"- {_md(v.render())}" for v in violations]
        out += ["", "</details>", ""]
    if diff.resources:
        lines: list[str] = []
        for r in diff.resources:
            lines += _resource_lines(r, indent="")
        if len(lines) > MAX_LINES:
            lines = [*lines[:MAX_LINES], f"... {len(lines) - MAX_LINES} more lines: see the "
                     "uploaded plan JSON or `accelfleet plan --diff --format text`"]
        out += [f"<details><summary>Resource changes ({len(diff.resources)})</summary>", "",
                *fenced("\n".join(lines), "diff"), "", "</details>", ""]
    out.append("<sub>Offline plan (Pulumi mocks) of the stack program; replacement-forcing "
               "inputs from the providers' source (ForceNew fields, pulumi-kubernetes' "
               "immutable fields: components/engine/data/replacements.yaml) and the "
               "components' ignore_changes / replace_on_changes; costs at list prices or "
               "the stack's rates.</sub>")
    return "\n".join(out) + "\n"


def render_violations_text(violations: list[Violation], *, stack: str) -> str:
    from policies.rules import POLICIES

    if not violations:
        return (f"policies: stack {stack} passes all {len(POLICIES)} policies "
                f"({', '.join(p.name for p in POLICIES)})\n")
    lines = [f"policy violation: {v.render()}" for v in violations]
    return "\n".join(lines) + "\n"


# --- the command's diff and policy path -----------------------------------------------------

FORMATS = ("text", "json", "markdown")


def output_format(fmt: str | None, as_json: bool) -> str:
    """`--format` (default text), with `--json` as the old spelling of `--format json`."""
    from fleet.errors import InputError, suggest

    if fmt is not None and fmt not in FORMATS:
        near = suggest(fmt, FORMATS)
        raise InputError(f"unknown --format {fmt!r} (accepted: {', '.join(FORMATS)})",
                         hint=f"did you mean {near[0]!r}?" if near else "use text, json or "
                         "markdown")
    if as_json and fmt not in (None, "json"):
        raise InputError(f"--json and --format {fmt} disagree", hint="give one of them")
    return "json" if as_json else fmt or "text"


def _plan_text(result: Plan, out: Path | None, source: Path | None = None) -> str:
    """The plan itself, as `accelfleet plan` prints it, before what the policies say of it
    (`plan --policies` with no base to diff against)."""
    from cli._output import terminal_width
    from cli.plan import render

    text = render(result, terminal_width() if out is None else None, source)
    return text if text.endswith("\n") else text + "\n"


def report(stack_file: Path, *, diff: Path | None, base_ref: str | None, fmt: str,
           policies: bool, out: Path | None) -> None:
    """Plan the stack; diff it against the base and/or check its policies; print or save the
    result in `fmt`. Raises CheckFailed (exit 1) after printing when a policy is broken."""

    from components.engine.diff import diff_plans
    from components.engine.plan import run_plan
    from fleet.errors import CheckFailed, InputError
    from fleet.output_files import save
    from fleet.stack.git import stack_text_at_ref

    if diff is not None and base_ref is not None:
        raise InputError("--diff and --base-ref both name a base", hint="give one of them")
    base: dict[str, Any] | None = None
    label = ""
    if diff is not None:  # checked before the (slower) plan
        base, label = load_plan_json(diff), str(diff)
    if base_ref is not None:  # the ref too: a typo fails in milliseconds, not after a plan
        stack_text_at_ref(stack_file, base_ref)
    result = run_plan(stack_file)
    plan = json.loads(result.to_json())
    if base_ref is not None:
        base, label = plan_at_ref(stack_file, base_ref), base_ref
    found: list[Violation] | None = None
    if policies:
        from policies.rules import check_plan

        found = check_plan(plan)
    changes = diff_plans(base, plan, base=label) if base is not None else None
    if fmt == "json":
        doc: dict[str, Any] = changes.to_dict() if changes else {"stack": plan.get("stack")}
        if found is not None:
            from policies.rules import POLICIES

            doc["policies"] = [p.name for p in POLICIES]
            doc["violations"] = [v.to_dict() for v in found]
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    elif fmt == "markdown":
        text = render_markdown(changes, found) if changes else _policies_markdown(
            found or [], stack=str(plan.get("stack")))
    else:
        text = render_text(changes) if changes else _plan_text(result, out, stack_file)
        if found is not None:
            text += render_violations_text(found, stack=str(plan.get("stack")))
    if out is not None:
        problem = save(out, text)
        if problem:
            raise InputError(problem, hint="choose another --out path")
        echo(f"wrote the {'diff' if changes else 'policy report'} of stack "
             f"{plan.get('stack')} to {out}")
    else:
        (echo_json if fmt == "json" else echo)(text, nl=False)
    if found:
        raise CheckFailed(f"{len(found)} policy violation(s) in stack {plan.get('stack')}",
                          hint="fix the resources named above (each line names the policy); "
                          "docs/plan.md lists the policies")


def invalid_markdown(stack_file: Path, exc: InputError) -> str:
    """The PR comment of a stack that does not plan: each problem (field, what is wrong, the
    fix), so that the comment says what to change instead of staying empty."""
    from fleet.errors import SpecError
    from fleet.stack.read import stack_name

    stack = stack_name(stack_file)
    if isinstance(exc, SpecError):
        items = [f"- `{_md(p.where)}`: {_md(p.message)}" + (f" — fix: {_md(p.hint)}"
                                                            if p.hint else "")
                 for p in exc.problems[:MAX_LINES]]
        if len(exc.problems) > MAX_LINES:
            items.append(f"- ... and {len(exc.problems) - MAX_LINES} more: run `accelfleet "
                         f"fleet validate {_md(str(stack_file))}`")
        count = len(exc.problems)
    else:
        items = [f"- {_md(exc.message)}" + (f" — fix: {_md(exc.hint)}" if exc.hint else "")]
        count = 1
    return "\n".join([MARKER, f"### accelfleet plan: stack `{_md(stack)}` is invalid", "",
                      f":x: **{count} problem{'s' if count != 1 else ''}: no plan, no diff, "
                      "no policy check until they are fixed**", "", *items, ""]) + "\n"


def _policies_markdown(violations: list[Violation], *, stack: str) -> str:
    from policies.rules import POLICIES

    if not violations:
        return f"{MARKER}\n**accelfleet policies:** stack `{_md(stack)}` passes all " \
               f"{len(POLICIES)} policies.\n"
    lines = [MARKER, f"**accelfleet policies:** stack `{_md(stack)}` has "
             f":x: {len(violations)} violation(s)", ""]
    return "\n".join([*lines, *[f"- {_md(v.render())}" for v in violations]]) + "\n"
