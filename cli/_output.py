"""Small output helpers shared by the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli._terminal import echo

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console
    from rich.table import Table


PIPE_WIDTH = 200  # columns when stdout is no terminal and COLUMNS is unset: logs, files, CI


def console(*, stderr: bool = False, **options: Any) -> Console:
    """A console as wide as the terminal (or $COLUMNS); piped output is not squeezed to 80.
    Tables fold long values onto more lines rather than cutting them. Every text it prints is
    made safe for a terminal (cli/_terminal.py); `options` are Rich Console's, over these."""
    import os
    import sys

    from cli._terminal import safe_console

    width = None
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    settings: dict[str, Any] = {"highlight": False, "soft_wrap": False, "width": width,
                                "stderr": stderr}
    out = safe_console(**(settings | options))
    out.on_broken_pipe = _pipe_closed  # type: ignore[method-assign]
    return out


def _pipe_closed() -> None:
    """Rich's answer to a closed stdout (`accelfleet catalog list | head`) is exit 1; the
    command's own handler (cli._errors) ends it quietly with exit 0 instead."""
    raise BrokenPipeError


def terminal_width() -> int | None:
    """The width to fit: a terminal's, or $COLUMNS; None when output goes to a pipe or a file
    with no COLUMNS set (lines are then left whole for tools to read)."""
    import os
    import sys

    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return console().width
    return None


def print_json(data: Any) -> None:
    """`data` as strict JSON: an infinite or NaN figure is written as the text "inf", "-inf"
    or "nan" (JSON has no such numbers; Python would write the invalid `Infinity`). Control
    and bidi characters in a string are JSON's escapes (`\\u001b`, `\\u202e`), never raw."""
    echo(json_text(data))


def json_text(data: Any, indent: int | None = 2) -> str:
    """`data` as strict JSON that is safe on a terminal: json.dumps escapes every control
    character but DEL (it is ASCII), and, with ensure_ascii, every non-ASCII one (C1, bidi);
    DEL is escaped here (only a string can hold it: JSON's own syntax is printable)."""
    text = json.dumps(json_safe(data), indent=indent, sort_keys=True, allow_nan=False,
                      ensure_ascii=True)
    return text.replace("\x7f", "\\u007f")


def json_safe(data: Any) -> Any:
    """A copy of `data` with every non-finite float as its text."""
    import math

    if isinstance(data, float) and not math.isfinite(data):
        return str(data)
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [json_safe(v) for v in data]
    return data


def writable(path: Path | None, *, directory: bool = False,
             reads: Iterable[tuple[str, Path | None]] = ()) -> None:
    """Refuse, before any work, an output path that cannot be written: a file path that is a
    directory, a socket or a block device, a directory path that is a file, a place under a
    file or without write permission, a path the system cannot take (too long). Missing
    parents are fine: `save` creates them. (A FIFO passes: whether anyone reads it is known
    only by opening it, which would end a waiting reader's input; `save` refuses one nobody
    reads, never waits on it.) `reads` names the files the same command reads, in words
    (`("the stack file", path)`): an output that is one of them would overwrite it."""
    import os

    from fleet.errors import InputError
    from fleet.output_files import os_reason

    if path is None:
        return
    for words, read in reads:
        if read is not None and os.path.realpath(read) == os.path.realpath(path):
            raise InputError(f"cannot write {path}: it is {words} this command reads "
                             "(writing it would overwrite it)",
                             hint="write to another file")
    try:
        _writable(path, directory=directory)
    except OSError as exc:  # a name too long, a loop of links, a parent we may not search
        raise InputError(f"cannot write {path}: {os_reason(exc)}",
                         hint="give another path") from None


def _writable(path: Path, *, directory: bool) -> None:
    import os
    import stat

    from fleet.errors import InputError
    from fleet.input_files import file_kind

    if path.is_symlink() and not path.exists():
        raise InputError(f"cannot write {path}: it is a symbolic link to "
                         f"{os.readlink(path)}, which does not exist",
                         hint="remove the link, or give another path")
    mode = path.stat().st_mode if path.exists() else 0
    if directory and path.exists() and not path.is_dir():
        raise InputError(f"cannot write into {path}: it is {file_kind(mode)}, not a "
                         "directory",
                         hint="give a directory (it is created if missing)")
    if not directory and (stat.S_ISSOCK(mode) or stat.S_ISBLK(mode)):
        raise InputError(f"cannot write {path}: it is {file_kind(mode)}", hint="name a regular "
                         "file (or a character device such as /dev/null)")
    if not directory and path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory", hint="name a file in it, "
                         f"e.g. {path / 'out.json'}")
    probe = path if directory else path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"cannot write {path}: {probe} is a file, not a directory",
                         hint="choose a path whose parents are directories")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: no permission to write in {probe}",
                         hint="choose a directory you can write to")


def print_table(out: Console, table: Table, compact: Table | None = None,
                compact_min_width: int = 120) -> None:
    """The table when it fits the console's width; else the `compact` table (fewer columns,
    long cells folded) on a console at least `compact_min_width` wide; otherwise one block per
    row, each column's name and value on a line of its own, so a narrow terminal never cuts a
    value a user needs (a zone list, a reservation name)."""
    from rich.measure import Measurement
    from rich.text import Text

    natural = Measurement.get(out, out.options.update_width(100_000), table).maximum
    if natural <= out.width:
        out.print(table)
        return
    if compact is not None and out.width >= compact_min_width:
        out.print(compact)
        return
    if table.title:
        out.print(Text.from_markup(str(table.title), style="bold"))  # a title is markup
    names = [str(c.header) for c in table.columns]
    label = max((len(n) for n in names), default=0)
    columns = [list(c.cells) for c in table.columns]
    for i in range(table.row_count):
        out.print()
        for name, cells in zip(names, columns, strict=True):
            value = cells[i]
            text = value if isinstance(value, Text) else Text.from_markup(str(value))
            out.print(Text(f"{name:>{label}}  ", style="dim") + text, overflow="fold")
