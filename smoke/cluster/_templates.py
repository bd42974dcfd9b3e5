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


# kubectl reads manifests with sigs.k8s.io/yaml, i.e. go-yaml v2, whose plain scalars resolve
# by YAML 1.1: `y`, `yes`, `on`, `off`, `n`, `no` are booleans, `012` octal, `1:20` sexagesimal
# (go-yaml v2 resolve.go, resolveMapList: https://github.com/go-yaml/yaml/blob/v2/resolve.go,
# read 2026-11-27). ruamel.yaml quotes only what YAML 1.2 would read as another type, so
# `--expect-gdr yes` was written bare and `kubectl apply` refused a boolean where a string goes.
_STR_TAG = "tag:yaml.org,2002:str"


@cache
def _other_types() -> tuple[re.Pattern[str], ...]:
    """ruamel.yaml's implicit resolvers of YAML 1.1 and 1.2 for every type but str."""
    from ruamel.yaml.resolver import implicit_resolvers

    return tuple(re.compile(regexp.pattern, regexp.flags)  # ruamel's are lazily compiled
                 for versions, tag, regexp, _first in implicit_resolvers
                 if tag != _STR_TAG and ((1, 1) in versions or (1, 2) in versions))


def reads_as_another_type(value: str) -> bool:
    """Whether a YAML 1.1 or 1.2 parser reads `value`, written plain, as other than a string."""
    return value == "" or any(regexp.match(value) for regexp in _other_types())


@cache
def _dumper() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import SafeRepresenter

    class _Representer(SafeRepresenter):  # a subclass: the representer table is per class
        pass

    def text(rep: SafeRepresenter, value: str) -> Any:
        # `|` for multi-line text (the emitter falls back when it cannot); quoted where a
        # YAML 1.1 reader (kubectl) would take the plain word for a bool, number, date or null
        style = "|" if "\n" in value else "'" if reads_as_another_type(value) else None
        return rep.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Representer.add_representer(str, text)
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep order
    yaml.width = 4096
    return yaml


def dump_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """Objects as a multi-document YAML stream (block style, multi-line strings as `|`, every
    string a YAML 1.1 or 1.2 reader would take for another type quoted)."""
    import io

    out = io.StringIO()
    for obj in objects:
        out.write("---\n")
        _dumper().dump(dict(obj), out)
    return out.getvalue()
