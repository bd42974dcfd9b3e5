"""Workload profiles: a YAML file or a named preset, checked strictly into a `Workload`.

    workload = load_workload("llama3-8b-pretrain")      # a preset (or one of its aliases)
    workload = load_workload("jobs/finetune.yaml")      # a file: the fields in docs/advise.md

Every problem of a profile is reported at once, each with the field, what it accepts and the
fix; an unknown field or preset gets the nearest names (did-you-mean). Presets live in
`fleet/catalog/data/workloads.yaml`, each with the sources of its arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from fleet.advise.workload import (
    ADAM_MIXED_STATE_BYTES,
    Checkpointing,
    Inference,
    Kind,
    ModelShape,
    RawStep,
    Training,
    Workload,
)
from fleet.errors import CatalogError, InputError, Problems, UnknownNameError, suggest
from fleet.input_files import shown

MAX_PROFILE_BYTES = 64 * 2**10  # a profile is a few lines; the YAML parser reads 64 KiB in ~0.5 s
# Any figure of a workload (tokens, FLOPs, bytes): 1e30 is a million times the FLOPs of the
# largest training run published; products of such figures stay far inside float range.
MAX_FIGURE = 1e30
COMMON = ("name", "description", "sources", "kind", "model", "per_step", "steps", "precision",
          "devices")
TRAINING = ("sequence_length", "global_batch_sequences", "micro_batch_sequences", "tokens",
            "activation_checkpointing", "state_bytes_per_parameter")
INFERENCE = ("prompt_tokens", "output_tokens", "batch_sequences", "requests")
MODEL = ("parameters", "layers", "hidden_size", "ffn_hidden_size", "gated_mlp",
         "attention_heads", "kv_heads", "vocab_size", "tied_embeddings")
SHAPE = ("layers", "hidden_size", "attention_heads", "vocab_size")
PER_STEP = ("flops", "traffic_bytes", "memory_bytes", "collective_bytes")
CHECKPOINTING = ("none", "selective", "full")
PRECISIONS = ("bf16",)
FIELDS_HINT = "docs/advise.md lists every field of a workload profile"


@dataclass(frozen=True)
class Preset:
    name: str
    aliases: tuple[str, ...]
    description: str
    sources: tuple[str, ...]
    workload: Workload


class Checker(Problems):
    """Reads fields off a mapping, collecting every problem instead of stopping at the first."""

    def unknown(self, data: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
        for key in data:
            if key in known:
                continue
            near = suggest(str(key), known)
            message = "unknown field" + (f"; did you mean {', '.join(map(repr, near))}?"
                                         if near else "")
            self.add(f"{prefix}{key}", message,
                     f"rename it to {near[0]!r}" if near else f"remove it ({FIELDS_HINT})",
                     tuple(sorted(known)))

    def number(self, data: Mapping[str, Any], key: str, prefix: str = "", *,
               whole: bool = False, minimum: float = 1, required: bool = False,
               example: str = "") -> float | None:
        where = f"{prefix}{key}"
        if key not in data or data[key] is None:
            if required:
                self.add(where, "is required", f"add `{key}: {example or 'N'}` ({FIELDS_HINT})")
            return None
        value = data[key]
        what = "a whole number" if whole else "a number"
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                self.add(where, f"must be {what} of at least {minimum:g}, got {value!r}",
                         f"write it as {what}, e.g. `{key}: {example or 8}`")
                return None
            self.add(where, f"is the text {value!r}, not {what}",
                     f"write it without quotes: `{key}: {value.strip()}`")
            return None
        if isinstance(value, int | float) and not isinstance(value, bool) and (
                value != value or abs(value) > MAX_FIGURE):  # NaN, inf, or 10**400
            self.add(where, f"{shown(value)} is beyond any workload (at most {MAX_FIGURE:g})",
                     f"write a real figure, e.g. `{key}: {example or 8}`")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            self.add(where, f"must be {what} of at least {minimum:g}, got {value!r}",
                     f"write it as {what}, e.g. `{key}: {example or 8}`")
            return None
        if whole and value != int(value):
            self.add(where, f"must be a whole number, got {value!r}",
                     f"round it: `{key}: {round(value)}`")
            return None
        if value < minimum:
            self.add(where, f"must be at least {minimum:g}, got {value!r}",
                     f"give a value of at least {minimum:g}")
            return None
        return float(value)

    def whole(self, data: Mapping[str, Any], key: str, prefix: str = "", *,
              required: bool = False, minimum: int = 1, example: str = "") -> int | None:
        value = self.number(data, key, prefix, whole=True, minimum=minimum, required=required,
                            example=example)
        return None if value is None else int(value)

    def flag(self, data: Mapping[str, Any], key: str, prefix: str = "") -> bool:
        value = data.get(key, False)
        if not isinstance(value, bool):
            self.add(f"{prefix}{key}", f"must be true or false, got {value!r}",
                     f"write `{key}: true` or `{key}: false`")
            return False
        return value

    def choice(self, data: Mapping[str, Any], key: str, accepted: tuple[str, ...],
               default: str, hint: str = "") -> str:
        value = data.get(key, default)
        if value not in accepted:
            near = suggest(str(value), accepted)
            self.add(key, f"{value!r} is not accepted" + (
                f"; did you mean {near[0]!r}?" if near else ""),
                hint or f"write one of: {', '.join(accepted)}", accepted)
            return default
        return str(value)

    def problems_for(self, *keys: str) -> bool:
        return any(p.where in keys for p in self.problems)

    def text(self, data: Mapping[str, Any], key: str, default: str = "") -> str:
        value = data.get(key, default)
        if not isinstance(value, str):
            self.add(key, f"must be text, got {value!r}", f"quote it: `{key}: \"...\"`")
            return default
        return value


def parse_workload(data: object, source: str, *, name: str | None = None,
                   description: str = "", sources: tuple[str, ...] = ()) -> Workload:
    """A checked `Workload` from a profile mapping; raises InputError listing every problem."""
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: a workload profile is a mapping of fields, got "
                         f"{type(data).__name__}",
                         hint="start from a preset's fields (docs/advise.md), e.g. "
                         "`kind: training` on the first line")
    c = Checker()
    kind = cast(Kind, c.choice(data, "kind", ("training", "inference"), "training",
                               "write `kind: training` or `kind: inference`"))
    if "kind" not in data:
        c.add("kind", "is required", "add `kind: training` or `kind: inference`",
              ("training", "inference"))
    mine = TRAINING if kind == "training" else INFERENCE
    other = INFERENCE if kind == "training" else TRAINING
    c.unknown({k: v for k, v in data.items() if k not in other}, COMMON + mine, "")
    for key in other:
        if key in data:
            c.add(key, f"is a field of {'inference' if kind == 'training' else 'training'} "
                  f"workloads; this one is `kind: {kind}`",
                  f"remove `{key}`, or set `kind: "
                  f"{'inference' if kind == 'training' else 'training'}`")
    precision = c.choice(data, "precision", PRECISIONS, "bf16",
                         "write `precision: bf16`: the catalog holds bf16 peaks only")
    devices = c.whole(data, "devices", example="8") or 1
    model = _model(c, data.get("model")) if "model" in data else None
    raw = _raw(c, data.get("per_step")) if "per_step" in data else None
    if "model" not in data and "per_step" not in data:
        c.add("model", "is required (or `per_step`)",
              "describe the model (`model: {layers: 32, hidden_size: 4096, ...}` or "
              "`model: {parameters: 7e9}`), or give raw counts under `per_step` with `steps`")
    elif "model" in data and "per_step" in data:
        c.add("per_step", "is given with `model`: give one of them",
              "keep `model` (accelfleet counts FLOPs and bytes) or `per_step` (you do)")
    training = inference = None
    raw_steps = None
    if "per_step" in data and "model" not in data:
        raw_steps = c.whole(data, "steps", required=True, example="1000")
    elif kind == "training":
        training = _training(c, data)
    else:
        inference = _inference(c, data)
        if "steps" in data:
            c.add("steps", "an inference workload counts `requests`, not steps",
                  "remove `steps`; give `requests` and `output_tokens`")
    sources_given = data.get("sources", list(sources))
    if not isinstance(sources_given, list) or not all(isinstance(s, str)
                                                       for s in sources_given):
        c.add("sources", "must be a list of text", "write `sources: [\"a paper or page\"]`")
        sources_given = []
    given_name = c.text(data, "name", name or source)
    given_description = c.text(data, "description", description)
    if c.problems:
        count = len(c.problems)
        lines = [f"workload {source}: {count} problem{'s' if count != 1 else ''} found"]
        lines += [f"  - {p.render()}" for p in c.problems]
        raise InputError("\n".join(lines), hint=f"fix the profile ({FIELDS_HINT}), or start "
                         "from a preset: `accelfleet advise --workload llama3-8b-pretrain`")
    notes: tuple[str, ...] = ()
    if model is not None and not model.has_shape:
        notes = ("only `parameters` given: FLOPs are 6 N per token (no attention term) and "
                 "activations are not counted; give layers, hidden_size, attention_heads and "
                 "vocab_size for both",)
    return Workload(kind=kind, devices=devices, name=given_name, description=given_description,
                    sources=tuple(sources_given), precision=precision, model=model, raw=raw,
                    raw_steps=raw_steps, training=training, inference=inference, notes=notes)


def _model(c: Checker, data: object) -> ModelShape | None:
    if not isinstance(data, Mapping):
        c.add("model", f"must be a mapping of fields, got {data!r}",
              "e.g. `model: {layers: 32, hidden_size: 4096, attention_heads: 32, "
              "vocab_size: 128256}`")
        return None
    c.unknown(data, MODEL, "model.")
    p = "model."
    given = [k for k in SHAPE if k in data]
    # a field written with no value (`parameters: ~`) is a field not given: the shape is then
    # required, as it is when `parameters` is missing
    shape = {k: c.whole(data, k, p, required=bool(given) or data.get("parameters") is None,
                        example={"layers": "32", "hidden_size": "4096",
                                 "attention_heads": "32", "vocab_size": "128256"}[k])
             for k in SHAPE}
    params = c.number(data, "parameters", p, minimum=1, example="7e9")
    ffn = c.whole(data, "ffn_hidden_size", p, example="14336")
    kv = c.whole(data, "kv_heads", p, example="8")
    h, heads = shape["hidden_size"], shape["attention_heads"]
    if h and heads and h % heads:
        c.add(f"{p}hidden_size", f"{h} does not split into {heads} attention heads",
              "hidden_size must be a multiple of attention_heads")
    if kv and heads and heads % kv:
        c.add(f"{p}kv_heads", f"{heads} attention heads do not group into {kv} kv_heads",
              "attention_heads must be a multiple of kv_heads")
    return ModelShape(parameters=params, layers=shape["layers"], hidden_size=h,
                      ffn_hidden_size=ffn, gated_mlp=c.flag(data, "gated_mlp", p),
                      attention_heads=heads, kv_heads=kv, vocab_size=shape["vocab_size"],
                      tied_embeddings=c.flag(data, "tied_embeddings", p))


def _raw(c: Checker, data: object) -> RawStep | None:
    if not isinstance(data, Mapping):
        c.add("per_step", f"must be a mapping of fields, got {data!r}",
              "e.g. `per_step: {flops: 3.0e17, traffic_bytes: 2.0e12}`")
        return None
    c.unknown(data, PER_STEP, "per_step.")
    flops = c.number(data, "flops", "per_step.", required=True, example="3.0e17")
    traffic = c.number(data, "traffic_bytes", "per_step.", minimum=0, required=True,
                       example="2.0e12")
    memory = c.number(data, "memory_bytes", "per_step.", minimum=0) or 0.0
    collective = c.number(data, "collective_bytes", "per_step.", minimum=0) or 0.0
    if flops is None or traffic is None:
        return None
    return RawStep(flops, traffic, memory, collective)


def _training(c: Checker, data: Mapping[str, Any]) -> Training | None:
    seq = c.whole(data, "sequence_length", required=True, example="8192")
    batch = c.whole(data, "global_batch_sequences", required=True, example="512")
    micro = c.whole(data, "micro_batch_sequences") or 1
    if batch and micro > batch:
        c.add("micro_batch_sequences", f"{micro} is more than the global batch of {batch}",
              "a micro-batch is part of the global batch: lower it")
    tokens = c.number(data, "tokens", example="1.6e11")
    steps = c.whole(data, "steps", example="1000")
    if (tokens is None) == (steps is None) and not c.problems_for("tokens", "steps"):
        c.add("tokens", "give either `tokens` or `steps`" if tokens is None else
              "`tokens` and `steps` are both given", "keep one: `tokens` (the whole run) or "
              "`steps` (each of global_batch_sequences x sequence_length tokens)")
    checkpointing = cast(Checkpointing, c.choice(data, "activation_checkpointing",
                                                 CHECKPOINTING, "selective"))
    state = c.number(data, "state_bytes_per_parameter", minimum=1, example="16")
    if seq is None or batch is None:
        return None
    return Training(seq, batch, micro, tokens, steps, checkpointing,
                    state or ADAM_MIXED_STATE_BYTES)


def _inference(c: Checker, data: Mapping[str, Any]) -> Inference | None:
    prompt = c.whole(data, "prompt_tokens", required=True, minimum=0, example="1024")
    output = c.whole(data, "output_tokens", required=True, example="256")
    batch = c.whole(data, "batch_sequences", required=True, example="64")
    requests = c.whole(data, "requests", required=True, example="100000")
    if prompt is None or output is None or batch is None or requests is None:
        return None
    return Inference(prompt, output, batch, requests)


# -- files and presets ---------------------------------------------------------------------
def read_profile(path: Path) -> Workload:
    """A workload file, read and checked; every failure an InputError with its fix."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from fleet.input_files import read_text

    text = read_text(path, what="workload file", max_bytes=MAX_PROFILE_BYTES,
                     hint="a workload profile is a few lines of YAML (docs/advise.md)")
    try:
        data = YAML(typ="safe", pure=False).load(text)
    except (YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"workload file {path} is not valid YAML{where}: {problem}",
                         hint="fix the YAML syntax (indentation, a missing ':' or an "
                         "unclosed quote)") from None
    except (ValueError, TypeError, ArithmeticError) as exc:  # `!!int "x"`, 4,301 digits
        raise InputError(f"workload file {path} holds a value that cannot be read: "
                         f"{str(exc)[:120]}", hint="write plain numbers (e.g. `tokens: "
                         "1.6e11`), with no YAML tags") from None
    return parse_workload(data, str(path), name=path.stem)


@cache
def presets() -> dict[str, Preset]:
    """Every preset by name (the catalog's workloads.yaml), checked once per process."""
    from fleet.catalog import read_yaml

    out: dict[str, Preset] = {}
    for raw in read_yaml("workloads.yaml").get("presets") or []:
        name = str(raw.get("name", ""))
        sources = tuple(str(s) for s in raw.get("sources") or [])
        try:
            workload = parse_workload(raw.get("workload"), f"preset {name}", name=name,
                                      description=str(raw.get("description", "")),
                                      sources=sources)
        except InputError as exc:
            raise CatalogError(f"workloads.yaml: {exc.message}") from None
        if not name or name in out or not sources:
            raise CatalogError(f"workloads.yaml: preset {name!r} is unnamed, repeated or "
                               "has no sources")
        out[name] = Preset(name, tuple(str(a) for a in raw.get("aliases") or []),
                           workload.description, sources, workload)
    return out


def preset_names() -> list[str]:
    """Every name and alias a preset answers to."""
    return sorted({n for p in presets().values() for n in (p.name, *p.aliases)})


def find_preset(words: str) -> Preset | None:
    key = words.strip().lower()
    return next((p for p in presets().values() if key in (p.name, *p.aliases)), None)


def load_workload(words: str) -> Workload:
    """A preset (by name or alias) or a workload file (by path)."""
    from fleet.input_files import path_problem, shown_path

    preset = find_preset(words)
    path = Path(words).expanduser()
    problem = path_problem(path)
    names = sorted(presets())
    listing = ", ".join(names)
    if problem is not None and preset is None:  # no system call could take it (ENAMETOOLONG)
        raise InputError(f"workload {shown_path(words)} is no preset, and no file can have "
                         f"that path: {problem}", hint=f"give a preset ({listing}) or the "
                         "path of a workload YAML file")
    try:
        exists = problem is None and path.exists()
    except OSError as exc:  # a loop of links, a directory we may not search
        raise InputError(f"workload file {words}: {exc.strerror or exc}",
                         hint="check the path and its permissions") from None
    if exists:
        return read_profile(path)
    if preset is not None:
        return preset.workload
    if words.endswith((".yaml", ".yml", ".json")) or "/" in words:
        raise InputError(f"workload file {words} does not exist",
                         hint=f"give the path of a workload YAML file, or a preset: {listing}")
    raise UnknownNameError("workload preset", words, preset_names(),
                           hint=f"presets: {listing}; or give the path of a workload YAML "
                           "file (docs/advise.md)")
