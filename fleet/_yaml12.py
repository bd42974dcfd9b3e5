"""Fast reading of accelfleet's own YAML data files (the catalog), with YAML 1.2 meanings.

The pure-Python ruamel.yaml parser takes about 0.6 s for the catalog, paid by every command
that loads it; libyaml (PyYAML's C loader) takes 0.04 s. PyYAML resolves plain scalars by YAML
1.1 (`1.6e11` a string, `012` octal, `yes` true), so this loader takes ruamel.yaml's own YAML
1.2 resolvers (https://yaml.org/spec/1.2.2/#1032-tag-resolution, plus ruamel's `0b` and `_`).
A test holds every catalog file equal under both parsers. User input (stack files) keeps
ruamel.yaml: it refuses duplicate keys, which libyaml silently merges.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _loader() -> Any:
    """The libyaml loader class with YAML 1.2 core resolvers, or None without libyaml."""
    import yaml

    if not getattr(yaml, "__with_libyaml__", False):
        return None

    class Loader(yaml.CSafeLoader):  # type: ignore[misc,name-defined]
        pass

    from ruamel.yaml.resolver import implicit_resolvers

    # ruamel.yaml's own YAML 1.2 resolvers (regular expressions and first characters), so that
    # both parsers resolve every plain scalar alike (`1_000`, `0b101`, `012` included).
    Loader.yaml_implicit_resolvers = {}
    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions:
            Loader.add_implicit_resolver(tag, regexp, first)

    def construct_int(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node).replace("_", "")
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("+-")
        for prefix, base in (("0b", 2), ("0o", 8), ("0x", 16)):
            if digits.startswith(prefix):
                return sign * int(digits[2:], base)
        return sign * int(digits, 10)

    def construct_float(loader: Any, node: Any) -> float:
        text = loader.construct_scalar(node).replace("_", "").lower()
        if text.endswith(".inf"):
            return float("-inf") if text.startswith("-") else float("inf")
        return float("nan") if text == ".nan" else float(text)

    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
    return Loader


def load_data(text: str) -> Any:
    """`text` parsed as YAML 1.2 (safe types only): libyaml when present, else ruamel.yaml."""
    loader = _loader()
    if loader is not None:
        import yaml

        return yaml.load(text, Loader=loader)  # a safe loader's subclass
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)
