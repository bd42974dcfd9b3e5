"""Which NCCL a fabric installer ships, which NCCL torch was built with, and whether the first
may be preloaded under the second.

Why it matters: the agent preloads the installer's `libnccl.so.2` (smoke.probes._fabric), so
every rank's torch binds NCCL's symbols from it. torch links against the NCCL it was built with
(torch's CI pins 2.27.5 for its CUDA 12 wheels); an older library lacks the functions later
minor releases added (NCCL's API grows per minor release, e.g. `ncclCommInitRankScalable` in
2.23, `ncclCommWindowRegister` in 2.27), and every rank then dies at `import torch` with an
undefined symbol. So an installer NCCL of an older minor release than torch's is refused,
with a sentence that says what to do; a patch release behind is preloaded and noted.

How the installer's version is read, without loading the library into the agent:
- the file it resolves to: NCCL's own install names it `libnccl.so.<major>.<minor>.<patch>`
  with `libnccl.so.2` a link to it (NVIDIA/nccl makefiles/version.mk, src/Makefile);
- else `ncclGetVersion(int*)` through ctypes in a child process (a library that cannot load
  takes only the child down). The code is `NCCL_VERSION(X,Y,Z)` of nccl.h: X*1000+Y*100+Z up to
  2.8, X*10000+Y*100+Z from 2.9 on.
Standard library only: it runs in the pod.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

Version = tuple[int, int, int]

_SONAME_VERSION = re.compile(r"^libnccl\.so\.(\d+)\.(\d+)\.(\d+)$")
_PROBE = ("import ctypes, sys\n"
          "lib = ctypes.CDLL(sys.argv[1])\n"
          "v = ctypes.c_int(0)\n"
          "rc = lib.ncclGetVersion(ctypes.byref(v))\n"
          "print(v.value if rc == 0 else -1)\n")
PROBE_TIMEOUT_S = 30


def from_code(code: int) -> Version:
    """`ncclGetVersion`'s integer as (major, minor, patch): nccl.h's NCCL_VERSION(X,Y,Z)."""
    if code >= 10000:  # 2.9 and later: X*10000 + Y*100 + Z
        return code // 10000, code % 10000 // 100, code % 100
    return code // 1000, code % 1000 // 100, code % 100


def text(version: Version | None) -> str:
    return "unknown" if version is None else ".".join(map(str, version))


def installer_version(lib: str) -> tuple[Version | None, str]:
    """The NCCL version of the library at `lib`, and how it was read (or why it was not)."""
    path = Path(lib)
    try:
        resolved = path.resolve(strict=True)
    except OSError as exc:
        return None, f"{lib}: {exc.strerror or exc}"
    if (m := _SONAME_VERSION.match(resolved.name)) is not None:
        return (int(m.group(1)), int(m.group(2)), int(m.group(3))), f"file name {resolved.name}"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE, str(resolved)], env=env,
                             capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"ncclGetVersion could not be called: {exc}"
    value = out.stdout.strip()
    if out.returncode != 0 or not value.lstrip("-").isdigit() or int(value) <= 0:
        last = (out.stderr.strip().splitlines() or ["no ncclGetVersion"])[-1]
        return None, f"ncclGetVersion could not be read from {resolved.name}: {last}"
    return from_code(int(value)), "ncclGetVersion"


def torch_version() -> Version | None:
    """The NCCL torch was built with (`torch.cuda.nccl.version()`), None without a CUDA torch."""
    try:  # NCCL's version compiled into torch: no GPU or CUDA context needed
        import torch.cuda.nccl

        got = torch.cuda.nccl.version()
    except Exception:  # a CPU build: nothing to compare with
        return None
    if isinstance(got, int):
        return from_code(got)
    major, minor, patch = (int(x) for x in tuple(got)[:3])
    return major, minor, patch


def refusal(lib: str, installer: Version | None, torch_nccl: Version | None) -> str | None:
    """Why the installer's NCCL must not be preloaded under torch, or None when it may be:
    refused when its minor release is older than torch's (symbols torch needs are missing);
    a version that cannot be read, or no torch NCCL to compare with, is not refused."""
    if installer is None or torch_nccl is None or installer[:2] >= torch_nccl[:2]:
        return None
    return (f"the fabric installer's NCCL {text(installer)} ({lib}) is older than the NCCL "
            f"{text(torch_nccl)} torch was built with: preloaded, every rank would die at "
            "`import torch` on a missing NCCL symbol, so it was not preloaded and the fabric "
            f"is untested; upgrade the fabric's NCCL installer to NCCL >= "
            f"{torch_nccl[0]}.{torch_nccl[1]} (GKE: the nccl-*-installer DaemonSet's image), "
            f"or run an image whose torch was built with NCCL <= {installer[0]}.{installer[1]} "
            "(--image torch=...)")
