"""The catalog's fast YAML reader means what YAML 1.2 (ruamel.yaml) means, for every catalog file
and for the scalars where YAML 1.1 and 1.2 differ."""

from __future__ import annotations

from importlib import resources

import pytest
from ruamel.yaml import YAML

from fleet._yaml12 import load_data

DATA = resources.files("fleet.catalog").joinpath("data")


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()
                                        if p.name.endswith(".yaml")))
def test_every_catalog_file_reads_as_ruamel_reads_it(name: str) -> None:
    text = DATA.joinpath(name).read_text(encoding="utf-8")
    assert load_data(text) == YAML(typ="safe", pure=True).load(text)


@pytest.mark.parametrize("scalar", [
    "1.6e11", "1e9", "-2.5E-3", ".inf", "-.Inf", "012", "0o17", "0x1F", "+7", "yes", "no", "on",
    "off", "y", "n", "True", "FALSE", "~", "null", "", "1_000", "0b101", "-0b1", "1__2", "0_7",
    "00", "1_0.5", "1:30", "2026-11-23", "2026-11-23T10:00:00Z", "3.", ".5", "0.0", "-0", "1e",
    "e3", "12abc"])
def test_scalars_where_yaml_11_and_12_differ(scalar: str) -> None:
    text = f"k: {scalar}\n"
    assert load_data(text) == YAML(typ="safe", pure=True).load(text)


def test_nan_is_nan() -> None:
    value = load_data("k: .nan\n")["k"]
    assert value != value
