"""Which stack a command works on, in words: the one rule (fleet.stack.choice applies it) as
every `--help` (cli/_args.py) and docs/stack.md state it. No imports: `--help` stays fast."""

from __future__ import annotations

# The order a stack is chosen in when none is named, for reads and writes alike.
RULE = ("default: $ACCELFLEET_STACK (or $PULUMI_STACK), else `pulumi stack select`'s choice, "
        "else one stack file besides Pulumi.example.yaml; two or more with none chosen: exit "
        "2; none: Pulumi.example.yaml, read only")


def how_to_choose(file: str = "stacks/Pulumi.prod.yaml", name: str = "prod") -> str:
    """The three ways to choose a stack, shown with `file` (stack `name`)."""
    return (f"pass one (`--stack {file}`), set ACCELFLEET_STACK={name} (PULUMI_STACK works "
            f"too), or select one (`pulumi stack select {name}`)")
