"""One home for each fact (issue 22): a fact spelled in one module, every other module
importing it. Each test reads the packages' source and fails when a second spelling of its
fact reappears outside the fact's home."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fleet", "smoke", "cli", "components")


def _sources(*packages: str) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            yield rel, ast.parse(path.read_text(), rel)


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def literals(*packages: str) -> Iterator[tuple[str, int, str]]:
    """Every string constant in code (docstrings left out: prose may name a key), with its
    file and line; an f-string's constant parts count."""
    for rel, tree in _sources(*packages):
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs):
                yield rel, node.lineno, node.value


def test_every_accelfleet_io_key_is_spelled_in_fleet_labels() -> None:
    stray = [f"{rel}:{line}: {text!r}" for rel, line, text in literals(*PACKAGES)
             if "accelfleet.io/" in text and rel != "fleet/labels.py"]
    assert stray == [], "spell these with fleet.labels' names:\n" + "\n".join(stray)


def test_gcp_resource_labels_are_spelled_in_fleet_labels() -> None:
    stray = [f"{rel}:{line}: {text!r}" for rel, line, text in literals(*PACKAGES)
             if text in {"accelfleet-pool", "accelfleet-team"} and rel != "fleet/labels.py"]
    assert stray == [], "\n".join(stray)


def test_labels_keep_their_spelling() -> None:
    """What clusters already carry: a renamed key strands every labelled node."""
    from fleet import labels as L
    assert (L.POOL_LABEL, L.TEAM_LABEL, L.ACCELERATOR_LABEL, L.AMI_LABEL) == (
        "accelfleet.io/pool", "accelfleet.io/team", "accelfleet.io/accelerator",
        "accelfleet.io/ami")
    assert (L.CLUSTER_TAG, L.ZONE_TAG, L.RUN_LABEL) == (
        "accelfleet.io/cluster", "accelfleet.io/zone", "accelfleet.io/run")
    assert f"{L.SMOKE_KEY}={L.SMOKE_FAILED}" == "accelfleet.io/smoke=failed"
    assert L.SMOKE_ANNOTATION_PREFIX + "undo" == "accelfleet.io/smoke-undo"


_LIMIT = re.compile(r"\b0\.(85|93)\b")


def test_pool_outlier_limit_is_written_once() -> None:
    """The pool-outlier limits live in smoke.probes.verdict (POOL_OUTLIER_*); the host
    outlier defaults in smoke.probes.thresholds. Messages format the constants."""
    homes = {"smoke/probes/verdict.py", "smoke/probes/thresholds.py"}
    stray = [f"{rel}:{line}: {text!r}" for rel, line, text in literals("smoke", "cli")
             if _LIMIT.search(text) and rel not in homes]
    for package in ("smoke", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in homes:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#")[0]
                if _LIMIT.search(code) or ("#" in line and "peers" in line and _LIMIT.search(line)):
                    stray.append(f"{rel}:{n}: {line.strip()}")
    assert stray == [], "\n".join(stray)


def test_quarantine_names_the_limit_it_used() -> None:
    from smoke.cluster.quarantine import threshold_of
    from smoke.probes.results import ProbeResult, Verdict
    from smoke.probes.verdict import POOL_OUTLIER, POOL_OUTLIER_FAIL
    r = ProbeResult("host", "matmul_tflops_vs_pool", 2, Verdict.FAIL, "x", 600.0, 800.0,
                    "TFLOP/s")
    assert threshold_of(r) == f"{POOL_OUTLIER_FAIL:g} x peers' median 800 TFLOP/s"
    assert POOL_OUTLIER.outlier_fail == POOL_OUTLIER_FAIL
    assert f"below {POOL_OUTLIER_FAIL:g} of the median" in POOL_OUTLIER.source


# literals equal to a probe name that are not that probe: (file, text) -> what they are
_NOT_PROBES = {("smoke/cluster/sources.py", "inventory"): "the stack's `inventory` output",
               ("cli/catalog.py", "memory_gbps"): "the catalog's accelerator field"}


def test_every_probe_name_comes_from_the_registry() -> None:
    """The agent, runner, verdicts, launcher, re-judging, reports, metrics and history spell a
    probe name only through smoke.probes.names."""
    from smoke.probes import names as P
    stray = [f"{rel}:{line}: {text!r}" for rel, line, text in literals("smoke", "cli")
             if rel != "smoke/probes/names.py" and (rel, text) not in _NOT_PROBES
             and (text in P.AGENT_PROBES or P.POOL_SUFFIX in text)]
    assert stray == [], "take these from smoke.probes.names:\n" + "\n".join(stray)


def test_the_registry_keeps_the_stored_spellings() -> None:
    """Run documents, JUnit files and history databases hold these names."""
    from smoke.probes import names as P
    from smoke.probes import thresholds as T
    from smoke.probes import verdict as V
    assert P.AGENT_PROBES == ("inventory", "known_answer", "psum", "matmul_tflops",
                              "memory_gbps", "sustained_tflops", "allreduce_busbw",
                              "fabric_busbw", "nvlink_links", "p2p_gbps", "gpu_health")
    assert P.pool_probe(P.MATMUL) == "matmul_tflops_vs_pool"
    assert P.base_probe(P.pool_probe(P.FABRIC)) == P.FABRIC and P.is_pool_probe("x_vs_pool")
    assert set(V.UNITS) == set(V.TIERS) == set(P.AGENT_PROBES)
    assert (T.MATMUL, V.MATMUL, V.FABRIC) == (P.MATMUL, P.MATMUL, P.FABRIC)


_RANK_MAX = re.compile(r"max\(.*key=lambda \w+: \w+(\[0\])?\.rank")


def test_worst_verdict_is_computed_in_one_place() -> None:
    """smoke.probes.results.worst (and verdict.worst_check for (verdict, reason) pairs); no
    second `max(..., key=...rank)` elsewhere."""
    stray = []
    for package in ("smoke", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "smoke/probes/results.py":
                continue
            stray += [f"{rel}:{n}: {line.strip()}"
                      for n, line in enumerate(path.read_text().splitlines(), 1)
                      if _RANK_MAX.search(line)]
    assert stray == [], "\n".join(stray)


def _eight_gpu_run() -> object:
    from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
    from smoke.probes.names import MATMUL
    from smoke.probes.results import HostReport, ProbeResult, Verdict

    def host(name: str, figures: list[float]) -> NodeOutcome:
        rs = tuple(ProbeResult(f"cuda{i}", MATMUL, 2, Verdict.PASS, "ok", v, 989.0, "TFLOP/s")
                   for i, v in enumerate(figures))
        return NodeOutcome(0, f"pod-{name}", name, report=HostReport(
            host=name, backend="torch", platform="gpu", versions={}, tier=2, results=rs))

    # 8 GPUs, one reading 0: the middle two are 680 and 700, so the node's median is 690
    a = host("n1", [600.0, 650.0, 680.0, 700.0, 720.0, 730.0, 740.0, 0.0])
    b = host("n2", [800.0] * 8)
    c = host("n3", [800.0] * 8)
    pool = PoolReport(name="p", cluster="c1", accelerator="h100-80gb", workload="job",
                      expected_pods=3, status=PoolStatus.DONE, nodes=(a, b, c))
    return RunReport(run_id="r1", stack="s", started_at="", duration_s=1.0,
                     thresholds_version="t", agent_digest="d", pools=(pool,))


def test_text_html_and_the_pool_check_agree_on_a_nodes_median() -> None:
    """Before, the text table took the upper middle of the non-zero figures (700 here), the
    HTML report and the pool-outlier check the median of all of them (690)."""
    from rich.console import Console

    from smoke.cluster._rejudge import pool_outliers
    from smoke.probes.names import MATMUL
    from smoke.probes.results import node_median
    from smoke.reports.html import context
    from smoke.reports.text import run_table

    run = _eight_gpu_run()
    n1 = run.pools[0].nodes[0]  # type: ignore[attr-defined]
    assert node_median(n1.report.results, MATMUL) == 690.0
    out = Console(width=300, record=True)
    out.print(run_table(run))  # type: ignore[arg-type]
    row = next(line for line in out.export_text().splitlines() if " n1 " in line)
    assert " 690 " in row, row
    view = context(run)["pools"][0]  # type: ignore[arg-type]
    assert next(n.tflops for n in view.nodes if n.name == "n1") == "690"
    (check,) = [c for c in pool_outliers(run.pools[0].nodes) if c.node == "n1"]  # type: ignore[attr-defined]
    assert check.result.measured == 690.0


def test_one_junit_writer() -> None:
    """smoke.reports.junit writes every JUnit document (host and run alike)."""
    stray = [f"{rel}:{line}" for rel, line, text in literals("smoke", "cli")
             if text in {"testcase", "testsuite", "testsuites"}
             and rel != "smoke/reports/junit.py"]
    assert stray == [], "\n".join(stray)


def test_smoke_defaults_have_one_home() -> None:
    """The stack's Smoke model, a run without a stack file, the rendered workload, the agent,
    `smoke local` and the CLI's help all say what fleet.smoke_defaults says."""
    import typer.main

    from cli.main import app
    from fleet import smoke_defaults as SD
    from fleet.spec.fields import Smoke
    from smoke.cluster._bundle import bundle_files
    from smoke.cluster.sources import SmokeSettings
    from smoke.cluster.workload import RenderOptions
    from smoke.probes.agent import parse_args
    from smoke.probes.backend import Sizes

    spec, settings, options = Smoke(), SmokeSettings(), RenderOptions(run_id="r1")
    assert (spec.max_tier, spec.namespace, spec.timeout_s) == (
        SD.MAX_TIER, SD.NAMESPACE, SD.TIMEOUT_S)
    assert (settings.max_tier, settings.namespace, settings.timeout_s) == (
        SD.MAX_TIER, SD.NAMESPACE, SD.TIMEOUT_S)
    assert (options.tier, options.namespace, options.timeout_s) == (
        SD.MAX_TIER, SD.NAMESPACE, SD.TIMEOUT_S)
    assert parse_args([]).tier == SD.MAX_TIER
    assert (Sizes.for_platform("gpu").sustain_s, Sizes.for_platform("cpu").sustain_s) == (
        SD.SUSTAIN_S, SD.SUSTAIN_S_CPU)
    assert "fleet/smoke_defaults.py" in bundle_files()  # the agent imports it in the pod
    smoke = typer.main.get_command(app).commands["smoke"]  # type: ignore[attr-defined]
    local = {p.name: p for p in smoke.commands["local"].params}
    assert local["tier"].default == SD.LOCAL_TIER
    assert f"Default {SD.SUSTAIN_S:g} on an accelerator" in local["sustain_s"].help


_DEFAULT_LITERALS = re.compile(r"\b(900|3600|7 \* 24 \* 3600)\b|\"accelfleet-smoke\"")


def test_smoke_default_literals_only_in_their_home() -> None:
    homes = {"fleet/smoke_defaults.py"}
    files = ["fleet/spec/fields.py", "fleet/spec/_gate.py", "fleet/spec/_values.py",
             "smoke/cluster/sources.py", "smoke/cluster/workload.py",
             "smoke/probes/backend.py", "smoke/probes/runner.py", "smoke/probes/agent.py",
             "cli/smoke.py", "cli/smoke_options.py"]
    stray = [f"{rel}:{n}: {line.strip()}" for rel in files if rel not in homes
             for n, line in enumerate((ROOT / rel).read_text().splitlines(), 1)
             if _DEFAULT_LITERALS.search(line.split("#")[0])]
    assert stray == [], "\n".join(stray)


_MONEY = re.compile(r"\$\{[^}]*:[,.0-9]*f\}|\{[^}]*:,\.4g\}")


def test_money_and_figures_are_formatted_by_fleet_words() -> None:
    """`${x:,.0f}`, `${x:.2f}` and `{x:,.4g}` in an f-string outside fleet.words are a second
    spelling of a formatter it has."""
    stray = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "fleet/words.py":
                continue
            stray += [f"{rel}:{n}: {line.strip()}"
                      for n, line in enumerate(path.read_text().splitlines(), 1)
                      if _MONEY.search(line) and not line.lstrip().startswith(("#", '"""'))]
    assert stray == [], "use fleet.words:\n" + "\n".join(stray)


# Homes that import only the stdlib; fleet/labels.py may import fleet/taints.py, itself one
# (the gate's taint effect is spelled once, in fleet.taints: issue 26).
LEAF_HOMES = {"fleet/labels.py": ("fleet.taints",), "fleet/smoke_defaults.py": (),
              "fleet/words.py": (), "smoke/probes/names.py": (), "fleet/taints.py": ()}


@pytest.mark.parametrize("home", sorted(LEAF_HOMES))
def test_homes_import_nothing_of_accelfleet(home: str) -> None:
    """Every layer (and the pod's bundle) may import these: they import only the stdlib (and
    the other leaf homes named in LEAF_HOMES)."""
    import sys
    tree = ast.parse((ROOT / home).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    leaves = set(LEAF_HOMES[home])
    assert all(m.replace(".", "/") + ".py" in LEAF_HOMES for m in leaves)
    names |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module not in leaves}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_the_bundle_carries_the_homes_its_probes_import() -> None:
    from smoke.cluster._bundle import bundle_files
    files = bundle_files()
    for home in ("fleet/smoke_defaults.py", "fleet/words.py", "smoke/probes/names.py"):
        assert home in files


def test_git_runs_from_one_place() -> None:
    """One git runner (fleet.stack.git.run_git): `plan --base-ref` read the stack at a ref
    with a runner of its own in cli/plan_diff.py."""
    found = [f"{rel}:{line}" for rel, line, text in literals(*PACKAGES, "policies")
             if text == "git" and rel != "fleet/stack/git.py"]
    assert found == [], "run git through fleet.stack.git.run_git:\n  " + "\n  ".join(found)


def test_one_guarded_node_patch_and_one_node_event_writer() -> None:
    """The patch guarded by a node's resourceVersion (read the node, patch, read again on a
    409) and the Event about a node are written once, in smoke/cluster/nodeapi.py: smoke's
    quarantine and release and the gate controller call them. (A function that reads a node
    and patches it through the API itself, or builds an Event body, is a second copy.)"""
    home = "smoke/cluster/nodeapi.py"
    ours = {"nodeapi", "K"}  # smoke.cluster.nodeapi, and the gate's smoke.gate._kube
    copies = []
    for rel, tree in _sources("smoke"):
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or rel == home:
                continue
            api_calls = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute) and not (
                isinstance(n.value, ast.Name) and n.value.id in ours)}
            if {"read_node", "patch_node"} <= api_calls or "create_namespaced_event" in \
                    api_calls:
                copies.append(f"{rel}:{fn.lineno} {fn.name}")
    copies += [f"{rel}:{line}" for rel, line, text in literals("smoke")
               if text == "involvedObject" and rel != home]
    assert copies == [], "call smoke.cluster.nodeapi instead:\n" + "\n".join(copies)
