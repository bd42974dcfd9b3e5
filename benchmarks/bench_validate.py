"""Time `validate_fleet` (parse + rules + catalog resolution) on generated fleets.

    .venv/bin/python benchmarks/bench_validate.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fleets import generated_fleet
from fleet import validate_fleet
from fleet.catalog import load_catalog


def main() -> None:
    t0 = time.perf_counter()
    load_catalog()
    print(f"catalog load: {time.perf_counter() - t0:.3f} s")
    for n in (10, 200, 1000):
        spec = generated_fleet(n)
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            validate_fleet(spec)
            runs.append(time.perf_counter() - t)
        print(f"validate {n:5d} pools: median {statistics.median(runs) * 1000:8.1f} ms "
              f"(min {min(runs) * 1000:.1f} ms, 5 runs)")


if __name__ == "__main__":
    main()
