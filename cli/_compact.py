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
        return "(account's, at deploy)"
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


def compact_table(title: str, rows: list[dict[str, Any]], marks: list[str]) -> Table:
    """One row per pool: pool, cluster, team, machine, nodes x devices per node, zones, capacity,
    $/month, price (with its month, and its region where that is not the pool's); a pool's
    mark (`!`: a warning names it; `expired`) follows its name."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title), box=box.SIMPLE_HEAD, show_edge=False,
                  collapse_padding=True, title_justify="left")
    cols = ["pool", "cluster", "team", "machine", "nodes x dev", "zones", "capacity",
            "$/month", "price"]
    machines = [machine_short(r) for r in rows]
    word = max((len(w) for m in machines for w in m.split()), default=0)
    for col in cols:  # a machine type is never cut mid-word; a long capacity folds
        table.add_column(col, overflow="fold", no_wrap=col in ("nodes x dev", "$/month"),
                         min_width=min(word, 20) if col == "machine" else None,
                         justify="right" if col in ("nodes x dev", "$/month") else "left")
    for i, r in enumerate(rows):
        cells = [f"{r['name']} {marks[i]}".strip(), r["cluster"] or "(tpu-vm)", r["team"],
                 machines[i],
                 nodes_by_devices(r), zones_short(r["zones"]), r["capacity"],
                 pool_usd(r), price_source(r, r.get("region"), provenance=True)]
        table.add_row(*(escape(str(c)) for c in cells))
    return table
