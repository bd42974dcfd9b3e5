"""`advise`'s datasheet estimates against published training throughputs (docs/advise.md).

Each row is a published measurement (model, accelerator, devices, sequence length, batch) with
its source, run through the same estimate `accelfleet advise` makes on the matching catalog
shape. The test holds every estimate within a factor of 1.5 of the published figure: the model
is a roofline with one efficiency per kind of accelerator, not a simulator. Run this file as a
script to print the comparison table docs/advise.md shows:

    .venv/bin/python -m tests.fleet.test_advise_published
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from fleet.advise import Estimate, Offer, estimate, parse_workload
from fleet.catalog import load_catalog

LLAMA3_8B = {"layers": 32, "hidden_size": 4096, "ffn_hidden_size": 14336, "gated_mlp": True,
             "attention_heads": 32, "kv_heads": 8, "vocab_size": 128256}
LLAMA3_70B = {"layers": 80, "hidden_size": 8192, "ffn_hidden_size": 28672, "gated_mlp": True,
              "attention_heads": 64, "kv_heads": 8, "vocab_size": 128256}
LLAMA2_70B = {**LLAMA3_70B, "vocab_size": 32000}
MPT_7B = {"layers": 32, "hidden_size": 4096, "attention_heads": 32, "vocab_size": 50432,
          "tied_embeddings": True}  # MHA, 4h MLP (not gated)
MPT_70B = {"layers": 80, "hidden_size": 8192, "attention_heads": 64, "vocab_size": 50432,
           "tied_embeddings": True}

DGXC = ("NVIDIA/dgxc-benchmarking@741c886 llama3.1/README.md (2025-06-09), Megatron/NeMo, "
        "DGX H100")
AUTOMODEL = ("NVIDIA-NeMo/Automodel@36044ad docs/performance-summary.mdx (PyTorch FSDP2, "
             "DGX H100)")
TIERING = "AI-Hypercomputer/maxtext@20a91e1 docs/reference/models/tiering.md (MaxText)"
FOUNDRY = "mosaicml/llm-foundry@8c8dd48 scripts/train/benchmarking/README.md (Composer FSDP)"


@dataclass(frozen=True)
class Published:
    label: str
    model: dict[str, Any]
    machine: str  # the catalog shape the estimate runs on
    devices: int
    sequence_length: int
    batch: int  # global batch, sequences
    tokens_per_s_per_chip: float
    source: str
    checkpointing: str = "full"


ROWS = (
    Published("Llama 3.1 8B, 8 x H100, BF16", LLAMA3_8B, "p5.48xlarge", 8, 8192, 128,
              85_459 / 8, DGXC + ": 85,459 tokens/s on 8 GPUs (12.27 s a step), MFU 62.5%"),
    Published("Llama 3.1 70B, 64 x H100, BF16", LLAMA3_70B, "p5.48xlarge", 64, 8192, 128,
              71_526 / 64, DGXC + ": 71,526 tokens/s on 64 GPUs (14.66 s a step), MFU 54.3%"),
    Published("Llama 3 70B, 64 x H100, BF16, FSDP", LLAMA3_70B, "p5.48xlarge", 64, 8192, 128,
              866.77, AUTOMODEL + ": 866.77 tokens/s/GPU, 18.90 s a step"),
    Published("MPT 7B, 8 x H100, BF16", MPT_7B, "p5.48xlarge", 8, 2048, 48, 10_643,
              FOUNDRY + ": 10,643 tokens/s/GPU, MFU 46.4%", "none"),
    Published("MPT 70B, 64 x H100, BF16", MPT_70B, "p5.48xlarge", 64, 2048, 2048, 1_039,
              FOUNDRY + ": 1,039 tokens/s/GPU, MFU 42.6%"),
    Published("MPT 7B, 8 x A100 80GB, BF16", MPT_7B, "p4de.24xlarge", 8, 2048, 96, 4_641,
              FOUNDRY + ", 1600 Gbit/s RoCE: 4,641 tokens/s/GPU, MFU 64.2%", "none"),
    Published("MPT 70B, 64 x A100 80GB, BF16", MPT_70B, "p4de.24xlarge", 64, 2048, 2048, 410,
              FOUNDRY + ", 1600 Gbit/s RoCE: 410 tokens/s/GPU, MFU 53.3%"),
    Published("Llama 3.1 8B, v6e-256, BF16", LLAMA3_8B, "v6e", 256, 8192, 1024, 7_207,
              TIERING + ": about 7,207 tokens/s/device, MFU 45.46%"),
    Published("Llama 3.1 70B, v6e-256, BF16", LLAMA3_70B, "v6e", 256, 8192, 1280, 960,
              TIERING + ": about 960 tokens/s/device, MFU 50.33%"),
    Published("Llama 2 70B, v6e-256, BF16", LLAMA2_70B, "v6e", 256, 4096, 512, 900,
              TIERING + ": about 900 tokens/s/device, MFU 43.8%"),
    Published("Llama 2 70B, v5p-512, BF16", LLAMA2_70B, "v5p", 512, 4096, 2048, 692,
              TIERING + ": about 692 tokens/s/device, MFU 65.4%"),
)


def estimate_row(row: Published) -> Estimate:
    cat = load_catalog()
    shape = cat.resolve(row.machine)
    workload = parse_workload({
        "kind": "training", "model": row.model, "sequence_length": row.sequence_length,
        "global_batch_sequences": row.batch, "steps": 100, "devices": row.devices,
        "activation_checkpointing": row.checkpointing}, row.label)
    result = estimate(workload, Offer(row.machine, shape), cat)
    assert isinstance(result, Estimate), result
    return result


@pytest.mark.parametrize("row", ROWS, ids=[r.label for r in ROWS])
def test_estimate_within_a_factor_of_1_5_of_the_published_figure(row: Published) -> None:
    e = estimate_row(row)
    assert e.chips == row.devices
    ratio = e.tokens_per_s_per_chip / row.tokens_per_s_per_chip
    assert 1 / 1.5 <= ratio <= 1.5, (row.label, e.tokens_per_s_per_chip, ratio)


def table() -> str:
    lines = ["| workload, devices | estimate (tokens/s per chip) | bound | published | "
             "off by | source |", "|---|---:|---|---:|---:|---|"]
    for row in ROWS:
        e = estimate_row(row)
        off = e.tokens_per_s_per_chip / row.tokens_per_s_per_chip - 1
        lines.append(f"| {row.label} ({row.machine}) | {e.tokens_per_s_per_chip:,.0f} | "
                     f"{e.bound} | {row.tokens_per_s_per_chip:,.0f} | {off:+.0%} | "
                     f"{row.source} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
