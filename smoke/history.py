"""The smoke history: every run (local or cluster) appended to SQLite; per node, each figure's
trend, its last verdict, and drift.

    with History.open(path) as h:
        h.append(run, kind="cluster")
        trends = h.trends(pool="h100-train", window=10)

Schema version 2 (`PRAGMA user_version`), one row per run and one per device and probe:
    runs(seq, run_id UNIQUE, kind, stack, started_at, duration_s, thresholds_version, ok,
         recorded_at)
    results(run_seq -> runs.seq, cluster, pool, node, accelerator, device, probe, tier, unit,
            measured, expected, floor, verdict, backend)
`accelerator` is the device kind the figures come from (a catalog key, or `cpu` for a CPU's
figures) and `backend` the framework that measured them (torch, jax): a series, and so its
drift, is one (cluster, pool, node, backend, device kind, probe); torch and JAX figures are
never compared. Schema 1 (no `backend`) is migrated by the first writer that opens it; a
reader of a schema-1 file infers the backend the same way without writing: JAX on a TPU,
torch on a cluster's GPU (the only pairs the launcher runs), unknown ('') for a local run
on a GPU or a CPU.
Concurrent writers are safe: WAL journal, a busy timeout, and each run appended in one
`BEGIN IMMEDIATE` transaction (all of it or none of it). A file of a newer schema is refused,
never rewritten.

Drift: a device (or a node's median) whose last figure fell below 0.9 of its own median over
its previous runs (three to five of them) warns, even when still above the catalog floor.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from fleet.errors import InputError
from fleet.input_files import regular_or_absent
from fleet.words import precise
from smoke._history_schema import (
    COLUMNS,
    MIGRATE_1_TO_2,
    SCHEMA,
    SCHEMA_VERSION,
    V1_BACKEND,
    columns_of,
)
from smoke.cluster.run import RunReport
from smoke.probes.names import FIGURES, base_probe, pool_probe
from smoke.probes.results import Verdict, median_figure, worst

DEFAULT_PATH = Path(".accelfleet") / "history.sqlite"
ENV = "ACCELFLEET_HISTORY"  # overrides the default path (tests, CI runners)
BUSY_TIMEOUT_S = 30.0
TREND_PROBES = FIGURES
DRIFT_RATIO = 0.90  # below this fraction of its own recent median: drift
DRIFT_RUNS = 5  # the recent median is over at most this many previous runs ...
DRIFT_MIN_RUNS = 3  # ... and needs at least this many
DEFAULT_WINDOW = 10

def default_path() -> Path:
    return Path(os.environ.get(ENV) or DEFAULT_PATH)


@dataclass(frozen=True)
class Point:
    """One run of one node's figure: the median over its devices, and the worst verdict."""

    run_id: str
    started_at: str
    value: float | None
    verdict: str


@dataclass(frozen=True)
class Trend:
    """One node's figure over its last runs (oldest first)."""

    cluster: str
    pool: str
    node: str
    accelerator: str
    probe: str
    unit: str
    points: tuple[Point, ...]
    recent_median: float | None  # of the node's figure over the runs before the last
    drift: tuple[str, ...] = ()  # each device (or the node) that drifted, in words
    backend: str = ""  # torch or jax ('' when a schema-1 history could not tell)

    @property
    def last(self) -> Point:
        return self.points[-1]

    @property
    def change(self) -> float | None:
        """The last figure as a fraction of the recent median."""
        if self.last.value is None or not self.recent_median:
            return None
        return self.last.value / self.recent_median

    @property
    def verdict(self) -> str:
        """The last run's verdict, raised to warn by drift."""
        v = self.last.verdict
        return Verdict.WARN.value if self.drift and Verdict(v).rank < Verdict.WARN.rank else v

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "pool": self.pool, "node": self.node,
                "accelerator": self.accelerator, "backend": self.backend, "probe": self.probe,
                "unit": self.unit, "last_verdict": self.last.verdict, "verdict": self.verdict,
                "recent_median": self.recent_median, "change": self.change,
                "drift": list(self.drift),
                "points": [{"run_id": p.run_id, "started_at": p.started_at, "value": p.value,
                            "verdict": p.verdict} for p in self.points]}


def is_cpu(accelerator: str | None) -> bool:
    """Whether figures come from a CPU (a `smoke local` run without an accelerator)."""
    return (accelerator or "").strip().lower() in ("cpu", "none")


def _drifted(series: Sequence[float | None]) -> tuple[float, float] | None:
    """(last / recent median, recent median) when the last value drifted, else None."""
    if not series or series[-1] is None:
        return None
    before = [v for v in series[:-1] if v is not None][-DRIFT_RUNS:]
    if len(before) < DRIFT_MIN_RUNS:
        return None
    median = statistics.median(before)
    if median > 0 and series[-1] < DRIFT_RATIO * median:
        return series[-1] / median, median
    return None


@dataclass
class _Series:
    cluster: str
    pool: str
    node: str
    accelerator: str
    probe: str
    backend: str = ""
    unit: str = ""
    runs: dict[int, tuple[str, str]] = field(default_factory=dict)  # seq -> (run_id, when)
    values: dict[int, list[float]] = field(default_factory=dict)  # seq -> device values
    verdicts: dict[int, str] = field(default_factory=dict)  # seq -> worst verdict
    devices: dict[str, dict[int, float]] = field(default_factory=dict)

    def add(self, seq: int, run_id: str, when: str, device: str, probe: str, unit: str,
            measured: float | None, verdict: str) -> None:
        self.runs[seq] = (run_id, when)
        old = self.verdicts.get(seq)
        self.verdicts[seq] = verdict if old is None else worst(
            (Verdict(old), Verdict(verdict)), default=Verdict.SKIPPED).value
        if probe != self.probe:  # the pool-outlier check: its verdict counts, not its figure
            return
        self.unit = self.unit or unit
        if measured is not None:
            self.values.setdefault(seq, []).append(measured)
            self.devices.setdefault(device, {})[seq] = measured

    def trend(self) -> Trend:
        seqs = sorted(self.runs)
        node_values = [median_figure(self.values.get(s, ())) for s in seqs]
        points = tuple(Point(self.runs[s][0], self.runs[s][1], v, self.verdicts[s])
                       for s, v in zip(seqs, node_values, strict=True))
        before = [v for v in node_values[:-1] if v is not None][-DRIFT_RUNS:]
        drift = []
        # A CPU's figures move with whatever else the machine runs: no drift alarm on them.
        hit = None if is_cpu(self.accelerator) else _drifted(node_values)
        if hit is not None:
            drift.append(f"the node's median fell to {hit[0]:.2f} of its recent median "
                         f"{precise(hit[1])} {self.unit}")
        for device, by_seq in sorted(self.devices.items()):
            hit = None if is_cpu(self.accelerator) else _drifted([by_seq.get(s) for s in seqs])
            if hit is not None:
                drift.append(f"{device} fell to {hit[0]:.2f} of its recent median "
                             f"{precise(hit[1])} {self.unit}")
        return Trend(self.cluster, self.pool, self.node, self.accelerator, self.probe,
                     self.unit, points, statistics.median(before) if before else None,
                     tuple(drift), self.backend)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _names(tables: dict[str, set[str]]) -> str:
    names = sorted(tables)
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


_HISTORY_HINT = "pass a history file with --history PATH"


class History:
    """An open history file. Use as a context manager, or call close()."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path = conn, path
        self.version = SCHEMA_VERSION  # of the file as opened (a reader never migrates)

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> History:
        """The history at `path`, to append to (`create`: made when missing) or, with
        `create=False`, only to read: opened read-only (`mode=ro`), so reading never writes
        (no table, no `user_version`, no WAL switch), and a file that is not an accelfleet
        history is refused, untouched."""
        if not create:
            return cls._open_read_only(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            regular_or_absent(path, what="the smoke history", hint=_HISTORY_HINT)
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the smoke history {path}: {exc}",
                             hint="choose a writable --history PATH, or --no-history") from None
        return cls._prepared(conn, path, read_only=False)

    @classmethod
    def _open_read_only(cls, path: Path) -> History:
        if not path.exists():
            raise InputError(f"no smoke history at {path}",
                             hint="`accelfleet smoke run` and `smoke local` record one (by "
                             f"default in {DEFAULT_PATH}); or pass --history PATH")
        regular_or_absent(path, what="the smoke history", hint=_HISTORY_HINT)
        # A WAL database read with mode=ro still makes its -wal and -shm files (and cannot in
        # a read-only folder). With no -wal beside it no writer holds it: it is read as an
        # immutable file, which makes nothing and locks nothing; with one, a writer may be at
        # work (its files exist already) and the ordinary read-only mode shares them.
        wal = path.with_name(path.name + "-wal")
        mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True,
                                   timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error, ValueError) as exc:
            raise InputError(f"cannot read the smoke history {path}: {exc}",
                             hint="check the path and its permissions") from None
        return cls._prepared(conn, path, read_only=True)

    @classmethod
    def _prepared(cls, conn: sqlite3.Connection, path: Path, *, read_only: bool) -> History:
        h = cls(conn, path)
        try:
            h._prepare(read_only=read_only)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise InputError(f"{path} is not a usable smoke history: {exc}",
                             hint="move it aside, or pass another --history PATH") from None
        except BaseException:
            conn.close()
            raise
        return h

    def __enter__(self) -> History:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def _prepare(self, *, read_only: bool = False) -> None:
        c = self.conn
        c.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        version = c.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise InputError(f"the smoke history {self.path} has schema {version}; this "
                             f"accelfleet knows schema {SCHEMA_VERSION}",
                             hint="use a newer accelfleet, or pass another --history PATH")
        # Another writer may be creating the schema right now (tables first, then the
        # version, in one transaction): outside a transaction only a file with tables that
        # are not ours is refused; the creation below checks again under the write lock.
        self._check_ours(version, read_only=read_only, ours_ok=not read_only)
        self.version = version
        if read_only:
            return
        for attempt in range(50):  # switching to WAL needs a moment with no other writer
            try:
                if c.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() == "wal":
                    break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 49:
                    raise
            time.sleep(0.05)
        c.execute("PRAGMA synchronous = NORMAL")  # durable at each checkpoint; safe in WAL
        if version == SCHEMA_VERSION:
            return
        with self._write():
            version = c.execute("PRAGMA user_version").fetchone()[0]
            self._check_ours(version, read_only=False)
            if version == 0:
                for statement in filter(str.strip, SCHEMA.split(";")):
                    c.execute(statement)  # not executescript: it would commit first
            elif version == 1:
                for statement in MIGRATE_1_TO_2:
                    c.execute(statement)
            if version < SCHEMA_VERSION:
                c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.version = SCHEMA_VERSION

    def _check_ours(self, version: int, *, read_only: bool, ours_ok: bool = False) -> None:
        """Refuse a SQLite file that is not an accelfleet history: another application's
        tables, or (to read) an empty file or one without our tables and columns."""
        tables = {name: {str(col[1]) for col in self.conn.execute(
                      f"PRAGMA table_info({_quoted(name)})")}
                  for (name,) in self.conn.execute(
                      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                      "LIKE 'sqlite_%'")}
        hint = ("pass the history `accelfleet smoke run` records (default "
                f"{DEFAULT_PATH}), or another --history PATH")
        if version == 0 and tables and not (ours_ok and set(tables) <= set(COLUMNS)):
            raise InputError(f"{self.path} is not an accelfleet smoke history: it is a SQLite "
                             f"file of another application (tables {_names(tables)})",
                             hint=hint + "; it was left untouched")
        if version == 0 and read_only:
            raise InputError(f"{self.path} is not an accelfleet smoke history: it holds no "
                             "runs (an empty SQLite file)", hint=hint)
        if version >= 1:
            for table, columns in columns_of(version).items():
                missing = columns - tables.get(table, set())
                if missing:
                    raise InputError(f"{self.path} is not an accelfleet smoke history of "
                                     f"schema {version}: table `{table}` lacks "
                                     f"{', '.join(sorted(missing))}", hint=hint)

    @contextmanager
    def _write(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- writing --------------------------------------------------------------------------
    def append(self, run: RunReport, *, kind: str) -> bool:
        """Record `run` (one transaction); False when this run id is recorded already."""
        rows: list[tuple[Any, ...]] = []
        for pool in run.pools:
            for o in pool.nodes:
                if o.report is None:
                    continue
                node = o.node or o.report.host
                acc = o.report.accelerator or pool.accelerator
                if is_cpu(o.report.platform):  # `--expect h100` on a CPU: the CPU's figures
                    acc = "cpu"
                rows += [(pool.cluster or "", pool.name, node, acc, r.device, r.probe, r.tier,
                          r.unit, r.measured, r.expected, _figure(r.details.get("floor")),
                          r.verdict.value, o.report.backend) for r in o.report.results]
            accs = {o.node: (o.report.accelerator if o.report else None) for o in pool.nodes}
            backends = {o.node: o.report.backend for o in pool.nodes if o.report}
            rows += [(pool.cluster or "", pool.name, c.node, accs.get(c.node) or
                      pool.accelerator, c.result.device, c.result.probe, c.result.tier,
                      c.result.unit, c.result.measured, c.result.expected,
                      _figure(c.result.details.get("floor")), c.result.verdict.value,
                      backends.get(c.node, "")) for c in pool.checks if c.node is not None]
        now = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            return self._insert(run, kind, rows, now)
        except sqlite3.Error as exc:
            raise InputError(f"cannot write the smoke history {self.path}: {exc}",
                             hint="check the disk and the file's permissions, or pass "
                             "--history PATH / --no-history") from None

    def _insert(self, run: RunReport, kind: str, rows: list[tuple[Any, ...]], now: str
                ) -> bool:
        with self._write():
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO runs (run_id, kind, stack, started_at, duration_s, "
                "thresholds_version, ok, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, kind, run.stack, run.started_at or now, run.duration_s,
                 run.thresholds_version, int(run.ok), now))
            if cur.rowcount == 0:
                return False
            seq = cur.lastrowid
            self.conn.executemany(
                "INSERT INTO results (run_seq, cluster, pool, node, accelerator, device, "
                "probe, tier, unit, measured, expected, floor, verdict, backend) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [(seq, *r) for r in rows])
        return True

    # -- reading --------------------------------------------------------------------------
    def count(self) -> tuple[int, int]:
        """(runs, result rows)."""
        runs = self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        rows = self.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        return int(runs), int(rows)

    def trends(self, *, pool: str | None = None, node: str | None = None,
               accelerator: Sequence[str] = (), window: int = DEFAULT_WINDOW) -> list[Trend]:
        """Per node and figure, its last `window` runs; filters combine (AND). `accelerator`
        lists the spellings to match (a catalog key and the words the user gave)."""
        probes = [*TREND_PROBES, *(pool_probe(p) for p in TREND_PROBES)]
        where = [f"r.probe IN ({', '.join('?' * len(probes))})"]
        args: list[Any] = list(probes)
        if pool:
            where.append("r.pool = ?")
            args.append(pool)
        if node:
            where.append("r.node = ?")
            args.append(node)
        if accelerator:
            where.append(f"LOWER(r.accelerator) IN ({', '.join('?' * len(accelerator))})")
            args += [a.lower() for a in accelerator]
        backend = "r.backend" if self.version >= 2 else V1_BACKEND  # a reader never migrates
        sql = f"""
            WITH tagged AS (
                SELECT r.*, {backend} AS series_backend, runs.run_id, runs.started_at
                FROM results r JOIN runs ON runs.seq = r.run_seq
                WHERE {" AND ".join(where)}),
            picked AS (
                SELECT *, DENSE_RANK() OVER (
                           PARTITION BY cluster, pool, node, series_backend, accelerator
                           ORDER BY run_seq DESC) AS back
                FROM tagged)
            SELECT cluster, pool, node, accelerator, series_backend, probe, device, unit,
                   measured, verdict, run_seq, run_id, started_at
            FROM picked WHERE back <= ?"""
        series: dict[tuple[str, str, str, str, str, str], _Series] = {}
        for (cluster, pool_, node_, acc, be, probe, device, unit, measured, verdict, seq,
             run_id, when) in self.conn.execute(sql, [*args, window]):
            if not _sound(cluster, pool_, node_, acc, be, probe, device, unit, run_id, when,
                          measured, verdict):
                raise InputError(f"the smoke history {self.path} holds a damaged result "
                                 f"(run {run_id!r}, probe {probe!r}: a value of the wrong "
                                 "type)", hint="it was written by something other than "
                                 "accelfleet: move it aside, or pass another --history PATH")
            base = base_probe(probe)
            # one series per backend and device kind: a CPU run is not the GPU's series,
            # and torch's figures are not JAX's
            key = (cluster, pool_, node_, base, be, acc)
            s = series.get(key)
            if s is None:
                s = series[key] = _Series(cluster, pool_, node_, acc, base, be)
            s.add(seq, run_id, when, device, probe, unit, measured, verdict)
        trends = [s.trend() for _, s in sorted(series.items()) if s.values]
        order = {p: i for i, p in enumerate(TREND_PROBES)}
        return sorted(trends, key=lambda t: (t.cluster, t.pool, t.node, t.backend,
                                             t.accelerator, order[t.probe]))


def _figure(value: object) -> float | None:
    """A figure from a host's details, as the history stores it: a number, or NULL."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


_VERDICTS = frozenset(v.value for v in Verdict)


def _sound(*row: object) -> bool:
    """A trends row of the types accelfleet writes: text, then a measured figure (a number
    or NULL) and a verdict."""
    *texts, measured, verdict = row
    return (all(isinstance(t, str) for t in texts) and verdict in _VERDICTS
            and (measured is None or (isinstance(measured, int | float)
                                      and not isinstance(measured, bool))))


def record(run: RunReport, path: Path, *, kind: str) -> list[Trend]:
    """Append `run` to the history at `path`; the trends of this run's nodes that drifted."""
    with History.open(path) as h:
        h.append(run, kind=kind)
        nodes = {(p.name, o.node or (o.report.host if o.report else ""))
                 for p in run.pools for o in p.nodes}
        out = []
        for pool in sorted({p for p, _ in nodes}):
            out += [t for t in h.trends(pool=pool, window=DRIFT_RUNS + 1)
                    if (t.pool, t.node) in nodes and t.drift
                    and t.last.run_id == run.run_id]
        return out
