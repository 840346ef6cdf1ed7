"""Model parallelism: tensor, pipeline, context and expert degrees, and what they divide.

A :class:`Parallel` says how one model replica is split over GPUs; data parallelism (with
the ZeRO/FSDP sharding of :mod:`recommender.estimation.model_states`) takes the GPUs that are left:
``dp = gpus / (tp·pp·cp)``. Ranks are ordered as Megatron-LM orders them (tp innermost,
then cp, dp, pp outermost), so a tensor-parallel group sits inside one node and the
pipeline stages are spread across nodes.

Memory (memory.md §2, §6; Korthikanti et al. 2022):

* weights, gradients and optimizer states of the heaviest pipeline stage (its L/pp layers
  plus the embedding or the LM head) are divided by tp (Megatron splits every block matmul
  and the vocabulary); expert weights are divided by ep as well; what is left is then sharded
  by the data-parallel degree per the ZeRO stage (FSDP shards over dp·cp, as torchtitan and
  Megatron's distributed optimizer do);
* activations are divided by tp (sequence parallelism keeps even the norm inputs split) and
  by cp (each rank holds s/cp tokens); under 1F1B the first stage keeps pp micro-batches of
  L/pp layers, one micro-batch's L layers; the interleaved schedule ×(1 + (pp−1)/(pp·vp));
  the last stage holds L/pp layers and the logits.

The search (:func:`auto_layouts`) keeps tensor parallelism inside a node and only over
NVLink, grows it before adding pipeline stages across nodes, and gives the rest to data
parallelism; long sequences try context parallelism first, mixtures of experts expert
parallelism before tensor parallelism, EP × TP inside the node; a pipeline whose global batch
leaves few micro-batches per stage tries the interleaved 1F1B schedule first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from recommender.estimation.global_batch import MICROBATCHES_PER_STAGE, default_batch_tokens
from recommender.models import Architecture
from recommender.workload import Workload

__all__ = [
    "NO_PARALLEL",
    "Parallel",
    "activation_scale",
    "auto_layouts",
    "layers_per_stage",
    "parallel_notes",
    "requested",
    "stage_fractions",
    "with_fixed",
]

# Context parallelism pays off from ~16k tokens: torchtitan turns it on for 32k-262k
# (llama3_h100_202412_torchtitan.md Table 2), NeMo from 8k for Llama 3 8B CP2 (24.07
# performance summary); below 16k TP/SP splits activations as well (ours).
CP_MIN_SEQ = 16_384
#: Largest tensor-parallel degree: one 8-GPU HGX/DGX board (Megatron-LM keeps TP ≤ 8).
MAX_TP = 8
#: Layers per virtual stage of an interleaved pipeline: one, as NeMo 24.07's pretraining
#: recipes mostly run it (Llama 2 13B PP4 VP10, Llama 2 70B PP4 VP20, Nemotron-22B PP4 VP10,
#: Nemotron-340B PP8 VP12; GPT-3 175B PP8 VP6 has two; performance summary).
INTERLEAVE_LAYERS_PER_STAGE = 1


@dataclass(frozen=True, slots=True)
class Parallel:
    """Degrees of model parallelism. ``vp`` > 1 is the interleaved 1F1B schedule's virtual
    stages per pipeline rank; ``ep`` splits a mixture of experts' experts."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    vp: int = 1

    def __post_init__(self) -> None:
        if min(self.tp, self.pp, self.cp, self.ep, self.vp) < 1:
            raise ValueError("parallel degrees must be at least 1")
        if self.vp > 1 and self.pp == 1:
            raise ValueError("an interleaved schedule needs pipeline parallelism")

    @property
    def trivial(self) -> bool:
        """No model parallelism: one GPU holds a whole replica."""
        return self.tp == self.pp == self.cp == self.ep == self.vp == 1

    @property
    def replica(self) -> int:
        """GPUs one model replica spans (tp·pp·cp); expert parallelism reuses dp ranks."""
        return self.tp * self.pp * self.cp

    def dp(self, gpus: int) -> int:
        return max(gpus // self.replica, 1)

    def problem(self, m: Architecture, *, gpus: int, gpus_per_node: int) -> str | None:
        """Why this split cannot run on ``gpus`` GPUs, ``gpus_per_node`` a node, or ``None``."""
        if self.tp > gpus_per_node:
            return f"TP{self.tp} needs {self.tp} GPUs in one node (TP never crosses nodes)"
        if gpus % self.replica:
            return f"{self.describe_degrees()} needs a multiple of {self.replica} GPUs"
        if self.pp > m.layers:
            return f"PP{self.pp} needs at least {self.pp} layers"
        if self.pp * self.vp > m.layers:
            return f"PP{self.pp} interleaved ×{self.vp} needs at least {self.pp * self.vp} layers"
        if self.ep > 1 and (m.experts % self.ep or (self.dp(gpus) * self.cp) % self.ep):
            return f"EP{self.ep} must divide the experts and the data-parallel GPUs"
        return None

    def describe_degrees(self) -> str:
        parts = []
        if self.tp > 1:
            parts.append(f"TP{self.tp}")
        if self.pp > 1:
            parts.append(f"PP{self.pp}" + (f" (interleaved ×{self.vp})" if self.vp > 1 else ""))
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        return " × ".join(parts)

    def describe(self, gpus: int) -> str:
        """``TP8 × PP4 × DP8``: the degrees, data parallelism last."""
        return f"{self.describe_degrees()} × DP{self.dp(gpus)}"


NO_PARALLEL = Parallel()


class _HasParallel(Protocol):
    """A strategy (:class:`recommender.estimation.strategies.Strategy`) as far as the notes need
    it."""

    @property
    def parallel(self) -> Parallel: ...

    def describe(self, gpus: int | None = None) -> str: ...


def requested(workload: Workload) -> dict[str, int]:
    """The degrees the workload fixes, as keyword arguments of :class:`Parallel`."""
    fixed = {
        "tp": workload.tensor_parallel,
        "pp": workload.pipeline_parallel,
        "cp": workload.context_parallel,
        "ep": workload.expert_parallel,
        "vp": workload.virtual_stages,
    }
    return {k: v for k, v in fixed.items() if v is not None}


# ------------------------------------------------------------------ memory


def _stage_params(m: Architecture, pp: int) -> tuple[float, float]:
    """(parameters, of which experts) of the heaviest pipeline stage: ⌈L/pp⌉ blocks plus the
    embedding or the LM head (vocab·h each); the whole model without pipelining."""
    mlp = m.mlp_matrices * m.hidden * m.ffn
    experts_per_layer = float(mlp * m.experts) if m.experts > 1 else 0.0
    if pp == 1:
        return float(m.params), experts_per_layer * m.layers
    layers = math.ceil(m.layers / pp)
    attention = m.hidden * m.head_dim * (2 * m.heads + 2 * m.kv_heads)
    stage = layers * (attention + mlp * max(m.experts, 1)) + m.vocab * m.hidden
    return float(min(stage, m.params)), experts_per_layer * layers


def stage_fractions(m: Architecture, par: Parallel) -> tuple[float, float]:
    """Share of the model's parameters one GPU holds before data-parallel sharding:
    (for states then sharded over dp·cp, for states kept whole on each dp rank).

    Sharded states spread experts over the dp·cp ranks anyway, so ep does not divide them
    again; replicated ones (DDP weights, ZeRO-1 gradients) hold 1/ep of the experts."""
    if par.trivial:
        return 1.0, 1.0
    stage, experts = _stage_params(m, par.pp)
    sharded = stage / par.tp / m.params
    replicated = (stage - experts + experts / par.ep) / par.tp / m.params
    return sharded, replicated


def activation_scale(body: float, logits: float, par: Parallel) -> float:
    """Activation bytes of the busiest pipeline stage of one GPU, from one micro-batch's
    layer activations ``body`` (all L layers) and ``logits`` on one unsplit GPU."""
    if par.trivial:
        return body + logits
    split = par.tp * par.cp
    if par.pp == 1:
        return (body + logits) / split
    # 1F1B: the first stage holds pp micro-batches of L/pp layers (Korthikanti §4.2.3)
    first = body * (1 + (par.pp - 1) / (par.pp * par.vp)) if par.vp > 1 else body
    last = body / par.pp + logits
    return max(first, last) / split


# ------------------------------------------------------------------ search


def _divisors(n: int, cap: int) -> list[int]:
    return [d for d in range(2, min(n, cap) + 1) if n % d == 0]


def layers_per_stage(layers: int, stages: int) -> int | None:
    """Whole layers per (virtual) pipeline stage that cut ``layers`` into exactly ``stages``
    (torchtitan's ``pipeline_parallel_layers_per_stage`` makes ⌈layers / per stage⌉ of them),
    or ``None`` when no count does."""
    per = math.ceil(layers / stages)
    return per if math.ceil(layers / per) == stages else None


def _pipelines(workload: Workload, base: Parallel, gpus: int) -> list[Parallel]:
    """``base`` with ``base.pp`` stages: under the interleaved 1F1B schedule first when the
    global batch leaves each pipeline fewer than ``MICROBATCHES_PER_STAGE`` micro-batches per
    stage (the batch rule's ceiling binds, as for Llama 3 405B at 16,384 GPUs: m = p = 16,
    interleaved; Dubey et al. 2024 §3.3.2) and the stages hold more than one layer: as many
    virtual stages as cut the layers into whole, even stages of at least
    ``INTERLEAVE_LAYERS_PER_STAGE`` (:func:`layers_per_stage`); then plain 1F1B, which holds
    fewer micro-batches' activations (Korthikanti et al. 2022 §4.2.3)."""
    m = workload.model
    # the most virtual stages of at least that many whole layers that cut the model evenly
    most = m.layers // base.pp // INTERLEAVE_LAYERS_PER_STAGE
    vp = next((v for v in range(most, 1, -1) if layers_per_stage(m.layers, base.pp * v)), 1)
    pipelines = base.dp(gpus)
    per_round = pipelines * workload.micro_batch * workload.seq_len
    micro_batches = default_batch_tokens(workload, base, gpus) / per_round
    if vp < 2 or micro_batches >= MICROBATCHES_PER_STAGE * base.pp:
        return [base]
    return [replace(base, vp=vp), base]


def _node_splits(m: Architecture, *, gpus: int, gpus_per_node: int) -> list[list[Parallel]]:
    """Splits inside one NVLink node, by size tp·ep = 2, 4, … up to the node: a dense model's
    TP; a mixture of experts' EP before TP at each size (Megatron-Core MoE README, "Best
    Practices", guideline 4: prefer EP over TP for expert layers, EP8 × TP1 beating EP4 × TP2
    for Mixtral 8x7B; guideline 2: keep EP × TP inside the NVLink domain)."""
    groups: list[list[Parallel]] = []
    size = 2
    while size <= min(gpus_per_node, MAX_TP, gpus) and gpus % size == 0:
        group = []
        for tp in (2**i for i in range(size.bit_length())):  # 1, 2, … size: EP first
            ep = size // tp
            if m.heads % tp or (ep > 1 and (m.experts <= 1 or m.experts % ep)):
                continue
            group.append(Parallel(tp=tp, ep=ep))
        if not group:
            break
        groups.append(group)
        size *= 2
    return groups


def auto_layouts(
    workload: Workload, *, gpus: int, gpus_per_node: int, nvlink: bool
) -> tuple[Parallel, ...]:
    """Model-parallel splits to try on this layout, cheapest first, none of them trivial.

    Long sequences try context parallelism inside the node first; then the splits inside an
    NVLink node, smallest first (:func:`_node_splits`: TP 2, 4, …; a mixture of experts EP
    before TP at each size); then, for each split of the largest size (a mixture of experts'
    least TP first), pipeline stages across nodes (degrees dividing what is left, fewest
    first, each at least one layer; Megatron-Core's guideline 3: scale past a node with PP,
    keeping EP × TP inside it), each interleaved first where the batch leaves few
    micro-batches (:func:`_pipelines`).
    """
    m = workload.model
    out: list[Parallel] = []
    if workload.seq_len >= CP_MIN_SEQ:
        out += [Parallel(cp=c) for c in _divisors(gpus, gpus_per_node) if c & (c - 1) == 0]
    groups = _node_splits(m, gpus=gpus, gpus_per_node=gpus_per_node) if nvlink else []
    for group in groups:
        out += group
    top = groups[-1] if groups else [NO_PARALLEL]
    size = top[0].tp * top[0].ep
    for split in top:  # EP before TP: more pipeline stages before more TP (guideline 4)
        for p in _divisors(gpus // size, m.layers):
            out += _pipelines(workload, replace(split, pp=p), gpus)
    return tuple(out)


def with_fixed(layouts: tuple[Parallel, ...], fixed: dict[str, int]) -> tuple[Parallel, ...]:
    """The layouts with the workload's fixed degrees imposed, duplicates dropped, starting
    from exactly the fixed degrees (the others 1). A searched schedule's virtual stages are
    dropped where the pipeline degree is fixed (they were chosen for another degree)."""
    out: list[Parallel] = []
    for base in (NO_PARALLEL, *layouts):
        if "pp" in fixed and "vp" not in fixed:
            base = replace(base, vp=1)
        try:
            par = replace(base, **fixed)
        except ValueError:
            continue
        if par not in out:
            out.append(par)
    return tuple(out)


# ------------------------------------------------------------------ notes


def parallel_notes(
    workload: Workload,
    strategy: _HasParallel,
    tried: Sequence[tuple[_HasParallel, float]],
    *,
    usable: float,
    gpus: int,
    over: str | None = None,
) -> list[str]:
    """Which degrees the plan chose and why, for :attr:`Plan.notes`; ``over`` says what a
    rung exceeded (``> 67.3 (usable 79.2 less the safety margin)``; default: usable)."""
    par = strategy.parallel
    degrees = par.describe(gpus)
    if requested(workload):
        why = "as requested"
    elif workload.model_parallel:
        why = "3D parallelism as requested"
    else:
        plain = [total for s, total in tried if s.parallel.trivial]
        least = min(plain, default=math.inf)
        if gpus > MAX_TP:
            why = (
                "the model needs more than one node: splitting it inside each node moves "
                "less over the fabric than FSDP gathering every weight across all GPUs"
            )
        else:
            why = f"sharding alone needs {least:.1f} GiB/GPU {over or f'> {usable:.1f} usable'}"
    notes = [f"model split {degrees} ({why})"]
    if par.tp > 1:
        notes.append(
            f"TP{par.tp} with sequence parallelism inside each node over NVLink: weights and "
            f"activations ÷{par.tp}, two all-reduces per layer forward and backward"
        )
    if par.pp > 1:
        schedule = f"interleaved 1F1B, {par.vp} stages per GPU" if par.vp > 1 else "1F1B"
        notes.append(
            f"PP{par.pp} across nodes ({schedule}): the first stage keeps {par.pp} micro-batches "
            f"in flight; the bubble idles (p−1)/(m+p−1) of a step of m micro-batches"
            + (f", ÷{par.vp} interleaved" if par.vp > 1 else "")
        )
    if par.cp > 1:
        notes.append(f"CP{par.cp}: each GPU holds 1/{par.cp} of the sequence (ring attention)")
    if par.ep > 1:
        notes.append(
            f"EP{par.ep}: experts split over {par.ep} GPUs (all-to-all per layer; each expert's "
            f"gradients reduced over the {par.dp(gpus) * par.cp // par.ep} ranks holding it)"
        )
    label = strategy.describe(gpus).split(" + ")[0].split(" with ")[-1]
    notes.append(f"{label} over the {par.dp(gpus) * par.cp} data-parallel ranks")
    return notes
