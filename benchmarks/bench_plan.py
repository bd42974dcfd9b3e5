"""How long does `accelfleet plan` take? The example fleet, and a generated 200-pool GCP fleet.

    .venv/bin/python benchmarks/bench_plan.py [--pools 200] [--repeats 3]

Prints, separately: the top-level import of pulumi + pulumi_gcp + pulumi_kubernetes in a fresh
interpreter (pulumi_gcp loads its submodules lazily, so the first plan of a process also pays
for the ones it touches: shown as "first run"), then the plan itself (program under Pulumi's
mocks, recording, JSON) for each fleet: first, best and median of `--repeats` in-process runs.
Target: the 200-pool plan under 30 s. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

IMPORTS = "import pulumi, pulumi_gcp, pulumi_kubernetes, pulumi_gcp.container, pulumi_gcp.compute"


def import_seconds() -> float:
    code = f"import time; t = time.perf_counter(); {IMPORTS}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    return float(out.stdout.strip())


def write_stack(pools: int, directory: Path) -> Path:
    from benchmarks.fleets import generated_fleet

    spec = generated_fleet(pools, clouds=("gcp",))
    spec["clusters"] = [c for c in spec["clusters"] if c["cloud"] == "gcp"]
    del spec["clouds"]["aws"]
    path = directory / f"Pulumi.gen{pools}.yaml"
    # JSON is YAML: the stack file is plain Pulumi config.
    path.write_text(json.dumps({"config": {"gcp:project": "acme-bench",
                                           "accelfleet:fleet": spec}}))
    return path


def time_plan(path: Path, repeats: int) -> tuple[float, float, float, int]:
    from components.engine.plan import run_plan

    times, count = [], 0
    for _ in range(repeats):
        t = time.perf_counter()
        result = run_plan(path)
        result.to_json()
        times.append(time.perf_counter() - t)
        count = sum(1 for r in result.resources if r.custom)
    return times[0], min(times), statistics.median(times), count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from fleet.stack.read import EXAMPLE_STACK

    print(f"import pulumi + pulumi_gcp + pulumi_kubernetes (fresh process): "
          f"{import_seconds():.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        generated = write_stack(args.pools, Path(tmp))
        for label, path in (("example fleet", EXAMPLE_STACK),
                            (f"generated {args.pools} GCP pools", generated)):
            first, best, median, count = time_plan(path, args.repeats)
            print(f"plan {label}: {count} resources; first run {first:.2f} s (loads the "
                  f"provider modules it uses), best {best:.2f} s, median {median:.2f} s "
                  f"over {args.repeats} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
