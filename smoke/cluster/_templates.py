"""The smoke workload templates (`smoke/cluster/templates`, jinja2) and the YAML they become.

Every value is inserted through `tojson` (the environment refuses anything else), so a hostile
name or label value stays data. `_render` parses a skeleton in which each value is a short
placeholder and puts the values back afterwards: the same objects as parsing the whole text
(`render_text`), which a test holds equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


@cache
def _environment() -> jinja2.Environment:
    import jinja2
    from markupsafe import Markup

    def only_json(value: object) -> object:
        if not isinstance(value, Markup):  # `| tojson` returns Markup; a bare value could inject
            raise jinja2.TemplateError(f"template value {value!r} not inserted with `| tojson`")
        return value

    @jinja2.pass_context
    def tojson(ctx: jinja2.runtime.Context, value: object) -> Markup:
        """JSON text; or, when the render collects `_values`, a placeholder for the value."""
        values = ctx.get("_values")
        if values is None:
            return Markup(json.dumps(value, sort_keys=False))
        values.append(value)
        return Markup(f'"\\u0000accelfleet:{len(values) - 1}"')

    env = jinja2.Environment(loader=jinja2.PackageLoader("smoke.cluster", "templates"),
                             undefined=jinja2.StrictUndefined, autoescape=False,
                             keep_trailing_newline=True, finalize=only_json)
    env.filters["tojson"] = tojson  # JSON is valid YAML: the value stays data, never syntax
    return env


def render_text(template: str, context: Mapping[str, Any]) -> str:
    """The template's text with every value as JSON (what `_render` parses the same as)."""
    return _environment().get_template(template).render(**context)


def _render(template: str, context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The template's objects. Each `| tojson` value is rendered as a short placeholder, the
    small YAML skeleton is parsed, and the placeholders are replaced by the values themselves:
    the same objects as parsing the fully rendered text (a test holds them equal), without
    parsing every value's JSON through a pure-Python YAML parser (100 ms a pool before)."""
    from ruamel.yaml import YAML

    values: list[Any] = []
    text = _environment().get_template(template).render(**context, _values=values)
    docs = [d for d in YAML(typ="safe", pure=True).load_all(text) if d is not None]
    used: set[int] = set()
    out = [_fill(d, values, used) for d in docs]
    if len(used) != len(values):
        raise AssertionError(f"{template}: a `| tojson` value is not a whole YAML value")
    return out


_PLACEHOLDER = re.compile(r"^\x00accelfleet:(\d+)$")


def _fill(node: Any, values: list[Any], used: set[int]) -> Any:
    if isinstance(node, dict):
        return {_fill(k, values, used): _fill(v, values, used) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, values, used) for v in node]
    if isinstance(node, str) and (m := _PLACEHOLDER.match(node)):
        i = int(m.group(1))
        used.add(i)
        return json.loads(json.dumps(values[i]))  # a plain copy, as the text would have made
    return node


@cache
def _dumper() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import SafeRepresenter

    class _Representer(SafeRepresenter):  # a subclass: the representer table is per class
        pass

    def text(rep: SafeRepresenter, value: str) -> Any:
        style = "|" if "\n" in value else None  # the emitter falls back when it cannot
        return rep.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Representer.add_representer(str, text)
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep order
    yaml.width = 4096
    return yaml


def dump_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """Objects as a multi-document YAML stream (block style, multi-line strings as `|`)."""
    import io

    out = io.StringIO()
    for obj in objects:
        out.write("---\n")
        _dumper().dump(dict(obj), out)
    return out.getvalue()
