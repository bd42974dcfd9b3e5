"""`accelfleet smoke report`: render a saved run again (its table, HTML report, JUnit XML),
from the run.json `smoke run --out DIR` keeps, or what `smoke run --json` / `smoke local
--json` printed: a CI run's proof, read on a laptop from the artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli._errors import command
from cli._terminal import echo


@command
def report(
    run_file: Annotated[Path, typer.Argument(
        metavar="RUN_FILE", help="A saved run: the run.json of `smoke run --out DIR` (a CI "
        "artifact), or the output of `smoke run --json` or `smoke local --json`.",
        show_default=False)],
    html: Annotated[Path | None, typer.Option(
        "--html", metavar="FILE", help="Write the run as one self-contained HTML report "
        "(opens with no network).", show_default=False)] = None,
    junit: Annotated[Path | None, typer.Option(
        "--junit", metavar="FILE", help="Write the run as JUnit XML (a testsuite per pool, a "
        "testcase per node and probe).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the run document instead of the table.")] = False,
) -> None:
    """Show a saved smoke run (its table, summary and what quarantine did) and write it again
    as an HTML report or JUnit XML. Reads the file only: no cluster, no history.

    Exit 0 when the saved run passed; 1 when it failed, was interrupted or tested nothing (as
    `smoke run` exited); 2 for a file that is no saved run, or an output that cannot be
    written.
    """
    from cli._output import writable
    from cli.smoke import show_run
    from fleet.errors import CheckFailed, InputError
    from smoke.reports.files import save_all
    from smoke.reports.saved import load_saved
    from smoke.session import SmokeResult

    reads = (("the saved run", run_file),)
    writable(html, reads=reads)
    writable(junit, reads=reads)
    saved = load_saved(run_file)
    files: dict[Path, str] = {}
    if html is not None:
        from smoke.reports.html import render_html

        files[html] = render_html(saved.run, quarantine=saved.quarantine)
    if junit is not None:
        from smoke.reports.junit import junit as junit_xml

        files[junit] = junit_xml(saved.run)
    kept = save_all(files)
    result = SmokeResult(saved.run, quarantine=saved.quarantine, read=str(run_file))
    show_run(result, as_json=as_json)
    for path in kept.written:
        echo(f"wrote {path}", err=as_json)
    if kept.problems:
        raise InputError("; ".join(kept.problems), hint="choose writable paths for --html "
                         "and --junit")
    if not result.ok:
        lines = (["the run was interrupted (ctrl-C or SIGTERM) before it finished"]
                 if saved.run.cancelled else []) + result.problems()
        raise CheckFailed(f"the saved run {saved.run.run_id} failed: {len(lines)} "
                          "problem(s):\n  " + "\n  ".join(lines[:50]),
                          hint="each reason is in the table above; the HTML report (--html) "
                          "charts every device against its floor")
