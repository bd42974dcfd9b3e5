"""Writing a pool change into a stack file: every byte the change does not touch stays as it was.

How: ruamel.yaml's round-trip parser (`YAML()`, rt mode) gives the line and column of every node
of the file; the change is spliced into the text at those places (a new pool after the last one,
a value replaced where it stands, a pool's lines and its own heading comment taken out), with
new nodes rendered by ruamel. Comments, blank lines, key order and quoting elsewhere are the
file's own, byte for byte (a dump of the whole tree would move the comments ruamel attaches to
a neighbouring node: the one before `prices:` would land between the pools). The new text is
parsed again, and its fleet must equal the change's fleet exactly, or nothing is written.

Writes are atomic and serialised: an exclusive `fcntl.flock` on a sidecar lock file
(`.Pulumi.<stack>.yaml.lock`, next to the stack) is held while the file is read, the change
decided and the new text written to a temporary file in the same directory (fsync'd), which
then replaces the stack with `os.replace` (the directory fsync'd too). Concurrent requests queue
on the lock and each sees the others' pools; a reader sees the old file or the new, never a
half-written one.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any

from fleet.errors import InputError, StackFileError
from fleet.output_files import write_atomic as write_atomic  # its home; kept importable here
from fleet.requests.edits import REMOVE
from fleet.requests.request import Change
from fleet.stack.read import CONFIG_KEY, MAX_STACK_BYTES, fleet_config, parse_stack_text

LOCK_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Edit:
    """A change and the stack file's text before and after it."""

    path: Path
    change: Change
    old_text: str
    new_text: str
    written: bool


def lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


@contextmanager
def locked(path: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the stack's sidecar lock (exclusive); wait up to `timeout_s` for it."""
    where = lock_path(path)
    try:
        fd = os.open(where, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(f"cannot lock {path}: {where}: {exc.strerror or exc}",
                         hint="run where you may write next to the stack file, or use "
                         "--patch FILE to write the change as a diff instead") from None
    try:
        deadline, pause = time.monotonic() + timeout_s, 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InputError(
                        f"{path} is being changed by another request (its lock {where} was "
                        f"held for over {timeout_s:.0f} s)",
                        hint="run the command again once the other request is done") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def read_text(path: Path) -> str:
    """The stack's text exactly as stored: line endings kept (a CRLF file stays CRLF outside
    the edit), bounded and refused in words as `fleet validate` reads it."""
    from fleet.input_files import read_text as read_bounded

    try:
        return read_bounded(path, what="stack file", max_bytes=MAX_STACK_BYTES,
                            hint="pass the path of a stacks/Pulumi.<stack>.yaml file")
    except StackFileError:
        raise
    except InputError as exc:
        raise StackFileError(exc.message, hint=exc.hint) from None


def fleet_of(text: str, source: str) -> dict[str, Any]:
    """The `accelfleet:fleet` mapping of a stack's text (bounded, as `fleet validate` reads)."""
    if len(text.encode("utf-8")) > MAX_STACK_BYTES:
        raise StackFileError(f"{source} is over {MAX_STACK_BYTES // 2**20} MiB",
                             hint="a stack file may hold at most 2 MiB: split the fleet")
    return fleet_config(parse_stack_text(text, source), source)


def edit_stack(path: Path, decide: Callable[[dict[str, Any]], Change], *, write: bool,
               text: str | None = None) -> Edit:
    """Decide a change on the stack's fleet and render it into the file's text; with `write`,
    under the lock, replace the file atomically. `text`: edit this text instead of the file's
    (a git revision's), never written."""
    target = Path(os.path.realpath(path))
    if text is not None or not write:
        old = text if text is not None else read_text(target)
        change = decide(fleet_of(old, str(path)))
        return Edit(target, change, old, render(old, change, str(path)), False)
    with locked(target):
        old = read_text(target)
        change = decide(fleet_of(old, str(path)))
        new = render(old, change, str(path))
        if not change.changes_nothing:
            try:
                write_atomic(target, new)
            except OSError as exc:  # a read-only folder (its lock file may be writable), a
                # full disk: the stack is as it was (the new text went to a temporary file)
                raise InputError(f"cannot write {path}: {exc.strerror or exc} (in "
                                 f"{target.parent})", hint="run where you may write the "
                                 "stack's folder, or use --patch FILE to write the change "
                                 "as a diff instead") from None
    return Edit(target, change, old, new, not change.changes_nothing)


# -- rendering ---------------------------------------------------------------------------------
def render(text: str, change: Change, source: str) -> str:
    """The stack's text with `change` spliced in; checked against the change's fleet."""
    if change.changes_nothing:
        return text
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedSeq

    doc = YAML().load(text)
    fleet = doc["config"][CONFIG_KEY]
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    newline = "\r\n" if "\r\n" in text else "\n"
    pools = fleet.get("pools")
    if isinstance(pools, CommentedSeq) and len(pools) and pools.fa.flow_style():
        raise InputError(f"{source}: `pools` is written in flow style ([...])",
                         hint="write the pools as a block list (`- name: ...` lines); "
                         "accelfleet edits block-style pool lists only")
    if change.action == "add":
        assert change.entry is not None
        _add(lines, fleet, change.entry, newline)
    elif change.action == "remove":
        _remove(lines, fleet, _index(pools, change.name), newline)
    else:
        _update(lines, pools[_index(pools, change.name)], change.updates, newline)
    new = "".join(lines)
    if fleet_of(new, source) != change.spec:
        raise RuntimeError(f"the edit of {source} would not hold the intended fleet; nothing "
                           "was written")
    return new


def _index(pools: Any, name: str) -> int:
    return next(i for i, p in enumerate(pools) if isinstance(p, Mapping) and p.get("name") == name)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _span(lines: list[str], start: int, col: int) -> int:
    """The last line of the node starting on line `start` at column `col`: every later line
    indented deeper (and comments so indented) belongs to it; blank lines never end it."""
    last = start
    for j in range(start + 1, len(lines)):
        stripped = lines[j].strip()
        if not stripped:
            continue
        if _indent(lines[j]) <= col:
            break
        last = j
    return last


def _heading(lines: list[str], start: int, col: int) -> int:
    """The first line of the comments right above line `start` at column `col` (its own
    heading comment), or `start`."""
    head = start
    while head > 0 and _is_comment(lines[head - 1]) and _indent(lines[head - 1]) == col:
        head -= 1
    return head


def _item_lines(entry: Mapping[str, Any], dash_col: int, step: int, newline: str) -> list[str]:
    from ruamel.yaml import YAML

    y = YAML()
    y.default_flow_style = False
    y.width = 4096
    y.indent(mapping=2, sequence=step, offset=0)
    out = io.StringIO()
    y.dump([dict(entry)], out)
    return [" " * dash_col + line + newline for line in out.getvalue().splitlines()]


def _add(lines: list[str], fleet: Any, entry: Mapping[str, Any], newline: str) -> None:
    pools = fleet.get("pools")
    if pools is not None and len(pools) > 0:
        dash_col = pools.lc.col
        content_col = pools.lc.item(0)[1]
        step = content_col - dash_col
        last_line = pools.lc.item(len(pools) - 1)[0]
        end = _span(lines, last_line, dash_col)
        head = _heading(lines, last_line, dash_col)
        spaced = head > 0 and not lines[head - 1].strip()  # the file's pools are spaced out
        block = ([newline] if spaced else []) + _item_lines(entry, dash_col, step, newline)
        lines[end + 1:end + 1] = block
        return
    key_line, key_col = fleet.lc.key("pools") if pools is not None else (None, None)
    item_col = (key_col or fleet.lc.col) + 2
    block = _item_lines(entry, item_col, 2, newline)
    if key_line is not None:  # `pools:` or `pools: []`: the items replace the empty value
        lines[key_line] = _empty_value(lines[key_line], "pools", newline)
        lines[key_line + 1:key_line + 1] = block
        return
    col = fleet.lc.key(next(iter(fleet)))[1]
    last = max(_span(lines, fleet.lc.key(k)[0], col) for k in fleet)
    lines[last + 1:last + 1] = [" " * col + "pools:" + newline, *block]


def _empty_value(line: str, key: str, newline: str, value: str = "") -> str:
    """`key: []  # note` -> `key:<value>  # note` (a key whose value is empty or `[]`)."""
    m = re.match(rf"^(\s*{re.escape(key)}:)\s*(\[\s*\]|~|null)?(\s*#.*)?\s*$", line.rstrip("\r\n"))
    if m is None:
        raise InputError(f"cannot edit the line {line.strip()!r}",
                         hint=f"write `{key}:` on a line of its own")
    return f"{m[1]}{value}{m[3] or ''}{newline}"


def _remove(lines: list[str], fleet: Any, index: int, newline: str) -> None:
    pools = fleet["pools"]
    dash_col = pools.lc.col
    start = pools.lc.item(index)[0]
    head, end = _heading(lines, start, dash_col), _span(lines, start, dash_col)
    del lines[head:end + 1]
    if head < len(lines) and not lines[head].strip() and (head == 0 or not
                                                          lines[head - 1].strip()):
        del lines[head]  # no double blank line where the pool was
    if len(pools) == 1:
        key_line = fleet.lc.key("pools")[0]
        lines[key_line] = _empty_value(lines[key_line], "pools", newline, " []")


def _update(lines: list[str], pool: Any, updates: Mapping[str, Any], newline: str) -> None:
    """Set keys of one pool in place, bottom of the file first so that line numbers hold."""
    key_col = pool.lc.key(next(iter(pool)))[1]
    edits: list[tuple[float, Callable[[], None]]] = []
    for key, value in updates.items():
        if key in pool and value is REMOVE:
            edits.append((pool.lc.key(key)[0], partial(_delete, lines, pool.lc.key(key)[0],
                                                       key_col)))
        elif key in pool:
            line, col = pool.lc.value(key)
            if line != pool.lc.key(key)[0] or isinstance(value, dict):
                edits.append((line, partial(_replace_node, lines, pool, key, value, key_col,
                                            newline)))
            else:
                edits.append((line, partial(_replace_scalar, lines, line, col, value)))
        elif value is not REMOVE:
            after = next((k for k in ("topology", "accelerator") if k in pool),
                         next(iter(pool)))
            anchor = _span(lines, pool.lc.key(after)[0], key_col)
            text = " " * key_col + f"{key}: {_value_text(value, None)}" + newline
            edits.append((anchor + 0.5, partial(lines.insert, anchor + 1, text)))
    for _line, apply in sorted(edits, key=lambda e: e[0], reverse=True):
        apply()


def _delete(lines: list[str], line: int, key_col: int) -> None:
    del lines[line:_span(lines, line, key_col) + 1]


def _replace_node(lines: list[str], pool: Any, key: str, value: Any, key_col: int,
                  newline: str) -> None:
    line = pool.lc.key(key)[0]
    end = _span(lines, line, key_col)
    lines[line:end + 1] = [" " * key_col + f"{key}: {_value_text(value, None)}" + newline]


def _replace_scalar(lines: list[str], line: int, col: int, value: Any) -> None:
    text = lines[line]
    old, end = _token(text, col)
    lines[line] = text[:col] + _value_text(value, old[:1] if old[:1] in "\"'" else None) + \
        text[end:]


def _token(line: str, col: int) -> tuple[str, int]:
    """The scalar or one-line flow collection at `col`, and where it ends."""
    rest = line[col:].rstrip("\r\n")
    if rest[:1] == '"':
        m = re.match(r'"(?:[^"\\]|\\.)*"', rest)
    elif rest[:1] == "'":
        m = re.match(r"'(?:[^']|'')*'", rest)
    elif rest[:1] in "[{":
        m = re.match(r"[\[{][^\]}]*[\]}]", rest)
    else:
        m = re.match(r"(?:[^#\s]|\s+(?!#)\S)*", rest)
    assert m is not None
    return m[0], col + m.end()


def _value_text(value: Any, quote: str | None) -> str:
    """A value as the file would write it: a scalar keeping the old quote style, a mapping as
    a flow mapping (`{min_nodes: 0, max_nodes: 32}`)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value_text(v, None)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, date)):
        return str(value) if isinstance(value, int) else value.isoformat()
    text = str(value)
    if quote == '"':
        return json.dumps(text)
    if quote == "'":
        return "'" + text.replace("'", "''") + "'"
    from ruamel.yaml import YAML

    out = io.StringIO()
    y = YAML()
    y.width = 4096
    y.dump({"k": text}, out)
    return out.getvalue().strip()[len("k: "):]
