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
