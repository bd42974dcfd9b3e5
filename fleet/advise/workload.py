"""A workload and its arithmetic: parameters, FLOPs, memory traffic and memory footprint.

Everything here is a count, not a time: `fleet.advise.estimate` turns the counts into times with
the figures of a chip. The formulas and their sources (named in each function):

- parameters from the shape: embeddings V h (and an untied output layer V h), per layer the
  attention projections h (h + 2 kv_dim + h) and the MLP (2 or, gated, 3) h f, two norms of h;
- training FLOPs per token: 6 N_matmul + 12 L h s (Kaplan et al. 2020, arXiv:2001.08361, for
  6 N; Narayanan et al. 2021, arXiv:2104.04473, and PaLM's Appendix B, arXiv:2204.02311, for
  the attention term, counted whole as they count it, causal masking or not);
- model state: 16 bytes per parameter for mixed-precision Adam (Rajbhandari et al. 2020, ZeRO,
  arXiv:1910.02054), sharded over every device (ZeRO-3 / FSDP);
- activations of one micro-batch (Korthikanti et al. 2022, arXiv:2205.05198): per layer
  s b h (34 + 5 a s / h) bytes, 34 s b h with selective recomputation, and with full
  recomputation 2 s b h per layer plus one layer's 34 s b h being recomputed; plus the fp32
  logits of the loss, 4 s b V;
- inference (Pope et al. 2022, arXiv:2211.05102): 2 N_matmul + 4 L h c FLOPs per token at
  context c; a decode step reads every weight once and the KV cache, 2 L kv_dim values per
  token of context.
Units are in the names: `_bytes`, `_flops`, `_tokens`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["training", "inference"]
Checkpointing = Literal["none", "selective", "full"]
BF16_BYTES = 2
ADAM_MIXED_STATE_BYTES = 16  # 2 bf16 weights + 2 bf16 grads + 4 fp32 master + 4 + 4 Adam moments
LOGIT_BYTES = 4  # fp32 logits for the loss


@dataclass(frozen=True)
class ModelShape:
    """A dense decoder-only transformer. Either the shape (layers .. vocab_size) or only
    `parameters` (then FLOPs are 6 N per token and activations are not counted)."""

    parameters: float | None = None  # total, embeddings included; derived from the shape if None
    layers: int | None = None
    hidden_size: int | None = None
    ffn_hidden_size: int | None = None  # default 4 x hidden_size
    gated_mlp: bool = False  # SwiGLU and kin: three MLP matrices instead of two
    attention_heads: int | None = None
    kv_heads: int | None = None  # grouped-query attention; default attention_heads
    vocab_size: int | None = None
    tied_embeddings: bool = False

    @property
    def has_shape(self) -> bool:
        return None not in (self.layers, self.hidden_size, self.attention_heads,
                            self.vocab_size)

    def _shape(self) -> tuple[int, int, int, int, int]:
        """(L, h, f, a, V); only when `has_shape`."""
        assert self.layers and self.hidden_size and self.attention_heads and self.vocab_size
        h = self.hidden_size
        return (self.layers, h, self.ffn_hidden_size or 4 * h, self.attention_heads,
                self.vocab_size)

    @property
    def kv_dim(self) -> int:
        """Width of the keys (and of the values) of one layer: kv_heads x head dimension."""
        _, h, _, a, _ = self._shape()
        return (self.kv_heads or a) * (h // a)

    @property
    def layer_matmul_parameters(self) -> int:
        """Weights one layer multiplies by: attention q, k, v, o and the MLP."""
        _, h, f, _, _ = self._shape()
        return h * (2 * h + 2 * self.kv_dim) + (3 if self.gated_mlp else 2) * h * f

    @property
    def matmul_parameters(self) -> float:
        """N_matmul: every layer's matmul weights and the output layer (an embedding lookup
        multiplies nothing). Without a shape, the total parameters."""
        if not self.has_shape:
            assert self.parameters is not None
            return self.parameters
        layers, h, _, _, vocab = self._shape()
        return layers * self.layer_matmul_parameters + vocab * h

    @property
    def total_parameters(self) -> float:
        """N: as given, else counted from the shape (norm weights included)."""
        if self.parameters is not None:
            return self.parameters
        layers, h, _, _, vocab = self._shape()
        embeddings = vocab * h * (1 if self.tied_embeddings else 2)
        return embeddings + layers * (self.layer_matmul_parameters + 2 * h) + h

    def attention_flops_per_token(self, context_tokens: float) -> float:
        """Forward FLOPs of attention scores and values for one token against `context_tokens`
        keys: 4 L h c (0 without a shape)."""
        if not self.has_shape:
            return 0.0
        layers, h, _, _, _ = self._shape()
        return 4.0 * layers * h * context_tokens

    def kv_cache_bytes_per_token(self) -> float:
        """Keys and values of one token in every layer, bf16 (0 without a shape)."""
        if not self.has_shape:
            return 0.0
        return 2.0 * (self.layers or 0) * self.kv_dim * BF16_BYTES


@dataclass(frozen=True)
class RawStep:
    """A step given as raw counts instead of a model: FLOPs and memory traffic of the whole
    step (all devices together), what it holds in memory, and what it all-reduces."""

    flops: float
    memory_traffic_bytes: float
    memory_bytes: float = 0.0  # held across all devices (shardable)
    collective_bytes: float = 0.0  # all-reduced once per step (training: the gradients)


@dataclass(frozen=True)
class Training:
    sequence_length: int
    global_batch_sequences: int
    micro_batch_sequences: int = 1
    tokens: float | None = None
    steps: int | None = None
    checkpointing: Checkpointing = "selective"
    state_bytes_per_parameter: float = ADAM_MIXED_STATE_BYTES

    @property
    def tokens_per_step(self) -> int:
        return self.sequence_length * self.global_batch_sequences

    @property
    def step_count(self) -> int:
        if self.steps is not None:
            return self.steps
        assert self.tokens is not None
        return math.ceil(self.tokens / self.tokens_per_step)


@dataclass(frozen=True)
class Inference:
    prompt_tokens: int
    output_tokens: int
    batch_sequences: int
    requests: int

    @property
    def mean_context_tokens(self) -> float:
        """Context a decode step attends to, on average over the generated tokens."""
        return self.prompt_tokens + self.output_tokens / 2


@dataclass(frozen=True)
class Workload:
    """A job to place: training or inference, of a model (or of raw per-step counts)."""

    kind: Kind
    devices: int = 1
    name: str = "workload"
    description: str = ""
    sources: tuple[str, ...] = ()
    precision: str = "bf16"
    model: ModelShape | None = None
    raw: RawStep | None = None
    raw_steps: int | None = None
    training: Training | None = None
    inference: Inference | None = None
    notes: tuple[str, ...] = field(default=())

    # -- training ---------------------------------------------------------------------
    @property
    def steps(self) -> int:
        if self.raw is not None:
            assert self.raw_steps is not None
            return self.raw_steps
        if self.training is not None:
            return self.training.step_count
        assert self.inference is not None
        return self.inference.output_tokens  # decode steps per batch

    def training_flops_per_token(self) -> float:
        """6 N_matmul + 12 L h s (see the module docstring)."""
        assert self.model is not None and self.training is not None
        s = self.training.sequence_length
        return 6.0 * self.model.matmul_parameters + 3.0 * self.model.attention_flops_per_token(s)

    def training_step_flops(self) -> float:
        if self.raw is not None:
            return self.raw.flops
        assert self.training is not None
        return self.training_flops_per_token() * self.training.tokens_per_step

    def state_bytes(self) -> float:
        """Model state across all devices: weights, gradients and optimizer (training), or the
        bf16 weights (inference); with raw counts, `memory_bytes`."""
        if self.raw is not None:
            return self.raw.memory_bytes
        assert self.model is not None
        per = (self.training.state_bytes_per_parameter if self.training is not None
               else BF16_BYTES)
        return self.model.total_parameters * per

    def activation_bytes(self) -> float:
        """Activations of one micro-batch on one device, and the loss's fp32 logits."""
        if self.raw is not None or self.model is None or not self.model.has_shape:
            return 0.0
        t = self.training
        assert t is not None
        layers, h, _, heads, vocab = self.model._shape()
        s, b = t.sequence_length, t.micro_batch_sequences
        sbh = float(s * b * h)
        if t.checkpointing == "none":
            acts = layers * sbh * (34 + 5 * heads * s / h)
        elif t.checkpointing == "selective":
            acts = layers * sbh * 34
        else:
            acts = layers * sbh * 2 + sbh * 34
        return acts + LOGIT_BYTES * s * b * vocab

    def gathered_layer_bytes(self) -> float:
        """One layer's bf16 weights gathered whole by FSDP, twice (the layer running and the
        one prefetched)."""
        if self.model is None or not self.model.has_shape:
            return 0.0
        return 2.0 * BF16_BYTES * self.model.layer_matmul_parameters

    def gradient_bytes(self) -> float:
        """What a data-parallel step all-reduces: the bf16 gradients."""
        if self.raw is not None:
            return self.raw.collective_bytes
        assert self.model is not None
        return BF16_BYTES * self.model.total_parameters

    def training_traffic_bytes(self, devices: int) -> float:
        """Memory traffic of one step on one device: per micro-batch, the gathered bf16
        weights read three times (forward, and the two products of the backward pass) and the
        activations written and read once; per step, the device's shard of the model state
        read and written by the optimizer."""
        if self.raw is not None:
            return self.raw.memory_traffic_bytes / devices
        assert self.model is not None and self.training is not None
        t = self.training
        micro_batches = t.global_batch_sequences / (t.micro_batch_sequences * devices)
        per_micro = 3 * BF16_BYTES * self.model.total_parameters + 2 * self.activation_bytes()
        return micro_batches * per_micro + 2 * self.state_bytes() / devices

    # -- inference --------------------------------------------------------------------
    def kv_cache_bytes(self) -> float:
        """KV cache of one replica's batch at its longest (prompt and every output token)."""
        assert self.model is not None and self.inference is not None
        i = self.inference
        return (i.batch_sequences * (i.prompt_tokens + i.output_tokens)
                * self.model.kv_cache_bytes_per_token())

    def prefill_flops(self) -> float:
        """One batch's prompts: 2 N_matmul + 4 L h p per token (attention over the prompt)."""
        assert self.model is not None and self.inference is not None
        i = self.inference
        per_token = (2.0 * self.model.matmul_parameters
                     + self.model.attention_flops_per_token(i.prompt_tokens))
        return i.batch_sequences * i.prompt_tokens * per_token

    def decode_step_flops(self) -> float:
        """One token for each sequence of the batch, at the mean context."""
        assert self.model is not None and self.inference is not None
        i = self.inference
        per_token = (2.0 * self.model.matmul_parameters
                     + self.model.attention_flops_per_token(i.mean_context_tokens))
        return i.batch_sequences * per_token

    def decode_step_bytes(self) -> float:
        """Every bf16 weight, and the batch's KV cache at the mean context."""
        assert self.model is not None and self.inference is not None
        i = self.inference
        kv = i.batch_sequences * i.mean_context_tokens * self.model.kv_cache_bytes_per_token()
        return BF16_BYTES * self.model.total_parameters + kv

    def decode_collective_bytes(self) -> float:
        """Tensor parallelism all-reduces each layer's attention and MLP outputs: 2 L of them
        per decode step, each batch x hidden bf16 values (0 without a shape)."""
        assert self.model is not None and self.inference is not None
        if not self.model.has_shape:
            return 0.0
        layers, h, _, _, _ = self.model._shape()
        return 2.0 * layers * self.inference.batch_sequences * h * BF16_BYTES

    @property
    def total_tokens(self) -> float:
        """Tokens the run processes: trained on, or generated."""
        if self.training is not None:
            return float(self.training.step_count * self.training.tokens_per_step)
        if self.inference is not None:
            return float(self.inference.requests * self.inference.output_tokens)
        return 0.0

    def summary(self) -> dict[str, Any]:
        """The workload's counts, JSON-ready (what `advise --json` reports beside the
        candidates)."""
        out: dict[str, Any] = {
            "name": self.name, "kind": self.kind, "description": self.description,
            "sources": list(self.sources), "precision": self.precision,
            "devices_wanted": self.devices, "notes": list(self.notes),
            "parameters": None if self.model is None else self.model.total_parameters,
            "matmul_parameters": None if self.model is None else self.model.matmul_parameters,
            "state_bytes": self.state_bytes(), "tokens": self.total_tokens,
        }
        if self.raw is not None:
            out |= {"steps": self.steps, "flops_per_step": self.raw.flops,
                    "traffic_bytes_per_step": self.raw.memory_traffic_bytes,
                    "collective_bytes_per_step": self.raw.collective_bytes}
        elif self.training is not None:
            t = self.training
            out |= {"steps": self.steps, "sequence_length": t.sequence_length,
                    "global_batch_sequences": t.global_batch_sequences,
                    "micro_batch_sequences": t.micro_batch_sequences,
                    "tokens_per_step": t.tokens_per_step,
                    "activation_checkpointing": t.checkpointing,
                    "flops_per_token": self.training_flops_per_token(),
                    "flops_per_step": self.training_step_flops(),
                    "activation_bytes_per_device": self.activation_bytes(),
                    "gradient_bytes": self.gradient_bytes()}
        elif self.inference is not None:
            i = self.inference
            out |= {"requests": i.requests, "prompt_tokens": i.prompt_tokens,
                    "output_tokens": i.output_tokens, "batch_sequences": i.batch_sequences,
                    "kv_cache_bytes_per_batch": self.kv_cache_bytes(),
                    "prefill_flops_per_batch": self.prefill_flops(),
                    "decode_step_flops": self.decode_step_flops(),
                    "decode_step_bytes": self.decode_step_bytes()}
        return out
