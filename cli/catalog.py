"""`accelfleet catalog`: what accelerators and machine shapes accelfleet knows."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli._errors import command
from cli._output import console, print_json, print_table
from cli._terminal import literal
from cli._typer import App
from fleet.words import num

if TYPE_CHECKING:
    from fleet.catalog import Catalog, Shape

app = App(rich_markup_mode="markdown",
                  help="Browse the accelerator catalog.", no_args_is_help=True)


class CloudOpt(StrEnum):
    gcp = "gcp"
    aws = "aws"


class KindOpt(StrEnum):
    gpu = "gpu"
    tpu = "tpu"
    cpu = "cpu"


_CLOUDS = "|".join(CloudOpt)  # the metavar: the choices, as every command writes them


def shape_dict(cat: Catalog, shape: Shape) -> dict[str, Any]:
    acc = shape.accelerator
    price = cat.price(shape)
    out: dict[str, Any] = {
        "cloud": shape.cloud,
        "kind": shape.kind,
        "machine_type": shape.machine_type,
        "accelerator": acc.key,
        "accelerator_name": acc.name,
        "devices_per_host": shape.devices_per_host,
        "hosts": shape.hosts,
        "chips": shape.chips,
        "jax_devices": shape.jax_devices,
        "bf16_tflops": acc.bf16_tflops,
        "memory_gib": acc.memory_gib,
        "memory_gbps": acc.memory_gbps,
        "figures_verified": acc.verified,
        "source": acc.source,
        "on_demand_usd_per_hour": cat.hourly_usd(shape),
        "spot_usd_per_hour": cat.hourly_usd(shape, spot=True),
        "price_source": price.source if price else None,
        "price_region": price.region if price else None,
        "price_as_of": price.as_of if price else None,
    }
    if shape.kind == "cpu":  # system pools and CPU pools: no device, no taint
        out["vcpus"] = shape.machine.vcpus if shape.machine else None
        out["kubernetes"] = {"resource": None, "node_selector": cat.node_selector(shape),
                             "taint": None}
    else:
        kube = cat.kube(shape)
        out["kubernetes"] = {"resource": kube.resource, "node_selector": kube.node_selector,
                             "taint": f"{kube.taint.key}={kube.taint.value}:{kube.taint.effect}"}
    if shape.tpu is not None:
        out["topology"] = shape.topology_str
        out["tpu_generation"] = shape.tpu.key
    net = shape.networking
    if net is not None:
        out["gpu_networking"] = {"kind": net.kind, "extra_vpcs": net.extra_vpcs,
                                 "rdma_subnets": net.rdma_subnets, "mtu": net.mtu,
                                 "efa_interfaces": net.efa_interfaces}
    return out


@app.command("list")
@command
def list_(
    cloud: Annotated[CloudOpt | None, typer.Option(metavar=_CLOUDS,
                                                   help="Only this cloud.")] = None,
    kind: Annotated[KindOpt | None, typer.Option(
        metavar="|".join(KindOpt),
        help="Only GPUs, only TPUs, or only CPU machine types (system and CPU pools).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every machine shape: GPU, TPU and CPU machine types."""
    from fleet.catalog import load_catalog

    cat = load_catalog()
    shapes = cat.shapes(cloud=cloud.value if cloud else None,  # type: ignore[arg-type]
                        kind=kind.value if kind else None)  # type: ignore[arg-type]
    if as_json:
        print_json([shape_dict(cat, s) for s in shapes])
        return
    from rich.table import Table

    table = Table(title=f"accelfleet catalog ({len(shapes)} machine shapes)")
    for col, just in (("cloud", "left"), ("machine", "left"), ("accelerator", "left"),
                      ("per host", "right"), ("bf16 TFLOP/s", "right"), ("mem GiB", "right"),
                      ("mem GB/s", "right"), ("networking", "left"), ("$/h on-demand", "right"),
                      ("$/h spot", "right")):
        table.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for s in shapes:
        acc = s.accelerator
        net = s.networking
        netw = "-" if net is None else (f"EFA x{net.efa_interfaces}" if net.kind == "efa"
                                        else f"{net.kind.upper()} +{net.extra_vpcs} VPC")
        name = acc.name + ("" if acc.verified else " *")
        if s.kind == "cpu" and s.machine is not None:
            name = f"none (CPU, {s.machine.vcpus} vCPU)"
        table.add_row(s.cloud, s.machine_type, name,
                      str(s.devices_per_host), num(acc.bf16_tflops),
                      num(acc.memory_gib or None),
                      num(acc.memory_gbps), netw, num(cat.hourly_usd(s), "{:,.2f}"),
                      num(cat.hourly_usd(s, spot=True), "{:,.2f}"))
    out = console()
    print_table(out, table)
    out.print("* figures still to be verified: shown, never enforced as a floor. "
              "TPU slices: `accelfleet catalog show v5p` lists topologies.")


@app.command()
@command
def show(
    name: Annotated[str, typer.Argument(metavar="NAME",
                                       help="A machine type, accelerator or TPU slice, e.g. "
                                       "h100, a3-highgpu-8g, p5.48xlarge, v5p-128, 'v6e 2x4'.")],
    cloud: Annotated[CloudOpt | None, typer.Option(metavar=_CLOUDS,
                                                  help="Resolve on this cloud.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show one machine shape and everything the catalog knows about it."""
    from fleet.catalog import load_catalog

    cat = load_catalog()
    shape = cat.resolve(name, cloud=cloud.value if cloud else None)  # type: ignore[arg-type]
    data = shape_dict(cat, shape)
    if shape.tpu is not None:
        data["valid_topologies"] = cat.topologies(shape.tpu.key)
        data["slice_names"] = cat.slice_names(shape.tpu.key)
    elif shape.kind != "cpu":
        data["also_on"] = sorted(m.name for m in cat.machines.values()
                                 if m.accelerator == shape.accelerator.key)
    data["zones"] = _zones(cat, shape)
    if as_json:
        print_json(data)
        return
    out = console()
    out.print(f"[bold]{literal(name)}[/bold] -> {literal(shape.describe())}")
    for key, value in data.items():
        if isinstance(value, list) and len(value) > 16:
            value = ", ".join(map(str, value[:16])) + f", ... ({len(value)} in all)"
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        out.print(f"  {key:24} {_field(value)}", markup=False)


def _field(value: object, depth: int = 0) -> str:
    """A field as people read it: mappings as `key: value` pairs (a nested one in
    parentheses), true/false as yes/no, nothing as '-'."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        text = "; ".join(f"{k}: {_field(v, depth + 1)}" for k, v in value.items())
        return f"({text})" if depth else text
    return "-" if value is None or value == "" else str(value)


def _zones(cat: Catalog, shape: Shape) -> list[str] | str:
    """The zones that offer the shape, in every region the catalog lists it in (zones.yaml),
    or why the catalog cannot tell."""
    first = cat.zones_offering(shape, "")
    regions = first.regions
    if not first.known and not regions:
        return first.note or "not listed in the catalog's zones.yaml: any zone is allowed"
    return sorted({z for r in regions for z in cat.zones_offering(shape, r).offered})
