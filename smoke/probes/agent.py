"""The in-pod agent: `python -m smoke.probes.agent`, run by `accelfleet smoke run` on every node.

It runs the same tiers as `accelfleet smoke local` on its node, then (tier 3) its share of the
pool-wide collective, and prints one HostReport JSON document as the LAST line of stdout; the
launcher reads it from the pod's log and judges the pool. Progress goes to stderr.

It reaches the pod in a ConfigMap (`smoke.cluster._bundle`), so a stock framework image serves: it
imports only the standard library, the smoke package, `fleet.errors`, `fleet.smoke_defaults`,
`fleet.words`, the catalog's record types and the framework (torch or jax). The launcher
passes the expectation as JSON, so the catalog is never loaded here.

Exit codes: 0 a report was printed (whatever its verdicts: the launcher judges), 2 bad input
or a missing framework (message on stderr), 3 an unexpected error (traceback on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from dataclasses import replace
from typing import Any

from fleet import smoke_defaults as SD
from fleet.errors import AccelfleetError
from smoke.probes import verdict as V
from smoke.probes._fabric import CrossNode, Rendezvous
from smoke.probes.backend import Sizes
from smoke.probes.expect import Expectation
from smoke.probes.nccl_log import FABRICS
from smoke.probes.nccl_log import Expect as FabricExpect
from smoke.probes.results import HostReport, ProbeResult
from smoke.probes.runner import run_local

EXIT_BAD_INPUT, EXIT_CRASH = 2, 3
_TPU_ENV = ("TPU_WORKER_HOSTNAMES", "TPU_PROCESS_ADDRESSES")


class _StderrProgress:
    def __init__(self) -> None:
        self._total = 0
        self._done = 0

    def start(self, total: int) -> None:
        self._total = total

    def step(self, description: str) -> None:
        self._done += 1
        print(f"[{self._done}/{self._total}] {description}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m smoke.probes.agent", description=__doc__.split(
        "\n\n")[0])
    ap.add_argument("--tier", type=int, choices=range(SD.TOP_TIER + 1), default=SD.MAX_TIER)
    ap.add_argument("--backend", choices=("auto", "torch", "jax"), default="auto")
    ap.add_argument("--expect-json", default="", help="the Expectation document (JSON)")
    ap.add_argument("--pool", default="", help="the pool this node belongs to")
    ap.add_argument("--cross-node", choices=("none", "torch", "jax"), default="none",
                    help="join the pool-wide collective (rendezvous from the environment)")
    ap.add_argument("--expect-transport", default="",
                    help="comma-separated NCCL network names the fabric must use")
    ap.add_argument("--expect-fabric", choices=("", *FABRICS), default="",
                    help="the fabric NCCL must show: its transport, GPUDirect RDMA where it "
                    "is RDMA (rdma, ib, efa), no Socket fallback")
    ap.add_argument("--expect-nics", type=int, default=None,
                    help="GPU NICs per node NCCL must use (the catalog's count)")
    ap.add_argument("--expect-gdr", choices=("", "yes", "no"), default="",
                    help="whether every NET channel must be GPUDirect RDMA (/GDRDMA); default "
                    "as --expect-fabric says (the catalog's efa_gdr per EC2 instance type)")
    ap.add_argument("--nccl-lib", default="",
                    help="the fabric installer's libnccl.so.2, preloaded for every rank when "
                    "present")
    ap.add_argument("--expect-world", type=int, default=None,
                    help="devices the whole slice or multislice must show (JAX)")
    ap.add_argument("--nccl-env-file", default="",
                    help="a shell env profile whose `export` lines set NCCL's variables")
    ap.add_argument("--sustain-s", type=float, default=None,
                    help="window of the sustained phase (every device at once, tier 2 and "
                    f"up) in seconds; default {SD.SUSTAIN_S:g} on an accelerator, 0 skips it")
    ap.add_argument("--slice-started-file", default="",
                    help="a multi-host slice: the file (a downward API volume) in which the "
                    "launcher writes when the last host started; the host waits for it before "
                    "joining the slice")
    ap.add_argument("--fabric-only", action="store_true",
                    help="a pair round of a fabric pool: the inventory (tier 0), then only the "
                    "cross-node collective (the node's own tiers ran in the pool's run)")
    ap.add_argument("--timeout-s", type=int, default=600,
                    help="bound on joining and running the cross-node collective")
    return ap.parse_args(argv)


def _expectation(text: str) -> Expectation | None:
    if not text:
        return None
    try:
        return Expectation.from_dict(json.loads(text))
    except json.JSONDecodeError as exc:
        from fleet.errors import InputError

        raise InputError(f"--expect-json is not JSON: {exc}",
                         hint="re-render the workload with `accelfleet smoke render`") from None


def _nccl_env(path: str) -> tuple[dict[str, str], str | None]:
    if not path:
        return {}, None
    from smoke.probes._fabric import env_profile

    try:
        return env_profile(path), None
    except OSError as exc:
        return {}, f"NCCL env profile {path} unreadable ({exc.strerror}): is the NCCL plugin " \
                   "installer running on this node?"


def prepare_nccl(args: argparse.Namespace) -> dict[str, Any]:
    """One way to run NCCL on this node: the fabric's profile, our logging over it and the
    installer's NCCL preloaded, set in this process's environment before any tier, so the
    in-node all-reduce and the cross-node one inherit the same variables. Returns what was
    decided, for the report."""
    if args.backend == "jax" or args.cross_node == "jax":
        return {}
    if not (args.nccl_env_file or args.nccl_lib or args.cross_node == "torch"):
        return {}
    from smoke.probes._fabric import nccl_environment

    profile, problem = _nccl_env(args.nccl_env_file)
    env, notes = nccl_environment(profile, nccl_lib=args.nccl_lib)
    # NCCL in this process (if anything here ever initialises it) must not log onto the
    # stdout that carries the report; each rank sets its own file over this one.
    import tempfile

    env["NCCL_DEBUG_FILE"] = os.path.join(tempfile.gettempdir(), "accelfleet-agent-nccl.%p.log")
    os.environ.update(env)
    if problem:
        notes["nccl_env_problem"] = problem
    return notes


def _fabric_expect(args: argparse.Namespace) -> FabricExpect | None:
    names = tuple(n for n in args.expect_transport.split(",") if n)
    if not (names or args.expect_fabric or args.expect_nics or args.expect_gdr):
        return None
    gdr = {"yes": True, "no": False}.get(args.expect_gdr)
    return FabricExpect(kind=args.expect_fabric, networks=names, gdr=gdr,
                        nics=args.expect_nics)


def _cross_node(args: argparse.Namespace, report: HostReport,
                notes: dict[str, Any]) -> ProbeResult:
    expected = tuple(n for n in args.expect_transport.split(",") if n)
    if args.cross_node == "jax":
        from smoke.probes._fabric import jax_across_hosts

        sizes = Sizes.for_platform(report.platform)
        hosts = jax_across_hosts(mib=sizes.allreduce_mib, expected_devices=args.expect_world)
        join = {k: v for k, v in notes.items() if k.startswith("slice_")}
        return V.judge_fabric(replace(hosts, details={**hosts.details, **join}), expected)
    rdv = Rendezvous.from_env()
    if rdv.nodes < 2:
        return V.judge_fabric(None, skipped="a one-node pool: nothing to reduce across nodes")
    gpu = report.platform == "gpu"
    local = _local_gpus() if gpu else 1
    sizes = Sizes.for_platform(report.platform)
    from smoke.probes._fabric import torch_across_nodes

    refused = notes.get("nccl_preload_refused")
    if refused:  # the fabric needs the installer's NCCL, which cannot run under this torch
        world = rdv.nodes * local
        return V.judge_fabric(CrossNode(rdv.nodes, world, None, error=refused,
                                        details=dict(notes)), expected,
                              expect=_fabric_expect(args))
    # os.environ already holds the node's NCCL environment (prepare_nccl)
    cross: CrossNode = torch_across_nodes(rdv, local, gpu=gpu, mib=sizes.allreduce_mib,
                                          timeout_s=cross_node_budget_s(
                                              args.timeout_s, report.duration_s))
    if notes:
        cross = replace(cross, details={**cross.details, **notes})
    return V.judge_fabric(cross, expected, expect=_fabric_expect(args))


def _local_gpus() -> int:
    import torch

    return int(torch.cuda.device_count())


REPORT_MARGIN_S = 60  # left of the Job's deadline to print the report and exit


def cross_node_budget_s(timeout_s: int, spent_s: float) -> int:
    """The pool-wide collective's budget: what the Job's deadline leaves after this node's own
    tiers, less a margin, so that a node whose peer stalled (in its in-node tier, or a receive
    daemon that never came up) reports the collective's failure and its own results before
    the deadline kills it; the stalled peer is then the one node without a report, which the
    launcher names with the stage it was in (issue 19 item 13). 30 s at least."""
    return max(30, int(timeout_s - spent_s - REPORT_MARGIN_S))


JOIN_AFTER_START_S = 120  # joining once every host of the slice runs: imports and init only
SLICE_POLL_S = 1.0


def slice_wait_s(timeout_s: int) -> int:
    """How long a host waits for the launcher's word that every host of its slice started:
    half the Job's deadline (60 s at least), the other half left to join, run the tiers and
    report. The wait follows the slowest host's image pull and start, as the launcher measured
    them from the pods' timestamps (the pod cannot see its own)."""
    return max(60, timeout_s // 2)


def wait_for_slice(path: str, wait_s: float, *, poll_s: float = SLICE_POLL_S
                   ) -> dict[str, Any]:
    """Wait until `path` (the downward API file of the slice-started annotation) holds the
    time the last host started, at most `wait_s`. What happened, for the report:
    `slice_started_at` and `slice_wait_s` when the word came, else `slice_not_started`."""
    import time
    from pathlib import Path

    t0 = time.monotonic()
    print(f"T3 waiting for every host of the slice to start (up to {wait_s:g} s)",
          file=sys.stderr, flush=True)
    while True:
        try:
            said = Path(path).read_text(encoding="utf-8").strip()
        except OSError:
            said = ""
        waited = round(time.monotonic() - t0, 1)
        if said:
            print(f"T3 every host of the slice started by {said} (waited {waited:g} s)",
                  file=sys.stderr, flush=True)
            return {"slice_started_at": said, "slice_wait_s": waited}
        if waited >= wait_s:
            return {"slice_not_started": f"the launcher never said every host started within "
                    f"{wait_s:g} s (an older launcher, or a host still pulling its image)"}
        time.sleep(poll_s)


def jax_init_timeout_s(timeout_s: int) -> int:
    """Joining the slice gets a quarter of the Job's deadline (60 s at least, 300 at most):
    a host whose peer crashed fails its init, naming the cause, long before the deadline
    (issue 19 item 12), yet hosts whose image pulls finish minutes apart still meet."""
    return max(60, min(300, timeout_s // 4))


def run(args: argparse.Namespace) -> HostReport:
    expectation = _expectation(args.expect_json)
    notes = prepare_nccl(args)
    if args.cross_node == "jax":
        from smoke.probes._fabric import init_jax_distributed

        explicit = None if any(k in os.environ for k in _TPU_ENV) else Rendezvous.from_env()
        join_s = jax_init_timeout_s(args.timeout_s)
        if args.slice_started_file:
            joined = wait_for_slice(args.slice_started_file, slice_wait_s(args.timeout_s))
            notes |= joined
            if "slice_started_at" in joined:
                join_s = JOIN_AFTER_START_S  # every host runs: only their imports are left
        print(f"T3 joining the JAX distributed runtime ({_coordinator(explicit)}, up to "
              f"{join_s} s)", file=sys.stderr, flush=True)
        init_jax_distributed(explicit, timeout_s=join_s)
        print(JOINED, file=sys.stderr, flush=True)
    report = run_local(backend=args.backend, tier=0 if args.fabric_only else args.tier,
                       expectation=expectation, progress=_StderrProgress(),
                       sustain_s=args.sustain_s)
    if args.tier >= 3 and args.cross_node != "none":
        print("T3 across nodes", file=sys.stderr, flush=True)
        report = replace(report, results=(*report.results, _cross_node(args, report, notes)))
    return report


JOINED = "T3 joined the JAX distributed runtime"
JOIN_TAIL_LINES = 12  # of the child's stderr, to name why its join failed


def _coordinator(rdv: Rendezvous | None) -> str:
    if rdv is not None:
        return f"coordinator {rdv.coordinator}:{rdv.port}, process {rdv.node_rank} of {rdv.nodes}"
    hosts = os.environ.get("TPU_WORKER_HOSTNAMES", "")
    return (f"the slice's coordinator {hosts.split(',')[0] or '(unnamed)'}, worker "
            f"{os.environ.get('TPU_WORKER_ID', '?')} of {len(hosts.split(',')) if hosts else '?'}")


def _join_cause(code: int, tail: list[str]) -> str:
    """What the child's last stderr lines say about its failed join: XLA's fatal status line
    (`absl::Status: DEADLINE_EXCEEDED ...`, the RPC it was in) or a Python error."""
    import signal

    how = (f"killed by {signal.Signals(-code).name}" if code < 0 and -code in
           signal.Signals._value2member_map_ else f"exited {code}")
    keys = ("Status", "RPC:", "Error", "error", "Deadline", "Unavailable", "refused")
    lines = [t.strip() for t in tail if not t.strip().startswith(("@", "***"))]  # no stack
    said = [t[t.find("absl::Status:"):] if "absl::Status:" in t else t
            for t in lines if any(k in t for k in keys)][-3:]
    return f"{how}: {' | '.join(said or lines[-2:]) or '(no output)'}"


def _slice_said(path: str) -> str:
    from pathlib import Path

    try:
        return Path(path).read_text(encoding="utf-8").strip() if path else ""
    except OSError:
        return ""


def _join_failed(args: argparse.Namespace, code: int, tail: list[str]) -> HostReport:
    """The report of a host whose JAX distributed init failed: the cross-node probe FAILS,
    naming the coordinator and the cause. The local tiers are not run: they need the JAX
    runtime the failed join was to set up, in a process that just died of it."""
    from smoke.probes.runner import host_name

    explicit = None if any(k in os.environ for k in _TPU_ENV) else Rendezvous.from_env()
    hosts = os.environ.get("TPU_WORKER_HOSTNAMES", "")
    nodes = explicit.nodes if explicit else len(hosts.split(",")) if hosts else 0
    said = _slice_said(args.slice_started_file)
    budget = JOIN_AFTER_START_S if said else jax_init_timeout_s(args.timeout_s)
    started = (f"every host had started by {said} (the launcher's word), yet " if said else
               "the launcher never said every host started; " if args.slice_started_file
               else "")
    error = (f"JAX distributed init failed ({_coordinator(explicit)}; {started}peer "
             f"unreachable or not started, or the {budget} s init timeout passed): "
             f"{_join_cause(code, tail)}")
    cross = CrossNode(nodes, 0, None, ("jax",), error=error,
                      details={"stage": "jax.distributed.initialize"})
    exp = _expectation(args.expect_json)
    acc = exp.accelerator if exp else None
    return HostReport(host=host_name(), backend="jax", platform=acc.kind if acc else "unknown",
                      versions={}, tier=args.tier, results=(V.judge_fabric(cross),),
                      accelerator=acc.key if acc else None,
                      thresholds_version=V.THRESHOLDS_VERSION)


def _guarded(args: argparse.Namespace, argv: list[str] | None) -> int:
    """The agent in a forked child, watched: XLA's distributed client aborts the process
    (LOG(FATAL), SIGABRT) when its join times out or its peer is gone, so no Python handler
    can report it. The parent relays the child's stderr and, when the child ends before it
    joined without a report, prints the report naming the failed join (exit 0)."""
    from collections import deque

    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: stderr (Python's and the C library's) into the pipe
        os.close(r)
        os.dup2(w, 2)
        os.close(w)
        code = EXIT_CRASH
        try:
            code = _main(argv)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    tail: deque[str] = deque(maxlen=JOIN_TAIL_LINES)
    joined = False
    with os.fdopen(r, "r", encoding="utf-8", errors="replace") as pipe:
        for line in pipe:
            sys.stderr.write(line)
            sys.stderr.flush()
            if not line.lstrip().startswith(("@", "***")):  # XLA's stack frames say little
                tail.append(line.rstrip("\n"))
            joined = joined or line.startswith(JOINED)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if joined or code in (0, EXIT_BAD_INPUT):
        return code if code >= 0 else EXIT_CRASH
    report = _join_failed(args, code, list(tail))
    sys.stdout.write(json.dumps(report.to_dict(), sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except AccelfleetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.cross_node == "jax" and hasattr(os, "fork"):
        return _guarded(args, argv)
    return _main(argv)


def _main(argv: list[str] | None = None) -> int:
    try:
        report = run(parse_args(argv))
    except AccelfleetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:
        traceback.print_exc()
        return EXIT_CRASH
    sys.stdout.write(json.dumps(report.to_dict(), sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
