"""Turning accelfleet errors into words and exit codes, inside a command."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import ParamSpec, TypeVar

import typer

from cli._terminal import echo

P = ParamSpec("P")
R = TypeVar("R")

# Set by Ctrl-C (SIGINT) once `catch_interrupts` is on: whatever an interrupt leaves behind (a
# module half imported raising AttributeError, an exception raised while unwinding) still
# ends the command as interrupted, exit 130, never as an internal error.
INTERRUPTED = threading.Event()
SAID = threading.Event()  # "interrupted" was printed
# Set by the console entry point (cli.main.run), never in a test runner's process: a Ctrl-C
# then ends the process at once, "interrupted" and exit 130, with no exception unwound
# through whatever was running. An interrupt raised inside a native module's import or a
# library's thread pool can crash the interpreter (a SIGSEGV was seen once under load) or
# leave a thread Python's shutdown waits on forever; nothing a command does needs the unwind
# (files are saved atomically, SQLite keeps its journal, `smoke run`, `gate run` and `up`
# install their own handlers and clean up themselves).
HARD_EXIT = False


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    INTERRUPTED.set()
    if HARD_EXIT:
        _end_now()
    import logging  # an event loop cut short mid-step complains of its task ("Exception in

    # callback ... does not match the current task"): after a Ctrl-C that is noise
    logging.getLogger("asyncio").setLevel(logging.CRITICAL + 1)
    raise KeyboardInterrupt


def _end_now() -> None:
    import os
    import sys

    from fleet.errors import EXIT_INTERRUPTED

    try:
        sys.stdout.flush()
    except Exception:  # a closed or full pipe: nothing more to say there
        pass
    finally:
        os.write(2, b"interrupted\n")  # one constant word, straight to the terminal
        os._exit(EXIT_INTERRUPTED)


def _unraisable(hook: Callable[..., object]) -> Callable[..., object]:
    """Python's hook for exceptions it cannot raise (a weakref callback's, an import lock's),
    silent about the KeyboardInterrupt a Ctrl-C raised there: the command says
    "interrupted" itself."""

    def quiet(unraisable: object) -> object:
        if INTERRUPTED.is_set() and isinstance(getattr(unraisable, "exc_value", None),
                                               KeyboardInterrupt):
            return None
        return hook(unraisable)

    quiet.accelfleet = True  # type: ignore[attr-defined]
    return quiet


def catch_interrupts() -> None:
    """Note every Ctrl-C from now on (the command's start), then raise KeyboardInterrupt as
    Python does. Only on the main thread, and only over Python's own handler (a caller's
    handler, e.g. a test runner's, stays)."""
    import sys

    INTERRUPTED.clear()
    SAID.clear()
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _on_interrupt):
        signal.signal(signal.SIGINT, _on_interrupt)
        if not getattr(sys.unraisablehook, "accelfleet", False):
            sys.unraisablehook = _unraisable(sys.unraisablehook)  # type: ignore[assignment]


@contextmanager
def reported() -> Iterator[None]:
    """Print an AccelfleetError (message and hint, no traceback) and exit with its code; any
    other exception is a bug: one line naming it and where to report it, exit 3 (the
    traceback with ACCELFLEET_DEBUG=1). Ctrl-C exits 130."""
    try:
        yield
    except (typer.Exit, typer.Abort, SystemExit):
        raise
    except BrokenPipeError:
        raise typer.Exit(reader_gone()) from None
    except (Exception, KeyboardInterrupt) as exc:
        raise typer.Exit(report(exc)) from None
    if INTERRUPTED.is_set():  # an interrupt something swallowed: the command did not finish
        raise typer.Exit(report(KeyboardInterrupt()))


def report(exc: BaseException) -> int:
    """Say what went wrong, on stderr, and return the exit code it ends with: the one place an
    error becomes an exit code. An AccelfleetError says its message and hint and exits with its
    own code (fleet.errors); Ctrl-C exits 130; anything else is a bug (`internal_error`)."""
    from fleet.errors import AccelfleetError

    if isinstance(exc, AccelfleetError) and not INTERRUPTED.is_set():
        echo(f"error: {exc}", err=True)
    elif isinstance(exc, KeyboardInterrupt) or INTERRUPTED.is_set():
        echo("interrupted", err=True)
        SAID.set()
    else:
        internal_error(exc)
    return exit_code(exc)


def reader_gone() -> int:
    """The reader of stdout closed it (`accelfleet smoke render | head`): nothing more can
    be said there, and nothing went wrong; end quietly, exit 0. Whatever is still buffered
    goes to /dev/null, so that Python's own flush at exit does not fail a second time."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture)
        pass
    return 0


def exit_code(exc: BaseException) -> int:
    """The exit code an error ends a command with: an AccelfleetError's own (fleet.errors:
    2 bad input, 1 a failed check), 130 for Ctrl-C, 3 for anything else (a bug)."""
    from fleet.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, AccelfleetError

    if isinstance(exc, KeyboardInterrupt) or INTERRUPTED.is_set():
        return EXIT_INTERRUPTED
    if isinstance(exc, AccelfleetError):
        return exc.exit_code
    return EXIT_INTERNAL


def internal_error(exc: BaseException) -> None:
    """Say that an unexpected exception is a bug (exit 3), never a failed check (exit 1)."""
    import os
    import traceback

    from fleet.errors import REPORT_URL

    if os.environ.get("ACCELFLEET_DEBUG"):
        traceback.print_exception(exc)
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
    echo(f"internal error: {type(exc).__name__}: {exc}{where}\n  hint: this is a bug "
         f"in accelfleet, not a problem with your fleet; please report it at "
         f"{REPORT_URL} with the command you ran (ACCELFLEET_DEBUG=1 shows the "
         "traceback)", err=True)


def command(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of `reported()` for command functions; every path the command was given
    is checked first (`check_paths`)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with reported():
            check_paths(kwargs, fn)
            return fn(*args, **kwargs)

    return wrapper


def check_paths(params: dict[str, object], fn: Callable[..., object] | None = None) -> None:
    """Refuse, before any work, a path option or argument no system call could take (longer
    than the system allows, nested too deep, a NUL byte): exit 2 naming the option, never an
    OSError (ENAMETOOLONG) from wherever the path is first used."""
    from pathlib import PurePath

    from fleet.errors import InputError
    from fleet.input_files import path_problem, shown_path

    for name, value in params.items():
        for path in value if isinstance(value, list | tuple) else (value,):
            if not isinstance(path, PurePath):
                continue
            problem = path_problem(path)
            if problem is not None:
                raise InputError(f"{_option(fn, name)} {shown_path(path)}: {problem}",
                                 hint="give a shorter path (a relative one, or a link to a "
                                 "deep directory)")


def _option(fn: Callable[..., object] | None, name: str) -> str:
    """The option or argument a command parameter is, as the user sees it (`--out`, `FILE`),
    from the command function's Typer annotation."""
    import inspect

    from typer.models import ArgumentInfo, OptionInfo

    annotation = inspect.get_annotations(fn).get(name) if fn is not None else None
    if isinstance(annotation, str):  # `from __future__ import annotations`: this one alone
        try:
            annotation = eval(annotation, getattr(fn, "__globals__", {}))
        except Exception:  # a name only imported for type checking
            annotation = None
    for info in getattr(annotation, "__metadata__", ()):
        if isinstance(info, OptionInfo):  # Annotated: the first declaration is its `default`
            decls = [d for d in (info.default, *(info.param_decls or ()))
                     if isinstance(d, str) and d.startswith("-")]
            return decls[0] if decls else "--" + name.replace("_", "-")
        if isinstance(info, ArgumentInfo):
            return str(info.metavar or name.upper())
    return name
