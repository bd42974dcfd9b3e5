"""Writing a report file the user named (`--junit`, `--html`, `--out`, a plan): one `save`
for the CLI and smoke's report writers alike."""

from __future__ import annotations

from pathlib import Path


def save(path: Path, text: str) -> str | None:
    """Write `text` to `path`, creating its parent directories; the problem in words (to
    report after the results are shown, so that nothing measured is lost), or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None


def between_markers(doc: str, begin: str, end: str, text: str) -> str:
    """`doc` with what stands between the markers `begin` and `end` replaced by `text` (a
    generated part of a docs page: the command reference, the thresholds table)."""
    head, sep, rest = doc.partition(begin)
    if not sep or end not in rest:
        raise ValueError(f"the document lacks the markers {begin!r} ... {end!r}")
    return f"{head}{begin}\n{text}\n{end}{rest.partition(end)[2]}"
