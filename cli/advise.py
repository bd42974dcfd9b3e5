"""`accelfleet advise`: GPU or TPU for this workload? Time and cost per run on each candidate,
from the smoke history's measured figures where it has them, else from the datasheets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import _complete
from cli._args import STACK_RULE, StackOpt, one_stack
from cli._errors import command
from fleet.words import count, counted, duration, usd

if TYPE_CHECKING:
    from rich.console import Console

    from fleet.advise import Advice, Estimate, MeasuredFigures, Offer
    from fleet.catalog import Catalog


@command
def advise(
    stack_file: Annotated[Path | None, typer.Argument(
        metavar="STACK_FILE",
        help="A `stacks/Pulumi.<stack>.yaml` file whose pools are the candidates; not with "
        f"--catalog {STACK_RULE}", show_default=False)] = None,
    stack: StackOpt = None,
    workload: Annotated[str, typer.Option(
        "--workload", "-w", metavar="FILE|PRESET", show_default=False,
        help="Required. A workload profile (YAML: docs/advise.md) or a preset: llama3-8b-pretrain, "
        "llama3-70b-pretrain, llama3-8b-finetune, llama3-70b-batch-inference.")] = "",
    pools: Annotated[list[str] | None, typer.Option(
        "--pools", metavar="POOL,...", show_default=False, autocompletion=_complete.pool_list,
        help="Only these pools of the stack (comma-separated, or repeat the option).")] = None,
    catalog: Annotated[bool, typer.Option(
        "--catalog", help="Every GPU machine type and TPU generation of the catalog, at list "
        "price, instead of a stack's pools.")] = False,
    history: Annotated[Path | None, typer.Option(
        "--history", metavar="FILE", show_default=False,
        help="The smoke history to read measured figures from (default: "
        ".accelfleet/history.sqlite, or $ACCELFLEET_HISTORY, when it exists).")] = None,
    no_history: Annotated[bool, typer.Option(
        "--no-history", help="Datasheet figures only, even where the history has runs.")
    ] = False,
    top: Annotated[int | None, typer.Option(
        "--top", min=1, metavar="N", show_default=False,
        help="Only the N cheapest candidates.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Estimate the time and cost of one run of a workload on each candidate (a stack's pools,
    or with `--catalog` every GPU and TPU shape), ranked by cost per run.

    Per candidate: a roofline step time (compute at the effective TFLOP/s, memory at the
    effective GB/s, the gradient all-reduce at the bus bandwidth), with the bound named; the
    time per run; the cost per run at the pool's rate or list price, on-demand and spot
    (unpriced: never $0); the devices that hold the model. Effective figures are measured
    (the smoke history's medians, with the run count) or datasheet (peak x a documented
    efficiency). Candidates the model does not fit are listed with the reason.

    Exit 0 with the ranking; 1 when no candidate can run the workload; 2 for a bad profile,
    an unknown preset or pool, or a missing stack or history file.
    """
    stack_file = one_stack(stack_file, stack)
    from fleet.advise import advise as estimate_all
    from fleet.advise import load_workload
    from fleet.catalog import load_catalog
    from fleet.errors import CheckFailed, InputError

    if not workload:
        raise InputError("--workload is required", hint="name a preset (e.g. `--workload "
                         "llama3-8b-pretrain`) or a workload YAML file (docs/advise.md)")
    wanted = [p.strip() for item in pools or [] for p in item.split(",") if p.strip()]
    if catalog and (wanted or stack_file is not None):
        raise InputError("--catalog takes no stack file and no --pools",
                         hint="use --catalog alone for every catalog shape, or a stack file "
                         "(with --pools to pick some of its pools)")
    job = load_workload(workload)
    cat = load_catalog()
    offers, read = _offers(cat, stack_file, wanted, catalog)
    measured, where = _history(history, no_history)
    result = estimate_all(job, offers, cat, measured.get if measured is not None else None)
    shown = result.estimates[:top] if top else result.estimates
    if as_json:
        from cli._output import print_json

        print_json(_document(result, shown, where, measured or {}, read))
    else:
        from cli._output import console

        _table(console(), result, shown, where, read)
    if not result.estimates:
        raise CheckFailed("no candidate can run this workload",
                          hint="each candidate's reason and fix is listed above")


def _offers(cat: Catalog, stack_file: Path | None, wanted: list[str], catalog: bool
            ) -> tuple[list[Offer], Path | None]:
    """The candidates, and the stack file they come from (None: the catalog's shapes)."""
    from fleet.advise import catalog_offers, pool_offers
    from fleet.errors import InputError, UnknownNameError

    if catalog:
        return catalog_offers(cat), None
    from fleet import load_fleet
    from fleet.stack.choice import stack_to_read

    path = stack_to_read(stack_file)
    fleet = load_fleet(str(path))
    names = [p.name for p in fleet.pools]
    for name in wanted:
        if name not in names:
            raise UnknownNameError(f"pool of {path}", name, names,
                                   hint=f"the stack's pools: {', '.join(names)}")
    offers = pool_offers([p for p in fleet.pools if not wanted or p.name in wanted])
    if not offers:
        raise InputError(f"{path} has no accelerator pool to estimate"
                         + (f" among {', '.join(wanted)}" if wanted else ""),
                         hint="name GPU or TPU pools with --pools, or use --catalog")
    return offers, path


def _history(path: Path | None, off: bool
             ) -> tuple[dict[str, MeasuredFigures] | None, str | None]:
    """Measured medians per accelerator key, and the history's path; (None, None) when there
    is none to read (datasheet figures everywhere)."""
    if off:
        return None, None
    from smoke.measured import read_measured

    return read_measured(path)


def _document(result: Advice, shown: tuple[Estimate, ...], where: str | None,
              measured: dict[str, MeasuredFigures], read: Path | None) -> dict[str, Any]:
    from smoke.measured import HISTORY_WINDOW

    return {
        "stack": None if read is None else read.as_posix(),  # None: the catalog's shapes
        "workload": result.workload.summary(),
        "candidates": [{"rank": i, **e.to_dict()} for i, e in enumerate(shown, 1)],
        "excluded": [x.to_dict() for x in result.excluded],
        "assumptions": list(result.assumptions),
        "history": {"path": where, "window_runs": HISTORY_WINDOW,
                    "accelerators": {k: {"tflops": m.tflops, "gbps": m.gbps, "runs": m.runs,
                                         "node_busbw_gbps": m.node_busbw_gbps}
                                     for k, m in sorted(measured.items())}},
    }


def _usd(value: float | None, unpriced: str = "unpriced") -> str:
    return usd(value, unpriced=unpriced, cents_below=10)


def _headline(result: Advice) -> str:
    w = result.workload.summary()
    parts = [str(w["kind"])]
    if w["parameters"]:
        parts.append(f"{w['parameters'] / 1e9:,.2f}B parameters")
    if w.get("tokens_per_step"):
        parts.append(f"{count(w['tokens'])} tokens in {w['steps']:,} steps of "
                     f"{count(w['tokens_per_step'])}")
    elif w.get("requests"):
        parts.append(f"{w['requests']:,} requests of {w['prompt_tokens']:,} + "
                     f"{w['output_tokens']:,} tokens, {w['batch_sequences']} at a time")
    elif w.get("steps"):
        parts.append(f"{w['steps']:,} steps")
    parts.append(f"{counted(w['devices_wanted'], 'device')} wanted")
    return ", ".join(parts)


def _table(out: Console, result: Advice, shown: tuple[Estimate, ...], where: str | None,
           read: Path | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from cli._output import print_table
    from smoke.measured import HISTORY_WINDOW

    catalog = read is None
    w = result.workload
    out.print(f"[bold]{escape(w.name)}[/bold]: {escape(_headline(result))}")
    if w.description:
        out.print(escape(w.description))
    source = ("catalog shapes at list price" if read is None
              else f"the pools of {escape(read.as_posix())}")
    table = Table(title=f"cost per run on {source}, cheapest first")
    columns = [("#", "right"), ("candidate", "left"), ("accelerator", "left"),
               ("devices", "right"), ("figures", "left"), ("step", "right"), ("bound", "left"),
               ("time/run", "right"), ("$/run", "right"), ("$/run spot", "right")]
    if not catalog:  # a pool's rate may be the stack's own; a catalog shape's is list price
        columns.append(("price", "left"))
    for col, just in columns:
        table.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for i, e in enumerate(shown, 1):
        p = e.placement
        label = e.offer.label
        if p.topology:
            label += f" {p.topology}" + (f" x{p.units}" if p.units > 1 else "")
        devices = f"{e.chips:,}" + (f" (fit {e.chips_to_fit:,})" if e.chips_to_fit > 1 else "")
        step = duration(e.step.step_s) + (" decode" if e.prefill is not None else "")
        cells = [str(i), escape(label), escape(p.shape.accelerator.key), devices,
                 e.figures.words(), step, bound_words(e), duration(e.run_s),
                 _usd(e.usd_per_run), _usd(e.spot_usd_per_run, "-")]
        if not catalog:
            cells.append(escape(p.price_source.split(":")[0].split(" (")[0]))
        table.add_row(*cells)
    if shown:
        print_table(out, table)
    hidden = len(result.estimates) - len(shown)
    if hidden:
        out.print(f"... and {hidden} more (without --top)")
    _grouped(out, "excluded", [(f"{x.reason}\n    fix: {x.fix}", x.label)
                               for x in result.excluded])
    _grouped(out, "note", [(n, e.offer.label) for e in shown for n in e.notes])
    # the efficiencies the figures assume, per accelerator shown (datasheet or measured)
    efficiency: dict[str, str] = {}
    for e in shown:  # each figure's source: --json
        efficiency.setdefault(e.placement.shape.accelerator.key, "; ".join(
            s.split(" (", 1)[0] for s in e.figures.sources))
    for key, words in efficiency.items():
        out.print(f"efficiency: {escape(key)}: {escape(words)}")
    for line in result.assumptions:
        out.print(f"assumes: {escape(line)}")
    origin = f"smoke history {where}" if where else "no smoke history"
    out.print(f"[dim]figures: measured = medians of the last {HISTORY_WINDOW} runs per node "
              f"({escape(origin)}); datasheet = peak x an efficiency "
              "(fleet/catalog/data/advise.yaml). Each figure's source, prices' regions and "
              "dates: --json, docs/advise.md[/dim]")


BOUND_COLOUR = {"compute": "green", "memory": "yellow", "network": "magenta"}


def bound_words(e: Estimate) -> str:
    """What bounds the step shown beside it (for inference, the decode step), and, when the
    run as a whole is bound by its other phase (a prefill longer than the decoding), that
    too: the step's bound is never shown as the run's, nor the run's as the step's."""
    c = BOUND_COLOUR[e.step.bound]
    text = f"[{c}]{e.step.bound}[/{c}]"
    if e.prefill is None:
        return text
    text += " (decode)"
    if e.bound != e.step.bound:
        rc = BOUND_COLOUR[e.bound]
        text += f"; the run: [{rc}]{e.bound}[/{rc}] (prefill)"
    return text


def _grouped(out: Console, what: str, items: list[tuple[str, str]]) -> None:
    """One line per distinct text, naming every candidate it applies to."""
    from rich.markup import escape

    by_text: dict[str, list[str]] = {}
    for text, label in items:
        by_text.setdefault(text, [])
        if label not in by_text[text]:
            by_text[text].append(label)
    for text, labels in by_text.items():
        names = ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6
                                         else "")
        out.print(f"{what}: {escape(names)}: {escape(text)}")
