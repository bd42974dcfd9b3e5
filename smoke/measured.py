"""The smoke history's measured figures per accelerator, as `advise` reads them: the medians of
each accelerator's nodes over their recent runs (fleet.advise.MeasuredFigures).

    figures, where = read_measured(None)   # the default history, when it exists
    figures["h100"].tflops                 # the measured bf16 matmul TFLOP/s per device
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet.advise import MeasuredFigures
    from smoke.history import Trend

HISTORY_WINDOW = 10  # each node's last runs the measured medians are over


def read_measured(path: Path | None, window: int = HISTORY_WINDOW
                  ) -> tuple[dict[str, MeasuredFigures] | None, str | None]:
    """Measured medians per accelerator key, and the history's path: `path`, or the default
    history; (None, None) when no path is given and the default history does not exist
    (datasheet figures everywhere). A named history that cannot be read raises."""
    from smoke.history import History, default_path

    where = path or default_path()
    if path is None and not where.exists():
        return None, None
    with History.open(where, create=False) as h:
        trends = h.trends(window=window)
    return measured_medians(trends), str(where)


def measured_medians(trends: list[Trend]) -> dict[str, MeasuredFigures]:
    """Per accelerator: the median of its nodes' figures over their recent runs (each point a
    node's median over its devices in one run), and how many runs they come from. Figures
    of one backend only (torch's and JAX's are not one series): the backend with the most
    runs of the accelerator."""
    from fleet.advise import MeasuredFigures
    from smoke.probes import names as P

    by_backend: dict[tuple[str, str], set[str]] = defaultdict(set)
    for trend in trends:
        if trend.probe == P.MATMUL:
            by_backend[(str(trend.accelerator).lower(), trend.backend)].update(
                p.run_id for p in trend.points if p.value is not None)
    chosen: dict[str, str] = {}
    for (key, backend), got in sorted(by_backend.items()):
        best = chosen.get(key)
        if best is None or len(got) > len(by_backend[(key, best)]):
            chosen[key] = backend
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    runs: dict[str, set[str]] = defaultdict(set)
    for trend in trends:
        key = str(trend.accelerator).lower()
        if chosen.setdefault(key, trend.backend) != trend.backend:
            continue
        for point in trend.points:
            if point.value is None:
                continue
            values[(key, trend.probe)].append(float(point.value))
            if trend.probe == P.MATMUL:
                runs[key].add(point.run_id)

    def median(key: str, probe: str) -> float | None:
        got = values.get((key, probe))
        return statistics.median(got) if got else None

    keys = {k for k, _ in values}
    return {k: MeasuredFigures(median(k, P.MATMUL), median(k, P.MEMORY),
                               len(runs[k]), median(k, P.ALLREDUCE))
            for k in keys if median(k, P.MATMUL) or median(k, P.MEMORY)}
