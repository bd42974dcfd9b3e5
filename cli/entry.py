"""The console entry point. `cli.main` is imported under a guard: Ctrl-C while Python loads it
(or anything it imports) ends as everywhere else, "interrupted" and exit 130, never a
traceback."""

from __future__ import annotations

import sys


def run() -> None:
    try:
        from cli.main import run as main
    except KeyboardInterrupt:
        from fleet.errors import EXIT_INTERRUPTED

        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    try:
        main()
    finally:  # what is still buffered, while a closed pipe (`| head`) can still end quietly
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            from cli._errors import reader_gone

            reader_gone()
