"""A stand-in for `python -m smoke.probes._torch_dist` (same argv) that does, on the outside,
what an NCCL rank does with its log: it replays a recorded NCCL INFO log the way NCCL writes it.

NVIDIA/nccl src/debug.cc: `FILE* ncclDebugFile = stdout`; with `NCCL_DEBUG_FILE` set (and
`NCCL_DEBUG` above VERSION) it `fopen`s that name, `%h` and `%p` expanded, and falls back to
stdout when it cannot; every line goes through `vfprintf(ncclDebugFile, ...)`, i.e. the C
library's buffered stdio, flushed at exit. Only `NCCL_DEBUG=INFO` (or TRACE) prints INFO lines.

The log lines are written after the rank's result, through libc, so on stdout they land after
anything Python printed. Environment (from the test):
  FAKE_NCCL_LOG       the recorded log (its `#` source header is not replayed)
  FAKE_NCCL_FILE_FAILS  1: behave as if NCCL_DEBUG_FILE could not be opened (log on stdout)
  FAKE_BARRIER        a directory: every local rank waits for the others, as in a collective
  FAKE_WORLD_HERE     how many ranks the barrier waits for (default: --world)
  FAKE_STDOUT_BYTES   bytes this rank writes to stdout (os.write, unbuffered) before the barrier
  FAKE_NOISY_RANK     which rank writes them (default: every rank)
  FAKE_ENV_DIR        a directory: each rank dumps its environment there as JSON
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import time
from pathlib import Path

from smoke.probes._torch_dist import write_result

_INFO = {"INFO", "TRACE"}


def _libc_lines(lines: list[str], env: dict[str, str]) -> None:
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    stream = ctypes.c_void_p.in_dll(libc, "stdout").value
    name = env.get("NCCL_DEBUG_FILE", "")
    if name and env.get("FAKE_NCCL_FILE_FAILS") != "1":
        path = name.replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))
        opened = libc.fopen(path.encode(), b"w")
        if opened:
            stream = opened
    for line in lines:
        libc.fputs(line.encode(), stream)
    # no fclose and no fflush: exit() flushes, as it does for NCCL's FILE*


def _barrier(directory: str, rank: int, world: int) -> None:
    d = Path(directory)
    (d / f"rank{rank}").touch()
    deadline = time.monotonic() + 60
    while len(list(d.glob("rank*"))) < world:
        if time.monotonic() > deadline:
            sys.exit(f"rank {rank}: peers never arrived")
        time.sleep(0.02)


def main(argv: list[str]) -> None:
    args = dict(zip(argv[::2], argv[1::2], strict=False))
    rank, local = int(args["--rank"]), int(args["--local-rank"])
    world = int(os.environ.get("FAKE_WORLD_HERE", args["--world"]))
    env = dict(os.environ)
    if env.get("FAKE_ENV_DIR"):
        Path(env["FAKE_ENV_DIR"], f"rank{rank}.json").write_text(json.dumps(env))
    noise = int(env.get("FAKE_STDOUT_BYTES", "0"))
    if noise and env.get("FAKE_NOISY_RANK", str(rank)) == str(rank):
        data = b"x" * 1023 + b"\n"
        for _ in range(noise // len(data)):
            os.write(1, data)
    if env.get("FAKE_BARRIER"):
        _barrier(env["FAKE_BARRIER"], rank, world)
    if local == 0:
        write_result(args.get("--result-file", ""), {
            "bytes": int(args["--mib"]) * 2**20, "seconds": 0.01, "samples": [0.01],
            "correct": True})
    lines = []
    if env.get("NCCL_DEBUG", "").upper() in _INFO and env.get("FAKE_NCCL_LOG"):
        text = Path(env["FAKE_NCCL_LOG"]).read_text(encoding="utf-8")
        lines = [f"{line}\n" for line in text.splitlines() if not line.startswith("#")]
    _libc_lines(lines, env)


if __name__ == "__main__":
    main(sys.argv[1:])
