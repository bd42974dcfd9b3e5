"""What reaches a terminal: text from a file, a cluster or a pod is made safe at the output
boundary, whatever message carries it.

A value a stack file, an API answer or a pod log holds may carry terminal control: an escape
sequence (CSI moves the cursor or repaints the screen, OSC 52 writes the reader's clipboard,
OSC 0 sets the window title), another control character (a carriage return that overwrites
what a line said, BEL), or a bidi override that shows text in another order than the bytes it
holds. Every C0 control but newline and tab, DEL, every C1 control and the bidi controls are
shown escaped (`\\x1b`, `\\u202e`), so the reader sees what the text holds and the terminal
obeys none of it. `echo` is the plain writer and `SafeConsole` the Rich one (the styles Rich
adds itself are left as they are: they are made after the text is escaped). Rich also reads
square brackets as markup: every such text printed through Rich goes through `literal` first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

# C0 but \t (09) and \n (0a); DEL and C1 (7f-9f); the bidi marks, embeddings, overrides and
# isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """`text` with every control character and bidi control shown escaped (`\\x1b`)."""
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(_escaped, text)


def literal(value: object) -> str:
    """`value` as Rich markup that prints it as written: a text from a stack, a cluster or a
    pod (an ARN list `[arn:aws:...]`, a contact `[bold]`, a reason `[/]`, `[link=...]`) printed
    through a Rich console or put in a Rich table is shown with its brackets, never read as a
    style, a link or a closing tag (which Rich refuses with a MarkupError)."""
    from rich.markup import escape

    return escape(str(value))


def echo(message: Any = "", *, err: bool = False, nl: bool = True) -> None:
    """typer.echo, made safe: the one plain writer of the CLI (stdout, or stderr with `err`)."""
    import typer

    typer.echo(safe(str(message)), err=err, nl=nl)


def echo_json(text: str, *, nl: bool = True) -> None:
    """A JSON document json.dumps wrote (ensure_ascii, its default: every control but DEL and
    every non-ASCII character already escaped), with DEL escaped as JSON escapes it (`\\u007f`:
    `echo` would write `\\x7f`, which JSON does not read)."""
    echo(text.replace("\x7f", "\\u007f"), nl=nl)


def safe_console(**kwargs: Any) -> Console:
    """A Rich console whose every rendered segment of text is made safe (`safe`); Rich's own
    control segments (cursor moves of a live display) and styles pass as Rich makes them."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def render(self, renderable: RenderableType,
                   options: ConsoleOptions | None = None) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                if segment.control or UNSAFE.search(segment.text) is None:
                    yield segment
                else:
                    yield Segment(safe(segment.text), segment.style, segment.control)

    return SafeConsole(**kwargs)
