#!/bin/bash
# The GPU checks a session runs on a lent accelerator machine (one host), in one call:
# what NVML and nvidia-smi say of the links, every tier of `accelfleet smoke local` with each
# backend (the sustained phase included), a real NCCL INFO init read by `smoke nccl-log`, the
# installer-NCCL version check against the real library, and the probe-fidelity benchmark.
#
#   OUT=/tmp/out EXPECT=a3-highgpu-1g bash benchmarks/gpu_host_run.sh
#
# Wheels the machine lacks (pydantic, ruamel.yaml: `accelfleet` needs them, the in-pod agent
# does not) may be put in .whl/ beside the repository root; they are installed to /tmp/site.
# Not part of the test run. First used 2026-11-27 on one H100 80GB HBM3 (figures in the notes).
set -u
OUT=${OUT:?set OUT to a folder for the results}
EXPECT=${EXPECT:-}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
T0=$(date +%s)
step() { echo; echo "=== $* (t=$(( $(date +%s) - T0 ))s)"; }
expect=(); [ -n "$EXPECT" ] && expect=(--expect "$EXPECT")

step host; date -u; uname -r; nvidia-smi; nvidia-smi topo -m
step nvlink; nvidia-smi nvlink -s; echo "rc=$?"
timeout 30 python3 - <<'PY'
import pynvml
pynvml.nvmlInit()
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    for link in range(18):
        try:
            print("gpu", i, "link", link, "state", pynvml.nvmlDeviceGetNvLinkState(h, link))
        except Exception as exc:
            print("gpu", i, "link", link, "error", type(exc).__name__, exc)
PY
for backend in torch jax; do
    step "smoke local $backend"
    timeout 240 python3 -m cli smoke local --backend "$backend" "${expect[@]}" --json \
        --no-history --html "$OUT/$backend.html" > "$OUT/$backend.json"; echo "rc=$?"
done
step "NCCL INFO init"
rm -rf /tmp/nccl; mkdir -p /tmp/nccl
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV NCCL_DEBUG_FILE=/tmp/nccl/nccl.%h.%p.log \
    timeout 90 python3 -m smoke.probes._torch_dist --rank 0 --world 1 --port 29511 \
    --backend nccl --mib 256; echo "rc=$?"
cat /tmp/nccl/*.log > "$OUT/nccl-info.log"
timeout 60 python3 -m cli smoke nccl-log "$OUT/nccl-info.log"; echo "rc=$?"
step "installer NCCL version"
timeout 60 python3 - <<'PY'
import os
import nvidia.nccl
from smoke.probes import _nccl_version as NV
d = os.path.join(list(nvidia.nccl.__path__)[0], "lib")
lib = os.path.join(d, sorted(os.listdir(d))[0])
v, how = NV.installer_version(lib)
print(lib, v, how, "torch", NV.torch_version(), "refusal", NV.refusal(lib, v, NV.torch_version()))
PY
for backend in torch jax; do
    step "fidelity $backend"
    timeout 120 python3 benchmarks/bench_probe_fidelity.py --backend "$backend" --rounds 3
    echo "rc=$?"
done
step done
