"""The smoke history's SQLite schema: the tables of each version and the migration from
schema 1 (see smoke/history.py)."""

from __future__ import annotations

SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    stack TEXT NOT NULL,
    started_at TEXT NOT NULL,
    duration_s REAL NOT NULL,
    thresholds_version TEXT NOT NULL,
    ok INTEGER NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_seq INTEGER NOT NULL REFERENCES runs(seq),
    cluster TEXT NOT NULL,
    pool TEXT NOT NULL,
    node TEXT NOT NULL,
    accelerator TEXT NOT NULL,
    device TEXT NOT NULL,
    probe TEXT NOT NULL,
    tier INTEGER NOT NULL,
    unit TEXT NOT NULL,
    measured REAL,
    expected REAL,
    floor REAL,
    verdict TEXT NOT NULL,
    backend TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS results_by_node ON results(node, probe, run_seq);
CREATE INDEX IF NOT EXISTS results_by_pool ON results(pool, probe, run_seq);
CREATE INDEX IF NOT EXISTS results_by_run ON results(run_seq);
"""
# A schema-1 row's backend, as the launcher chose it: JAX on a TPU, torch on a cluster's GPU.
V1_BACKEND = ("CASE WHEN LOWER(r.accelerator) LIKE 'tpu%' THEN 'jax' "
               "WHEN runs.kind = 'cluster' AND LOWER(r.accelerator) NOT IN ('cpu', 'none') "
               "THEN 'torch' ELSE '' END")
MIGRATE_1_TO_2 = (
    "ALTER TABLE results ADD COLUMN backend TEXT NOT NULL DEFAULT ''",
    "UPDATE results AS r SET backend = " + V1_BACKEND + " FROM runs WHERE runs.seq = r.run_seq",
)


COLUMNS = {"runs": {"seq", "run_id", "kind", "stack", "started_at", "duration_s",
                     "thresholds_version", "ok", "recorded_at"},
            "results": {"run_seq", "cluster", "pool", "node", "accelerator", "device", "probe",
                        "tier", "unit", "measured", "expected", "floor", "verdict", "backend"}}
ADDED = {2: {"results": {"backend"}}}  # the columns each schema version added


def columns_of(version: int) -> dict[str, set[str]]:
    """The tables and columns a history of schema `version` has."""
    return {table: columns - {c for v, added in ADDED.items() if v > version
                              for c in added.get(table, set())}
            for table, columns in COLUMNS.items()}
