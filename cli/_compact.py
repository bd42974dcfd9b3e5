"""The compact pool table of `fleet validate` and `pool list` for laptop terminals (120 to
~200 columns): one row per pool with the essential columns, long cells folded. The full table
is shown where it fits; below `COMPACT_MIN_WIDTH` the key/value blocks of `print_table`;
`--json` always carries every value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cli._costs import pool_usd, price_source

if TYPE_CHECKING:
    from rich.table import Table

COMPACT_MIN_WIDTH = 120  # below this, one key/value block per pool: nothing is folded away


def zones_short(zones: list[str]) -> str:
    """`us-central1-a,b` for zones of one region that differ in their last letter only (GCP
    `us-central1-a`, AWS `us-east-1a`); else each zone, comma-separated (a line may break
    after a comma)."""
    if not zones:
        return "(at deploy)"
    head = zones[0][:-1]
    if len(zones) > 1 and all(len(z) == len(zones[0]) and z[:-1] == head for z in zones):
        return head + ",".join(z[-1] for z in zones)
    return ", ".join(zones)


def machine_short(row: dict[str, Any]) -> str:
    """The machine type and, for a TPU slice, its topology: `ct5p-hightpu-4t 4x4x4`."""
    topo = row.get("topology")
    return f"{row['machine_type']} {topo}" if topo else str(row["machine_type"])


def nodes_by_devices(row: dict[str, Any]) -> str:
    """`nodes x devices per node`, as a multiplication reads: 2 nodes of 8 GPUs are `2 x 8`
    (16 devices), never `2 x 16`."""
    nodes, devices = int(row["nodes"]), int(row["devices"])
    return f"{nodes} x {devices // nodes}" if nodes else "0"


def compact_table(title: str, rows: list[dict[str, Any]], marks: list[str],
                  width: int | None = None) -> Table:
    """One row per pool: pool, cluster, team, machine, nodes x devices per node, zones, capacity,
    $/month, price (with its month, and its region where that is not the pool's); a pool's
    mark (`!`: a warning names it; `expired`) follows its name.

    A machine type and a zone are never cut mid-word and a price never wraps (issue 38:
    `list (us-east-1, 2026-06)` wrapped at 120 columns); a long capacity folds instead. When
    the prices that name another region do not fit `width`, each shows its month and a mark,
    and a note under the table names the region and the pools."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from cli._costs import foreign_price

    cols = ["pool", "cluster", "team", "machine", "nodes x dev", "zones", "capacity",
            "$/month", "price"]
    machines = [machine_short(r) for r in rows]
    zones = [zones_short(r["zones"]) for r in rows]
    names = [f"{r['name']} {marks[i]}".strip() for i, r in enumerate(rows)]
    prices = [price_source(r, r.get("region"), provenance=True) for r in rows]
    cells = [[names[i], r["cluster"] or "(tpu-vm)", r["team"], machines[i],
              nodes_by_devices(r), zones[i], r["capacity"], pool_usd(r), prices[i]]
             for i, r in enumerate(rows)]
    caption = None
    tight = width is not None and _natural(cols, cells) > width
    short_zones = max((len(z) for z in zones), default=0) <= 16  # `us-central1-a,b`: whole
    if tight:  # a slice's topology under its machine type: the type is never cut
        for i, machine in enumerate(machines):
            cells[i][3] = machine.replace(" ", "\n", 1)
        away: dict[str, list[str]] = {}
        for i, r in enumerate(rows):
            where = foreign_price(r, r.get("region")).split(",")[0]
            if where:
                away.setdefault(where, []).append(names[i] if r["name"] != "system"
                                                  else f"system ({r['cluster']})")
                cells[i][-1] = price_source(r, where, provenance=True) + " *"
        if away:
            caption = "* priced in " + "; ".join(
                f"{where}, not the pool's region: {', '.join(pools)}"
                for where, pools in away.items())
    word = max((len(w) for m in machines for w in m.split()), default=0)
    widths = {"machine": min(word, 20),
              "price": min(max((len(c[-1]) for c in cells), default=0), 32)}
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, show_edge=False,
                  collapse_padding=True, title_justify="left",
                  caption=escape(caption) if caption else None, caption_justify="left")
    for col in cols:
        table.add_column(col, overflow="fold",
                         no_wrap=col in ("nodes x dev", "$/month", "price") or (
                             tight and (col == "machine" or (col == "zones" and short_zones))),
                         min_width=widths.get(col),
                         justify="right" if col in ("nodes x dev", "$/month") else "left")
    for row in cells:
        table.add_row(*(escape(str(c)) for c in row))
    return table


def _natural(cols: list[str], cells: list[list[str]]) -> int:
    """The width the table takes unwrapped: each column's widest cell or header, the two
    spaces between columns, and its edges."""
    widest = [max([len(c)] + [len(str(row[i])) for row in cells]) for i, c in enumerate(cols)]
    return sum(widest) + 2 * (len(cols) - 1) + 2
