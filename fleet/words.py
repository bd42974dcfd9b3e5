"""Money and numbers in words: the one set of formatters fleet's messages, the CLI and the
smoke reports share.

    usd(196224.0)                          # '$196,224'
    usd_span(0, 3284.2, estimate=True)     # '~$0..$3,284': a monthly cost is an estimate
    figure(801.24)                         # '801': a measured figure, 3 significant digits
    precise(642.17)                        # '642.2': a figure a record keeps (4 digits)

Rules: a sum of money is whole dollars with thousands grouped (cents below `cents_below`, a
rate per hour always); a figure that is computed from rates and hours (a monthly cost, a
range of them) is an estimate and carries `~` in tables and `about` in sentences, once, in
front; a budget or a rate the stack declares is exact and carries neither. No price is
"unpriced", never $0. Stdlib only and importing nothing of accelfleet.
"""

from __future__ import annotations

import math

UNPRICED = "unpriced"
ESTIMATE = "~"  # in front of an estimated sum (the sentence form is "about")


def usd(value: float | None, *, unpriced: str = UNPRICED, cents_below: float = 0.0,
        sign: bool = False) -> str:
    """`$1,234`; `$0.42` below `cents_below`; `+$100` / `-$100` with `sign`; `unpriced`."""
    if value is None:
        return unpriced
    digits = 2 if abs(value) < cents_below else 0
    text = f"${abs(value) if sign else value:,.{digits}f}"
    return f"{'+' if value >= 0 else '-'}{text}" if sign else text


def rate_usd(value: float) -> str:
    """A rate per hour: `$0.10` (always cents)."""
    return f"${value:.2f}"


def amount_span(low: float | None, high: float | None) -> str:
    """`1,234` or `0..5,678` with no dollar sign (a `$/month` column), or `unpriced`."""
    if low is None or high is None:
        return UNPRICED
    if round(low) == round(high):
        return f"{high:,.0f}"
    return f"{low:,.0f}..{high:,.0f}"


def usd_span(low: float | None, high: float | None, *, estimate: bool = False) -> str:
    """`$1,234` or `$0..$5,678` (`~` in front of an estimate), or `unpriced`."""
    if low is None or high is None:
        return UNPRICED
    span = usd(high) if round(low) == round(high) else f"{usd(low)}..{usd(high)}"
    return ESTIMATE + span if estimate else span


def figure(value: float | None) -> str:
    """A measured figure as people read it: 3 significant digits, thousands grouped, '-' for
    none; inf and nan as reported."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    if value != 0 and abs(value) < 0.01:
        return f"{value:.1e}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def precise(value: float | None) -> str:
    """A figure a record keeps (annotations, history): 4 significant digits, '-' for none."""
    return "-" if value is None else f"{value:,.4g}"


def duration(seconds: float) -> str:
    """1.72 s, 14 ms, 35 min, 18.3 h, 27.7 d."""
    if seconds < 1:
        return f"{seconds * 1000:,.3g} ms"
    if seconds < 120:
        return f"{seconds:,.3g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} d"


def count(value: float) -> str:
    """160B, 1.4T, 4.19M, 512."""
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:,.3g}{suffix}"
    return f"{value:,.0f}"


def num(value: float | None, fmt: str = "{:,.0f}") -> str:
    """A table cell's figure in `fmt`, or `-` when there is none."""
    return "-" if value is None else fmt.format(value)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and its noun, singular or plural: 1 rank, 300,000 ranks, 1 more setting."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def all_of(n: int, noun: str, plural: str | None = None) -> str:
    """Every one of `n` things, as people say it: all 8 devices, the one device."""
    return f"the one {noun}" if n == 1 else f"all {counted(n, noun, plural)}"
