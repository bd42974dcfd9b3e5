"""An Examples section for every command's `--help` (issue 21 item 8): what a person types,
kept in one table so that a test checks every command has some and every option they use
exists. `cli.main` appends them to each command's help."""

from __future__ import annotations

from typing import Any

PROD = "stacks/Pulumi.prod.yaml"

EXAMPLES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("plan",): (f"accelfleet plan {PROD}",
                f"accelfleet plan {PROD} --json --out plan.json",
                f"accelfleet plan {PROD} --base-ref origin/main --format markdown --policies"),
    ("advise",): (f"accelfleet advise {PROD} --workload llama3-8b-pretrain",
                  "accelfleet advise --catalog --workload job.yaml --top 5"),
    ("preview",): (f"accelfleet preview {PROD}",),
    ("up",): (f"accelfleet up {PROD}", f"accelfleet up {PROD} --yes --smoke changed"),
    ("catalog", "list"): ("accelfleet catalog list", "accelfleet catalog list --cloud gcp "
                          "--kind tpu"),
    ("catalog", "show"): ("accelfleet catalog show h100", "accelfleet catalog show v5p-128"),
    ("fleet", "validate"): (f"accelfleet fleet validate {PROD}",
                            f"accelfleet fleet validate {PROD} --json"),
    ("pool", "request"): (f"accelfleet pool request {PROD} --team vision --accelerator h100 "
                          "--nodes 2 --dry-run",
                          f"accelfleet pool request {PROD} --team vision --accelerator "
                          "\"v6e 2x4\" --until 30d --branch pool/vision-v6e"),
    ("pool", "resize"): (f"accelfleet pool resize h100-train --nodes 4 --stack {PROD}",
                         f"accelfleet pool resize v5p-slice --topology 4x4x8 --stack {PROD} "
                         "--patch p.diff"),
    ("pool", "remove"): (f"accelfleet pool remove l4-spot --stack {PROD} --dry-run",),
    ("pool", "list"): (f"accelfleet pool list {PROD}",),
    ("pool", "expired"): (f"accelfleet pool expired {PROD} --as-of 2027-01-01",),
    ("smoke", "local"): ("accelfleet smoke local --tier 2",
                         "accelfleet smoke local --backend jax --expect v5p --junit smoke.xml"),
    ("smoke", "render"): (f"accelfleet smoke render {PROD} --pools h100-train --out manifests",),
    ("smoke", "run"): (f"accelfleet smoke run {PROD} --tier 3 --junit smoke.xml --html r.html",
                       "accelfleet smoke run --outputs outputs.json --quarantine"),
    ("smoke", "release"): (f"accelfleet smoke release gke-ml-h100-9c1d --stack {PROD}",),
    ("smoke", "status"): (f"accelfleet smoke status {PROD}",),
    ("smoke", "report"): ("accelfleet smoke report results/run.json --html report.html "
                          "--junit junit.xml",),
    ("smoke", "history"): ("accelfleet smoke history --pool h100-train --last 20",),
    ("smoke", "nccl-log"): ("accelfleet smoke nccl-log rank0.log --fabric efa --nics 32",
                            "kubectl logs POD | accelfleet smoke nccl-log - --fabric tcpxo"),
    ("queue", "show"): (f"accelfleet queue show {PROD} --team research",),
    ("gate", "run"): (f"accelfleet gate run {PROD} --kubeconfig kc --context ml-gke=prod "
                      "--once",),
    ("gate", "status"): (f"accelfleet gate status {PROD} --json",),
    ("gate", "open"): (f"accelfleet gate open h100-train --stack {PROD} --reason "
                       "\"INC-1234: proofs blocked by a registry outage\"",),
    ("gate", "close"): (f"accelfleet gate close h100-train --stack {PROD}",),
    ("completion",): ('eval "$(accelfleet completion bash)"',),
}


def with_examples(help_text: str, path: tuple[str, ...]) -> str:
    """`help_text` with the command's Examples section (its paragraphs kept)."""
    lines = EXAMPLES.get(path)
    if not lines or "Examples:" in help_text:
        return help_text
    block = "\n\n".join(f"`{line}`" for line in lines)  # a paragraph each: one line each
    return f"{help_text.rstrip()}\n\nExamples:\n\n{block}\n"


def add_examples(app: Any, prefix: tuple[str, ...] = ()) -> None:
    """Give every command registered on `app` (and its sub-apps) its Examples section."""
    import inspect

    for info in app.registered_commands:
        name = info.name or info.callback.__name__.removesuffix("_").replace("_", "-")
        text = info.help or inspect.getdoc(info.callback) or ""
        info.help = with_examples(text, (*prefix, name))
    for group in app.registered_groups:
        add_examples(group.typer_instance, (*prefix, group.name))
