"""A test's patience: poll until something is true, never a timed assertion."""

from __future__ import annotations

import time
from typing import Any


def wait_for(what: Any, timeout_s: float = 60.0, every_s: float = 0.05) -> Any:
    """Poll `what()` until it is truthy and return it; fail after `timeout_s`."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(every_s)
    raise AssertionError(f"still not true after {timeout_s} s: {what}")
