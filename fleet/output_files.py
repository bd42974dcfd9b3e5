"""Writing a report file the user named (`--junit`, `--html`, `--out`, a plan): one `save`
for the CLI and smoke's report writers alike."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def save(path: Path, text: str) -> str | None:
    """Write `text` to `path`, creating its parent directories; the problem in words (to
    report after the results are shown, so that nothing measured is lost), or None. A regular
    file is replaced whole or not at all (`write_atomic`: an interrupt or a full disk leaves
    the old file, never half of the new one); a link is written through, never replaced; a
    FIFO nobody reads is refused, never waited on."""
    try:
        target = Path(os.path.realpath(path))  # through a symlink, never over it
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)
    except OSError as exc:
        return f"cannot write {path}: {os_reason(exc)}"
    return None


def os_reason(exc: OSError) -> str:
    """Why a write failed, in words (a FIFO with no reader answers ENXIO: 'No such device or
    address' would say nothing to a user)."""
    if exc.errno == errno.ENXIO:
        return "it is a FIFO (named pipe) nobody reads: writing would wait forever"
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is longer than the file system allows"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return str(exc.strerror or exc)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text`: a temporary file in the same directory, fsync'd, renamed over
    it (its permissions kept), the directory fsync'd. A path that is not a regular file (a
    device such as /dev/null, a FIFO) is written through, never renamed over: what the user
    named stays what it was."""
    try:
        info = path.stat()
    except FileNotFoundError:
        mode = 0o644
    else:
        if not stat.S_ISREG(info.st_mode):
            write_through(path, text)
            return
        mode = stat.S_IMODE(info.st_mode)
    # a short prefix: the temporary name stays inside NAME_MAX for a name near it
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def write_through(path: Path, text: str) -> None:
    """Write `text` into an existing non-regular file (a device, a FIFO with a reader) in
    place; OSError when it cannot be (a FIFO nobody reads: ENXIO, never a hang)."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        os.set_blocking(fd, True)
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def between_markers(doc: str, begin: str, end: str, text: str) -> str:
    """`doc` with what stands between the markers `begin` and `end` replaced by `text` (a
    generated part of a docs page: the command reference, the thresholds table)."""
    head, sep, rest = doc.partition(begin)
    if not sep or end not in rest:
        raise ValueError(f"the document lacks the markers {begin!r} ... {end!r}")
    return f"{head}{begin}\n{text}\n{end}{rest.partition(end)[2]}"
