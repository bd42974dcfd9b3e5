"""Naming a machine shape (fleet.catalog.Catalog's name queries): a user's words (a machine
type, a GKE accelerator label, an accelerator, a TPU slice by name or topology) resolved to one
Shape, with the nearest names when they name none; the TPU generations' topologies and slice
names; the machine types the catalog leaves out, each with why (not_built.yaml)."""

from __future__ import annotations

import re
from functools import cache
from math import prod
from typing import NoReturn

from fleet.catalog import _tpu
from fleet.catalog._load import read_yaml
from fleet.catalog.records import Accelerator, Cloud, MachineType, Shape, TpuGeneration
from fleet.errors import CatalogError, InputError, UnknownNameError, suggest
from fleet.words import counted

_SLICE_BY_COUNT = re.compile(r"^(?P<gen>[a-z0-9-]+?)-(?P<count>\d+)$")
_SLICE_BY_TOPO = re.compile(r"^(?P<gen>[a-z0-9-]+?)[\s:/-]+(?P<topo>\d+(?:x\d+){1,2})$")


class _Names:
    """The name queries of the Catalog (fleet.catalog), on the tables its constructor fills."""

    accelerators: dict[str, Accelerator]
    machines: dict[str, MachineType]
    tpus: dict[str, TpuGeneration]
    _alias: dict[str, str]  # an accelerator's key or alias -> its key
    _gke_label: dict[str, str]  # a GKE accelerator label -> its family's first machine type
    _tpu_names: dict[str, str]  # a TPU generation's every name -> its key
    _tpu_machine: dict[str, tuple[str, int]]  # a TPU machine type -> (generation, chips)

    # -- names -------------------------------------------------------------------------
    def known_names(self) -> list[str]:
        names = set(self.machines) | set(self._alias) | set(self._gke_label)
        names |= set(self._tpu_names) | set(self._tpu_machine)
        return sorted(names)

    def accelerator(self, key: str) -> Accelerator:
        return self.accelerators[key]

    # -- resolution --------------------------------------------------------------------
    def resolve(
        self,
        words: str,
        *,
        cloud: Cloud | None = None,
        topology: str | None = None,
        single_host: bool = False,
    ) -> Shape:
        """Turn a user's words into one machine shape.

        Accepts a machine type ("a3-highgpu-8g", "p5.48xlarge", "ct5p-hightpu-4t"), a GKE
        accelerator label ("nvidia-h100-80gb"), an accelerator ("h100": the first machine that
        carries it, on `cloud` if given), or a TPU slice ("v5p-128", "v6e 2x4", "v5p" with
        `topology`). Raises UnknownNameError with the nearest names, or InputError.
        """
        text = " ".join(words.strip().lower().split())
        if not text:
            raise InputError("empty accelerator name", hint="name a machine type, e.g. h100")
        tpu = self._resolve_tpu(text, topology, single_host)
        if tpu is not None:
            if cloud not in (None, "gcp"):
                raise InputError(
                    f"{words!r} is a Cloud TPU; TPUs are offered on gcp only, not {cloud}",
                    hint="put the pool in a GKE cluster, or choose a GPU machine for "
                    f"{cloud} (`accelfleet catalog list --cloud {cloud}`)",
                )
            return tpu
        machine = self._resolve_machine(text, cloud)
        if topology and machine is None:
            self._unknown_tpu(words, text, cloud)
        if topology:
            raise InputError(
                f"{words!r} is not a TPU, so it takes no topology (got {topology!r})",
                hint="remove `topology`, or name a TPU generation such as v5p or v6e",
            )
        if machine is None:
            reason = not_built().get(text)
            if reason is not None:
                raise InputError(
                    f"{words!r} is a machine type accelfleet does not build: {reason}",
                    hint="choose one from `accelfleet catalog list"
                    + (f" --cloud {cloud}`" if cloud else "`")
                    + " (fleet/catalog/data/not_built.yaml says why each other is left out)")
            scope = f" on {cloud}" if cloud else ""
            raise UnknownNameError(
                f"accelerator or machine type{scope}", words, self._names_for(cloud)
            )
        if cloud is not None and machine.cloud != cloud:
            raise InputError(
                f"{words!r} is a {machine.cloud} machine type, not offered on {cloud}",
                hint=f"choose one from `accelfleet catalog list --cloud {cloud}`",
            )
        return self.gpu_shape(machine)

    def _unknown_tpu(self, words: str, text: str, cloud: Cloud | None) -> NoReturn:
        """A name the catalog does not know, given with a `topology`: a TPU was meant, so
        suggest the nearest TPU generations (v5q -> v5p), never "remove topology"."""
        generations = [g.key for g in self.tpus.values()]
        head = text.split()[0]
        near = suggest(head, generations) or suggest(head, self._tpu_names)
        if not near:
            scope = f" on {cloud}" if cloud else ""
            raise UnknownNameError(
                f"accelerator or machine type{scope}", words, self._names_for(cloud),
                hint=f"`topology` is set, so a TPU slice is meant: name its generation "
                f"({', '.join(generations)}); for a GPU pool, remove `topology` and see "
                "`accelfleet catalog list`")
        near = list(dict.fromkeys(self._tpu_names.get(n, n) for n in near))
        raise UnknownNameError(
            "TPU generation", words, generations, suggestions=near,
            hint=f"`topology` is set, so this pool is a TPU slice: write `accelerator: "
            f"{near[0]}` (TPU generations: {', '.join(generations)}); for a GPU pool, remove "
            "`topology`")

    def gpu_shape(self, machine: MachineType) -> Shape:
        return Shape(
            cloud=machine.cloud,
            accelerator=self.accelerators[machine.accelerator],
            machine_type=machine.name,
            devices_per_host=machine.gpus,
            machine=machine,
        )

    def _names_for(self, cloud: Cloud | None) -> list[str]:
        if cloud is None:
            return self.known_names()
        names = [m for m, mt in self.machines.items() if mt.cloud == cloud]
        names += [a for a, k in self._alias.items() if self._first_machine(k, cloud)]
        if cloud == "gcp":
            names += list(self._gke_label) + list(self._tpu_names) + list(self._tpu_machine)
        return sorted(set(names))

    def _first_machine(self, acc_key: str, cloud: Cloud | None) -> MachineType | None:
        for m in self.machines.values():
            if m.accelerator == acc_key and (cloud is None or m.cloud == cloud):
                return m
        return None

    def _resolve_machine(self, text: str, cloud: Cloud | None) -> MachineType | None:
        if text in self.machines:
            return self.machines[text]
        if text in self._gke_label:
            return self.machines[self._gke_label[text]]
        if text in self._alias:
            return self._first_machine(self._alias[text], cloud)
        return None

    def _resolve_tpu(self, text: str, topology: str | None, single_host: bool) -> Shape | None:
        if text in self._tpu_machine:
            gen_key, chips = self._tpu_machine[text]
            gen = self.tpus[gen_key]
            topo = _tpu.default_topology(gen, chips)
            if topology is None and topo is not None:
                return self.tpu_slice(gen.key, "x".join(map(str, topo)), single_host=True)
            return self.tpu_slice(gen.key, topology or "", single_host=True)
        if text in self._tpu_names:
            gen = self.tpus[self._tpu_names[text]]
            if topology is None:
                smallest = _tpu.topologies(gen)[0]
                topology = "x".join(map(str, smallest))
            return self.tpu_slice(gen.key, topology, single_host=single_host)
        m = _SLICE_BY_TOPO.match(text)
        if m and m["gen"] in self._tpu_names:
            if topology is not None and _tpu.parse_topology(topology) != _tpu.parse_topology(
                m["topo"]
            ):
                raise InputError(
                    f"{text!r} names topology {m['topo']} but `topology` says {topology}",
                    hint="give the topology once",
                )
            return self.tpu_slice(self._tpu_names[m["gen"]], m["topo"], single_host=single_host)
        m = _SLICE_BY_COUNT.match(text)
        if m and m["gen"] in self._tpu_names:
            gen = self.tpus[self._tpu_names[m["gen"]]]
            count = int(m["count"])
            per_chip = gen.name_units_per_chip
            chips, rest = divmod(count, per_chip)
            topo = _tpu.default_topology(gen, chips) if not rest else None
            if topo is None:
                raise InputError(
                    f"{text!r} is not a {gen.key} slice size ({gen.tpu_api_name} names count "
                    f"{gen.naming}, {per_chip} per chip)",
                    hint=f"valid sizes: {', '.join(self.slice_names(gen.key)[:12])}, ...",
                )
            if topology is not None and _tpu.normalise(gen, _tpu.parse_topology(topology) or ()
                                                      ) != topo:
                raise InputError(
                    f"{text!r} is topology {'x'.join(map(str, topo))}, but `topology` says "
                    f"{topology}",
                    hint="give either the slice name or the topology",
                )
            return self.tpu_slice(gen.key, "x".join(map(str, topo)), single_host=single_host)
        return None

    # -- TPU queries ---------------------------------------------------------------------
    def tpu_generation(self, name: str) -> TpuGeneration:
        key = self._tpu_names.get(name.lower())
        if key is None:
            raise UnknownNameError("TPU generation", name, self._tpu_names)
        return self.tpus[key]

    def topologies(self, generation: str) -> list[str]:
        gen = self.tpu_generation(generation)
        return ["x".join(map(str, t)) for t in _tpu.topologies(gen)]

    def slice_names(self, generation: str) -> list[str]:
        """Cloud TPU API names of every slice (v5p-8, v5p-16, ...)."""
        gen = self.tpu_generation(generation)
        sizes = sorted({prod(t) for t in _tpu.topologies(gen)})
        return [gen.api_name(chips) for chips in sizes]

    def tpu_slice(self, generation: str, topology: str, *, single_host: bool = False) -> Shape:
        """A TPU slice of a generation and topology; raises with the valid topologies."""
        gen = self.tpu_generation(generation)
        parsed = _tpu.parse_topology(topology)
        topo = _tpu.normalise(gen, parsed) if parsed else None
        if topo is None:
            valid = self.topologies(gen.key)
            shape = "AxB" if gen.dims == 2 else "AxBxC"
            raise UnknownNameError(
                f"{gen.key} topology ({shape})",
                topology,
                valid,
                suggestions=_nearest_topologies(valid, parsed),
                hint=f"valid {gen.key} topologies: {', '.join(valid[:14])}"
                + (", ..." if len(valid) > 14 else ""),
            )
        chips = prod(topo)
        hosts, per_host = _tpu.slice_hosts(gen, chips, single_host_machine=single_host)
        machine = gen.machine_for(per_host)
        if machine is None:
            raise InputError(
                f"no {gen.key} machine type carries {counted(per_host, 'chip')}",
                hint=f"{gen.key} machine types: "
                + ", ".join(f"{m} ({counted(c, 'chip')})" for c, m in gen.machine_types),
            )
        return Shape(
            cloud="gcp",
            accelerator=self.accelerators[gen.accelerator],
            machine_type=machine,
            devices_per_host=per_host,
            hosts=hosts,
            tpu=gen,
            topology=topo,
        )


def _nearest_topologies(valid: list[str], parsed: tuple[int, ...] | None) -> list[str]:
    """The valid topologies closest in chip count to what was asked."""
    if not parsed:
        return valid[:3]
    want = prod(parsed)
    return sorted(valid, key=lambda t: abs(prod(int(s) for s in t.split("x")) - want))[:3]


@cache
def not_built() -> dict[str, str]:
    """Machine types the catalog leaves out, lower case, each with why (not_built.yaml)."""
    data = read_yaml("not_built.yaml")
    out: dict[str, str] = {}
    for section in ("gcp", "aws"):
        for name, why in ((data.get(section) or {}).get("machine_types") or {}).items():
            out[str(name).lower()] = str(why)
    for name, why in (data.get("not_in_snapshot") or {}).items():
        out[str(name).lower()] = str(why)
    if any(not why.strip() for why in out.values()):
        raise CatalogError("not_built.yaml: every machine type left out says why")
    return out
