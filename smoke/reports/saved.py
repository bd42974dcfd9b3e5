"""A saved smoke run read back, to render again: the run document of `smoke run --json` or
`smoke run --out DIR` (`DIR/run.json`, with what quarantine did), and the host document of
`smoke local --json` (as a run of one pool, `local`, of one node, as `smoke local` keeps it).

    saved = load_saved(Path("smoke-out/run.json"))
    saved.run          # the RunReport
    saved.quarantine   # what quarantine did (None when the run quarantined nothing)
    saved.kind         # "run" or "host"
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smoke.cluster.quarantine import ActionReport
    from smoke.cluster.run import RunReport

MAX_BYTES = 256 * 1024 * 1024  # a run of thousands of nodes stays far below this
HINT = ("give the run.json of `accelfleet smoke run --out DIR`, or what `smoke run --json` "
        "or `smoke local --json` printed, saved to a file")


@dataclass(frozen=True)
class Saved:
    """A saved run: its report, what quarantine did, and which document it came from."""

    run: RunReport
    quarantine: ActionReport | None
    kind: str  # "run" (a cluster run) or "host" (`smoke local`)


def load_saved(path: Path) -> Saved:
    """The run saved in `path`; InputError (exit 2) naming the file for anything else."""
    from fleet.errors import InputError
    from fleet.input_files import load_json

    data = load_json(path, what="the saved smoke run", max_bytes=MAX_BYTES, hint=HINT)
    kind = data.get("kind") if isinstance(data, dict) else None
    try:
        return _saved(data, kind)
    except InputError as exc:
        raise InputError(f"{path}: {exc.message}", hint=exc.hint or HINT) from None


def _saved(data: Any, kind: object) -> Saved:
    from fleet.errors import InputError
    from smoke.cluster.quarantine import ActionReport
    from smoke.cluster.run import RUN_KIND, RunReport
    from smoke.probes.results import DOCUMENT_KIND, HostReport

    if kind == RUN_KIND:
        taken = data.get("quarantine")
        return Saved(RunReport.from_dict(data),
                     ActionReport.from_dict(taken) if taken is not None else None, "run")
    if kind == DOCUMENT_KIND:
        try:
            host = HostReport.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed smoke host document: {exc!r}", hint=HINT) from None
        return Saved(RunReport.of_host(host, "local"), None, "host")
    got = repr(kind) if kind is not None else f"no kind ({type(data).__name__})"
    raise InputError(f"not a saved smoke run: kind {got}, where {RUN_KIND!r} (a cluster "
                     f"run) or {DOCUMENT_KIND!r} (a `smoke local` host) was expected",
                     hint=HINT)
