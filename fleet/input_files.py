"""Reading the files a user hands accelfleet (stack files, base plans, stack outputs, workload
profiles, kubeconfigs, host reports), bounded and refused in words.

Every reader goes through `read_text`: only a regular file is read (a FIFO would block forever,
`/dev/zero` would read until memory runs out), and never more than its bound, checked before a
byte is parsed. Its `InputError` names the file, what it should be and the fix (exit 2).
`load_json` parses on top of it, refusing what Python's parser raises on hostile text
(integers over 4,300 digits, nesting past the recursion limit) the same way, and `problems_in`
turns a pydantic `ValidationError` of any file's schema into one line per problem.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from fleet.errors import InputError

if TYPE_CHECKING:
    from pydantic import ValidationError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


# Linux's limits (include/uapi/linux/limits.h, torvalds/linux, read 2026-11-27): PATH_MAX 4096
# bytes with the terminating NUL, NAME_MAX 255 bytes per name; every mainstream Linux file
# system (ext4, xfs, btrfs, tmpfs, overlayfs) holds names of at most 255 bytes.
PATH_MAX_BYTES = 4096
NAME_MAX_BYTES = 255


def path_problem(path: PurePath | str) -> str | None:
    """Why no system call could take `path`, from its text alone (no file system call, so it
    never blocks): a NUL byte, more bytes than PATH_MAX, or a name longer than NAME_MAX (a
    path nested too deep is one too long). None when the text is a possible path."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        return "the path holds a NUL byte, which no file name can"
    if len(raw) >= PATH_MAX_BYTES:
        return (f"the path is {len(raw):,} bytes long ({raw.count(b'/'):,} levels); the system "
                f"takes paths of at most {PATH_MAX_BYTES - 1:,}")
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX_BYTES:
        return (f"a name in the path is {len(longest):,} bytes long; a file or directory name "
                f"holds at most {NAME_MAX_BYTES}")
    return None


def shown_path(path: PurePath | str, limit: int = 80) -> str:
    """A path as a message shows it: whole when short, else its start and end around `...`."""
    text = str(path)
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-(limit // 2 - 3):]}"


def file_kind(mode: int) -> str:
    """`st_mode` in words: 'a FIFO (named pipe)', 'a character device', 'a file', ..."""
    if stat.S_ISREG(mode):
        return "a file"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def regular_or_absent(path: Path, *, what: str, hint: str) -> None:
    """Refuse a path that exists but is not a regular file (a FIFO blocks a reader forever,
    a device never ends), before another library opens it; a missing path is the caller's."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise InputError(f"{what} {path} is {file_kind(mode)}, not a regular file", hint=hint)


def read_bytes(path: Path, *, what: str, max_bytes: int, hint: str) -> bytes:
    """At most `max_bytes` of a regular file. The file is opened without blocking (a FIFO
    with no writer would block on open) and checked to be regular on the open descriptor
    before anything is read, so nothing can swap it between the check and the read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist", hint=hint) from None
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a directory, not a file",
                         hint=f"name a file in it; {hint}") from None
    except PermissionError:
        raise InputError(f"no permission to read {what} {path}",
                         hint="run as a user who may read it (chmod u+r), or copy it "
                         "somewhere you can") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read {what} {path}: {reason}",
                         hint="check the path: every part of it must exist and be a "
                         "directory but the file itself") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what} {path} is {file_kind(info.st_mode)}, not a regular file",
                             hint="save it to a file first (e.g. `cat ... > file`) and pass "
                             f"that; {hint}")
        if info.st_size > max_bytes:
            raise InputError(f"{what} {path} is {_size(info.st_size)}; it may hold at most "
                             f"{_size(max_bytes)}", hint=f"check that this is the file you "
                             f"meant; {hint}")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = max_bytes + 1  # a file that grew since fstat is still bounded
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}",
                         hint=hint) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise InputError(f"{what} {path} is over {_size(max_bytes)}",
                         hint=f"check that this is the file you meant; {hint}")
    return data


def read_text(path: Path, *, what: str, max_bytes: int, hint: str) -> str:
    """A regular file's UTF-8 text, at most `max_bytes` (see `read_bytes`)."""
    data = read_bytes(path, what=what, max_bytes=max_bytes, hint=hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                         f"offset {exc.start} cannot be read)",
                         hint=f"save it as UTF-8, or check that this is the right file; "
                         f"{hint}") from None


def parse_json(text: str, *, what: str, hint: str) -> Any:
    """JSON text parsed; InputError for what is not JSON, what nests past the recursion
    limit, integers over Python's 4,300 digits, and NaN or Infinity (not JSON)."""
    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not JSON: {exc.msg} at line {exc.lineno}, column "
                         f"{exc.colno}", hint=hint) from None
    except RecursionError:
        raise InputError(f"{what} nests its values too deeply to be read",
                         hint=hint) from None
    except ValueError as exc:  # integer digits limit, NaN / Infinity
        raise InputError(f"{what} holds a value JSON readers refuse: {str(exc)[:120]}",
                         hint=hint) from None


def load_json(path: Path, *, what: str, max_bytes: int, hint: str) -> Any:
    """A regular JSON file parsed (see `read_text` and `parse_json`)."""
    text = read_text(path, what=what, max_bytes=max_bytes, hint=hint)
    return parse_json(text, what=f"{what} {path}", hint=hint)


def shown(value: object, limit: int = 60) -> str:
    """A value as a message shows it: its repr, cut to `limit` characters."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an int over 4,300 digits has no repr
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


_WORDS = {"missing": "is required", "string_type": "must be text",
          "int_type": "must be a whole number", "int_parsing": "must be a whole number",
          "float_type": "must be a number", "float_parsing": "must be a number",
          "finite_number": "must be a finite number", "bool_type": "must be true or false",
          "list_type": "must be a list", "dict_type": "must be a mapping",
          "model_type": "must be a mapping", "model_attributes_type": "must be a mapping",
          "dataclass_type": "must be a mapping", "extra_forbidden": "is not a known field"}


def problems_in(exc: ValidationError, *, limit: int = 8, prefix: str = "") -> str:
    """A pydantic `ValidationError` as lines `  - field[0].path: what it must be (got
    value)`, the first `limit` of them and a count of the rest; `prefix` names where the
    validated value sits (`pools` for a list validated on its own)."""
    lines = []
    errors = exc.errors(include_url=False)
    for err in errors[:limit]:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        where = (prefix + where if prefix else where.removeprefix(".")) or "(the top level)"
        message = _WORDS.get(err["type"]) or str(err["msg"]).removeprefix("Value error, ")
        got = f" (got {shown(err['input'])})" if err["type"] != "missing" else ""
        lines.append(f"  - {where}: {message}{got}")
    if len(errors) > limit:
        lines.append(f"  - ... and {len(errors) - limit} more")
    return "\n".join(lines)


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:,} bytes"
