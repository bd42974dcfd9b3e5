"""`accelfleet pool` in words: what a change does, the commit message that carries a request,
the offline plan's verdict on it, and the rows of `pool list` and `pool expired`."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from fleet.words import usd as usd
from fleet.words import usd_span

if TYPE_CHECKING:
    from components.engine.diff import PlanDiff
    from fleet.model import ResolvedPool
    from fleet.stack.edit import Edit

TITLES = {"add": "new pool", "resize": "resize of pool", "remove": "removal of pool"}


def headline(summary: dict[str, Any]) -> str:
    pool = summary["pool"]
    return f"{TITLES[summary['action']]} {pool['name']} (team {pool['team']})"


def change_lines(summary: dict[str, Any], extra: list[tuple[str, str]] | None = None
                 ) -> list[str]:
    """The facts of a change, one `label  value` line each (`extra` rows last)."""
    pool, team, prev = summary["pool"], summary["team"], summary["previous"]
    rows: list[tuple[str, str]] = [("accelerator", pool["accelerator"])]
    where = f"cluster {pool['cluster']}" if pool["cluster"] else "Cloud TPU VMs"
    rows.append(("where", f"{where}, zone{'s' if len(pool['zones']) > 1 else ''} "
                 f"{', '.join(pool['zones'])}"))
    nodes = f"{pool['nodes']} node{'s' if pool['nodes'] != 1 else ''}, {pool['devices']} " \
        f"device{'s' if pool['devices'] != 1 else ''}"
    if prev is not None:
        topo = f"{prev['topology']} -> {pool['topology']}: " if prev["topology"] else ""
        nodes = f"{topo}{prev['nodes']} -> {nodes} (was {prev['devices']} devices)"
    if summary["action"] == "remove":
        nodes = f"gives back {nodes}"
    rows += [("nodes", nodes), ("capacity", pool["capacity"])]
    cost = usd_span(pool["min_monthly_usd"], pool["max_monthly_usd"])
    cost = cost if cost == "unpriced" else f"{cost} a month"
    price = pool.get("price") or {}
    if price.get("source") not in (None, "unpriced"):
        cost += f" ({price['source']} price" + (f", {price['region']}" if price.get("region")
                                                 else "") + (
            f", as of {price['as_of']}" if price.get("as_of") else "") + ")"
    if prev is not None:
        cost = f"{usd(prev['max_monthly_usd'])} -> {cost}"
    rows.append(("cost", cost))
    rows.append((f"team {team['name']}", team_words(team)))
    if pool.get("requested_by") or pool.get("reason") or pool.get("expires"):
        asked = " ".join(x for x in (
            f"by {pool['requested_by']}" if pool.get("requested_by") else "",
            f"until {pool['expires']}" if pool.get("expires") else "") if x)
        reason = pool.get("reason")
        rows.append(("requested", f"{asked}: {reason}" if asked and reason else
                     asked or str(reason)))
    rows += extra or []
    width = max(len(label) for label, _ in rows)
    return [f"  {label:<{width}}  {value}" for label, value in rows]


def team_words(team: dict[str, Any]) -> str:
    before, after = team["max_monthly_usd_before"], team["max_monthly_usd_after"]
    text = f"up to {usd(after)} a month after the change (before: {usd(before)})"
    if team["monthly_budget_usd"] is not None:
        left = team["left_after_usd"]
        text += f"; {usd(left)} left of its {usd(team['monthly_budget_usd'])} budget"
    else:
        text += "; no budget"
    if team["unpriced"]:
        text += f"; unpriced, not counted: {', '.join(team['unpriced'])}"
    return text


def plan_words(diff: PlanDiff) -> str:
    from collections import Counter

    added = Counter(r.type.rsplit(":", 1)[-1] for r in diff.of("add"))
    removed = Counter(r.type.rsplit(":", 1)[-1] for r in diff.of("remove"))
    parts = [f"+{sum(added.values())} resources" + (
        f" ({', '.join(f'{n} {t}' for t, n in sorted(added.items()))})" if added else "")]
    if removed:
        kinds = ", ".join(f"{n} {t}" for t, n in sorted(removed.items()))
        parts.append(f"-{sum(removed.values())} ({kinds})")
    changed = diff.of("change")
    if changed:
        parts.append(f"~{len(changed)} changed ({len(diff.replacements)} replaced)")
    return ", ".join(parts)


def unified_diff(edit: Edit, name: str) -> str:
    return "".join(difflib.unified_diff(edit.old_text.splitlines(keepends=True),
                                        edit.new_text.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def commit_message(edit: Edit, command: str) -> str:
    """The commit that carries a request: what, for whom, why, until when, what it costs."""
    summary = edit.change.summary()
    pool, team = summary["pool"], summary["team"]
    subject = {"add": f"pool: request {pool['name']} for team {pool['team']}",
               "resize": f"pool: resize {pool['name']} (team {pool['team']})",
               "remove": f"pool: remove {pool['name']} (team {pool['team']})"}[summary["action"]]
    body = [line.strip() for line in change_lines(summary)]
    if pool.get("reason"):
        body.insert(0, f"Reason: {pool['reason']}\n")
    body += ["", f"Made with `{command}`: the whole fleet was checked against every rule and "
             f"every team's budget (team {team['name']}: {team_words(team)})."]
    return subject + "\n\n" + "\n".join(body) + "\n"


def pool_row(p: ResolvedPool, expired: bool) -> dict[str, Any]:
    shape = p.shape
    short = f"{shape.tpu.key} {shape.topology_str}" if shape.tpu else shape.machine_type
    return {**p.summary(), "accelerator": short, "shape": shape.describe(),
            "devices": p.devices,
            "zones": list(p.spec.zones), "region": p.region, "requested_by": p.spec.requested_by,
            "reason": p.spec.reason,
            "expires": p.spec.expires.isoformat() if p.spec.expires else None,
            "expired": expired}
