"""The fuzz harness of issue 21: every reader, the hostile mutations thrown at it, and one case
run the way the CLI runs it (the command's error handling decides the exit code: 2 for bad
input, 3 for a bug).

A case: a seed from `corpus/<reader>/`, mutated by a list of `Mutation`s (text edits, hostile
tokens, or, for JSON, a hostile value at a path), written to a file in a fresh directory, read
by the reader. `run_case` returns what happened: the exit code, whether a traceback or an
internal error was printed, whether the input file or its directory changed, and the time.
Both the bounded suite (Hypothesis) and the long run (benchmarks/fuzz_readers.py) use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent / "corpus"
READERS = ("stack", "plan", "outputs", "kubeconfig", "workload", "history", "host")

# Text that broke a reader once, or might: YAML tags and anchors, huge numbers, markup, fences,
# control characters, line endings, non-finite numbers, deep nesting.
TOKENS = (
    '!!int "x"', '!!float "many"', "!!binary ###", "!!timestamp 2026-99-99", "&a [*a]", "*nope",
    "? [a, b]\n: 1", "9" * 4400, "1e400", "-1e400", ".inf", ".nan", "-0", "0x", "1:30",
    "[/bold]", "[red]x[/blue]", "```", "\n```\n# heading\n", "\x00", "\x07\x1b[31m", "\ufffe",
    "\ud800", "\r\n", "\r", "\t", "[" * 80, "{" * 80, "- " * 50, "null", "~", "''", '"',
    "'unterminated", "key: value: more", "x" * 5000, "é", "𝔘", "<script>", "|", "&", "%",
    "2**63", str(2**63), str(-(2**63) - 1), "NaN", "Infinity", "true", "[]", "{}",
)
VALUES: tuple[Any, ...] = (
    None, "", -1, 0, 1, 2**31, 2**63, -(2**63), 1.5, 1e308, -1e308, True, False, [], {}, [1],
    {"a": 1}, "x" * 2000, "[/bold]", "\x00\x1f", "```\n# h", "9" * 100, [None] * 50,
    {"nested": {"deeper": [1, {"x": None}]}}, "inf", "-nan",
)


@dataclass(frozen=True)
class Mutation:
    """One edit: `kind` and the random numbers that place it (fractions of the text length,
    an index into TOKENS or VALUES)."""

    kind: str
    at: float
    span: float
    pick: int

    def apply_text(self, text: str) -> str:
        n = len(text)
        i = int(self.at * n)
        j = min(n, i + int(self.span * 200))
        token = TOKENS[self.pick % len(TOKENS)]
        if self.kind == "insert":
            return text[:i] + token + text[i:]
        if self.kind == "replace-line":
            lines = text.split("\n")
            k = int(self.at * len(lines))
            lines[k:k + 1] = [lines[k][:len(lines[k]) - len(lines[k].lstrip())] + token] \
                if k < len(lines) else [token]
            return "\n".join(lines)
        if self.kind == "delete":
            return text[:i] + text[j:]
        if self.kind == "duplicate":
            return text[:j] + text[i:j] * (1 + self.pick % 3) + text[j:]
        if self.kind == "truncate":
            return text[:i]
        if self.kind == "crlf":
            return text.replace("\n", "\r\n")
        if self.kind == "flip" and n:
            k = min(i, n - 1)
            return text[:k] + chr((ord(text[k]) ^ (1 << (self.pick % 7))) or 1) + text[k + 1:]
        return text

    def apply_json(self, doc: Any) -> Any:
        """A hostile value at a path chosen by `at` among every node of the document."""
        paths: list[tuple[Any, Any]] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for k in list(node):
                    paths.append((node, k))
                    walk(node[k])
            elif isinstance(node, list):
                for k in range(len(node)):
                    paths.append((node, k))
                    walk(node[k])

        walk(doc)
        if not paths:
            return VALUES[self.pick % len(VALUES)]
        parent, key = paths[int(self.at * len(paths)) % len(paths)]
        if self.kind == "json-drop" and isinstance(parent, dict):
            del parent[key]
        elif self.kind == "json-dup" and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[key])))
        else:
            parent[key] = json.loads(json.dumps(VALUES[self.pick % len(VALUES)]))
        return doc


TEXT_KINDS = ("insert", "insert", "replace-line", "delete", "duplicate", "truncate", "crlf",
              "flip")
JSON_KINDS = ("json-set", "json-set", "json-drop", "json-dup")


def random_mutations(rng: random.Random, *, json_doc: bool, most: int = 4) -> list[Mutation]:
    kinds = TEXT_KINDS + (JSON_KINDS * 2 if json_doc else ())
    return [Mutation(rng.choice(kinds), rng.random(), rng.random(), rng.randrange(10_000))
            for _ in range(rng.randint(1, most))]


def seeds(reader: str) -> list[Path]:
    return sorted(p for p in (CORPUS / reader).iterdir() if p.is_file())


def mutate(seed: Path, mutations: list[Mutation]) -> str:
    """The seed's text after the mutations: JSON ones first (on the parsed document, when it
    is JSON), then the text ones."""
    text = seed.read_text(encoding="utf-8")
    structured = [m for m in mutations if m.kind.startswith("json-")]
    if structured and seed.suffix == ".json":
        doc = json.loads(text)
        for m in structured:
            doc = m.apply_json(doc)
        text = json.dumps(doc, ensure_ascii=False)
    for m in mutations:
        if not m.kind.startswith("json-"):
            text = m.apply_text(text)
    return text


@dataclass(frozen=True)
class Outcome:
    reader: str
    code: int
    traceback: bool
    changed: list[str]
    seconds: float
    output: str


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def _guarded(fn: Callable[[], object]) -> tuple[int, str]:
    """Run `fn` inside the CLI's own error handling (`cli._errors.reported`): its exit code
    and what it printed."""
    import typer

    from cli._errors import reported

    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            with reported():
                fn()
        except typer.Exit as exc:
            code = int(exc.exit_code)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue()


def _invoke(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    text = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        text += f"\nTraceback: {type(result.exception).__name__}: {result.exception}"
        return 3, text
    return result.exit_code, text


def _plan_case(path: Path) -> tuple[int, str]:
    def run() -> None:
        from cli.plan_diff import load_plan_json, render_markdown, render_text
        from components.engine.diff import diff_plans

        base = load_plan_json(path)
        new = json.loads(seeds("plan")[0].read_text(encoding="utf-8"))
        diff = diff_plans(base, new, base=str(path))
        render_text(diff)
        render_markdown(diff, [])

    return _guarded(run)


def _kubeconfig_case(path: Path) -> tuple[int, str]:
    def run() -> None:
        from smoke.cluster.access import ClusterRef, connect

        ref = ClusterRef("ml-gke", "gcp", "us-central1", "acme-ml-prod")
        connect([ref], kubeconfig=path, check=False)
        connect([ref], kubeconfig=path.parent / "absent", check=False,
                outputs_kubeconfigs={"ml-gke": path.read_text(encoding="utf-8",
                                                              errors="replace")})

    return _guarded(run)


def _host_case(path: Path) -> tuple[int, str]:
    def run() -> None:
        from rich.console import Console

        from fleet.errors import InputError
        from smoke.cluster.launcher import parse_host_report
        from smoke.cluster.run import RunReport
        from smoke.reports.html import render_html
        from smoke.reports.junit import host_junit as junit
        from smoke.reports.junit import junit as run_junit
        from smoke.reports.metrics import openmetrics
        from smoke.reports.text import run_summary, run_table, summary, table

        report = parse_host_report(path.read_text(encoding="utf-8", errors="replace"))
        if report is None:  # the launcher's "no report from this node": a refusal
            raise InputError("not a host report", hint="the node's log holds none")
        run = RunReport.of_host(report, "l-fuzz")
        console = Console(file=io.StringIO(), width=160)
        console.print(table(report))
        console.print(summary(report), markup=False)
        console.print(run_table(run))
        console.print(run_summary(run), markup=False)
        import xml.etree.ElementTree as ET

        ET.fromstring(junit(report))
        ET.fromstring(run_junit(run))
        render_html(run)
        from prometheus_client.openmetrics.parser import text_string_to_metric_families

        list(text_string_to_metric_families(openmetrics(run)))
        from smoke.history import History

        with History.open(path.parent / "history-out" / "h.sqlite") as h:
            h.append(run, kind="local")
            h.trends()

    return _guarded(run)


def _history_file(path: Path, sql: str) -> None:
    """Build the mutated history from its mutated SQL (statements that fail are skipped)."""
    conn = sqlite3.connect(path)
    try:
        for statement in sql.split(";"):
            with contextlib.suppress(sqlite3.Error, ValueError):
                conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


# What a crash prints at the start of a line (Python's traceback, the CLI's exit-3 message);
# the same words inside printed data (the agent's source in a rendered ConfigMap) are not one.
CRASH = re.compile(r"^\s*(Traceback \(most recent call last\)|Traceback: |internal error: )",
                   re.MULTILINE)


def run_case(reader: str, seed: Path, mutations: list[Mutation], workdir: Path) -> Outcome:
    """One case in `workdir` (fresh and empty)."""
    text = mutate(seed, mutations)
    name = {"stack": f"Pulumi.{seed.stem.split('.')[-1]}.yaml"}.get(reader, seed.name)
    path = workdir / name
    if reader == "history":
        path = workdir / "history.sqlite"
        _history_file(path, text)
    else:
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    before = _digests(workdir)
    started = time.perf_counter()
    if reader == "stack":
        code, out = _invoke("fleet", "validate", str(path))
    elif reader == "plan":
        code, out = _plan_case(path)
    elif reader == "outputs":
        code, out = _invoke("smoke", "render", "--outputs", str(path))
    elif reader == "kubeconfig":
        code, out = _kubeconfig_case(path)
    elif reader == "workload":
        code, out = _invoke("advise", "--workload", str(path), "--catalog", "--json")
    elif reader == "history":
        code, out = _invoke("smoke", "history", "--history", str(path))
    else:
        code, out = _host_case(path)
    seconds = time.perf_counter() - started
    after = _digests(workdir)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return Outcome(reader, code, CRASH.search(out) is not None, changed,
                   seconds, out[-2000:])
