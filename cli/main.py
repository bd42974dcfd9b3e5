"""The `accelfleet` command: one sub-app per noun, joined here. Imports stay lazy so that
`accelfleet --help` starts fast and never loads pulumi, torch or jax."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from cli import advise, catalog, fleet, gate, plan, pool, queue, smoke, up
from cli._examples import add_examples
from cli._terminal import echo
from cli._typer import App

app = App(
    name="accelfleet",
    rich_markup_mode="markdown",  # docstrings and help wrap as paragraphs, `code` shows as code
    help="Accelerator fleets as code: declare TPU slices and GPU pools, build them with Pulumi, "
    "and prove every chip performs.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)
app.add_typer(catalog.app, name="catalog")
app.add_typer(fleet.app, name="fleet")
app.add_typer(pool.app, name="pool")
app.add_typer(smoke.app, name="smoke")
app.add_typer(queue.app, name="queue")
app.add_typer(gate.app, name="gate")
COMPLETE_VAR = "_ACCELFLEET_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
if os.environ.get(COMPLETE_VAR):  # the shell asks for completions: Typer's own classes
    from typer._completion_classes import completion_init

    completion_init()


def _shells(incomplete: str) -> list[str]:
    """What the shell completes for `completion`'s argument (cli._complete for the rest)."""
    return [s for s in SHELLS if s.startswith(incomplete)]


@app.command()
def completion(shell: Annotated[str, typer.Argument(
        metavar="bash|zsh|fish", help="The shell to complete in.", show_default=False,
        autocompletion=_shells)]
               ) -> None:
    """Print the shell completion script of accelfleet (Typer's), for commands, options and
    their values.

    Examples:

        eval "$(accelfleet completion bash)"             # this shell; add it to ~/.bashrc
        accelfleet completion zsh > "${fpath[1]}/_accelfleet"
        accelfleet completion fish > ~/.config/fish/completions/accelfleet.fish

    Exit 0, or 2 for a shell it does not know.
    """
    from typer._completion_classes import completion_init
    from typer._completion_shared import get_completion_script

    from fleet.errors import InputError

    if shell not in SHELLS:
        from cli._errors import reported

        with reported():
            raise InputError(f"no completion for shell {shell!r}",
                             hint=f"use one of: {', '.join(SHELLS)}")
    completion_init()
    echo(get_completion_script(prog_name="accelfleet", complete_var=COMPLETE_VAR,
                                     shell=shell))


app.command(name="plan")(plan.plan)
app.command(name="advise")(advise.advise)
app.command(name="preview")(up.preview)
app.command(name="up")(up.up)
add_examples(app)  # an Examples section in every command's --help (cli/_examples.py)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("accelfleet")
        except PackageNotFoundError:
            v = "0.1.0"
        echo(f"accelfleet {v}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Accelerator fleets as code."""
    from cli._errors import catch_interrupts

    catch_interrupts()


def run() -> None:
    """Console entry point. Commands report accelfleet errors themselves (`cli._errors`);
    this is the last line of defence so that none ever reaches the user as a traceback."""
    from cli import _errors

    _errors.HARD_EXIT = True  # a Ctrl-C ends the console process at once (cli._errors)
    try:
        app()
    except SystemExit:
        raise
    except BrokenPipeError:
        from cli._errors import reader_gone

        sys.exit(reader_gone())
    except (Exception, KeyboardInterrupt) as exc:
        from cli._errors import report

        sys.exit(report(exc))
