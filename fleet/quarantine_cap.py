"""The quarantine cap's one parsing rule: a count of nodes (`3`) or a share of the pool
(`10%`). `accelfleet smoke run --max-quarantine` (smoke.cluster.quarantine.Cap) and a pool's
`gate.max_quarantine` (fleet.spec.fields.PoolGate) both read it here.

Stdlib only and importing nothing of accelfleet, so every layer may use it.
"""

from __future__ import annotations

DEFAULT_CAP = "10%"  # of each pool, when nobody says otherwise


def parse_cap(text: str) -> tuple[int | None, float | None] | None:
    """(count, percent) of a cap, exactly one of them set; None when `text` is neither a count
    of 1 or more nor a percentage in (0, 100]."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            pct = float(raw[:-1])
            if 0 < pct <= 100:
                return None, pct
        elif int(raw) >= 1:
            return int(raw), None
    except ValueError:
        pass
    return None
