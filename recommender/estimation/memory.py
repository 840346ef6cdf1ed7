"""Training memory per GPU: model states, activations and overhead under a strategy.

The model, in one paragraph: every parameter costs bytes for its weights, its gradient and
its optimizer states, which depend on the precision regime and the optimizer (ZeRO §3.1
accounting, memory.md §1). Sharding divides some of those by the data-parallel degree (ZeRO
§5; FSDP is the same arithmetic) and full sharding adds the gathered, unsharded units that
are alive during forward and backward. CPU offload moves states off the GPU. LoRA trains
small adapters on a frozen base (QLoRA: a 4-bit NF4 base). Activations are counted tensor
by tensor from the architecture (Korthikanti et al. 2022 §4) for one micro-batch, with or
without full recomputation, plus the fp32 logits of the loss. Overhead is the CUDA context,
library workspaces, communication buffers and a fragmentation margin. Everything is in GiB
per GPU; compare :attr:`MemoryBreakdown.total_gib` with :func:`usable_gib`.

The model states per parameter and their sharding are in :mod:`recommender.estimation.model_states`,
the activations in :mod:`recommender.estimation.activations`; this module holds the strategy, the
overhead and usable capacity, and :class:`MemoryModel`, which adds them up per GPU.

``docs/estimator.md`` explains every assumption and shows the calibration against published
measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation import fp8
from recommender.estimation.activations import DEFAULT_KERNELS, Kernels, activations
from recommender.estimation.capacity import (
    HEADROOM_FRAC,
    HEADROOM_MIN_GIB,
    safe_limit_gib,
    safety_margin_gib,
    usable_gib,
)
from recommender.estimation.frameworks import fp32_main_grads, unsharded_accumulation
from recommender.estimation.model_states import (
    block_params,
    frozen_base_bytes,
    lora_params,
    regime,
    shard_degree,
    trainable_bytes,
)
from recommender.estimation.parallelism import Parallel, activation_scale, stage_fractions
from recommender.estimation.posttrain import extra_models
from recommender.estimation.strategies import Strategy
from recommender.estimation.zero3 import WorkingSet, working_set
from recommender.models import Architecture
from recommender.workload import Method, Offload, Precision, Sharding, Workload

__all__ = [
    "HEADROOM_FRAC",
    "HEADROOM_MIN_GIB",
    "MemoryBreakdown",
    "MemoryModel",
    "Strategy",
    "estimate_memory",
    "safe_limit_gib",
    "safety_margin_gib",
    "usable_gib",
]

GIB = 2**30

# ------------------------------------------------------------------ constants (each sourced)

# CUDA context with lazy module loading (CUDA ≥ 11.7, PyTorch ≥ 1.13): 287 MB measured in
# pytorch/pytorch PR #86509, "~300MB" in #107667, ~400 MB in #109888, 426 MiB in
# unslothai/unsloth-zoo PR #1053. 0.5 GiB covers the spread.
CUDA_CONTEXT_GIB = 0.5
# cuBLAS/cuDNN workspaces and allocator slack outside the tensors we count (ours: no single
# published constant; memory.md §7 recommends 0.5 GiB).
WORKSPACE_GIB = 0.5
# NCCL buffers, DDP/ZeRO-1/2 gradient buckets and FSDP all-gather staging when world size > 1
# (ours, memory.md §7); ZeRO-3's reduce bucket is counted apart (recommender.estimation.zero3).
COMMS_BUFFER_GIB = 1.0
# The caching allocator fragments: reserved exceeds allocated. A 10 % margin on activations,
# the tensors that are allocated and freed every step (ours, memory.md §7).
FRAGMENTATION_FRACTION = 0.10
# DeepSpeed's estimator multiplies every CPU figure by additional_buffer_factor = 1.5
# (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py, commit 38327e0).
HOST_BUFFER_FACTOR = 1.5

# ------------------------------------------------------------------ breakdown


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Peak memory of one GPU, in GiB.

    ``weights_gib`` holds the model's parameters resident on this GPU (its shard, the frozen
    base for LoRA, plus the gathered units under full sharding); ``optimizer_gib`` includes
    the fp32 master copy of mixed precision (ZeRO's K). ``logits_gib`` and ``gathered_gib``
    are parts of ``activations_gib`` and ``weights_gib``+``gradients_gib``; ``cuda_context_gib``
    and ``fragmentation_gib`` are parts of ``overhead_gib``. ``cpu_offload_gib`` is host RAM
    this GPU's rank needs for offloaded states (not part of the total).
    """

    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    overhead_gib: float
    logits_gib: float = 0.0
    gathered_gib: float = 0.0
    cuda_context_gib: float = 0.0
    fragmentation_gib: float = 0.0
    cpu_offload_gib: float = 0.0
    trainable_params: int = 0
    #: KV cache of on-policy generation (GRPO, PPO), which peaks apart from training; part
    #: of ``activations_gib`` when it is the larger.
    generation_gib: float = 0.0

    @property
    def total_gib(self) -> float:
        return (
            self.weights_gib
            + self.gradients_gib
            + self.optimizer_gib
            + self.activations_gib
            + self.overhead_gib
        )

    @property
    def model_states_gib(self) -> float:
        """Weights + gradients + optimizer states, the quantity the ZeRO paper tabulates."""
        return self.weights_gib + self.gradients_gib + self.optimizer_gib

    @property
    def pytorch_gib(self) -> float:
        """What ``torch.cuda.max_memory_reserved`` would show: the total less the CUDA context,
        which PyTorch's allocator does not see (published peaks are usually this number)."""
        return self.total_gib - self.cuda_context_gib


def estimate_memory(
    workload: Workload,
    strategy: Strategy,
    *,
    gpus: int,
    gpus_per_node: int,
    kernels: Kernels = DEFAULT_KERNELS,
) -> MemoryBreakdown:
    """Peak memory per GPU of ``workload`` run with ``strategy`` on ``gpus`` GPUs."""
    if gpus < 1 or gpus_per_node < 1:
        raise ValueError("gpus and gpus_per_node must be at least 1")
    return MemoryModel(workload, kernels).breakdown(
        strategy, gpus=gpus, gpus_per_node=gpus_per_node
    )


class MemoryModel:
    """:func:`estimate_memory` for one workload, with everything the layout does not change
    computed once (trainable counts, bytes per parameter, activations, fixed overhead).

    A layout search evaluates the same workload under dozens of (strategy, GPU count) pairs;
    :meth:`breakdown` is then a handful of float operations, in the same order as the
    one-shot function, so the figures are identical.
    """

    __slots__ = (
        "_accum_grads",
        "_activations",
        "_framework",
        "_grads_floor",
        "_grads_total",
        "_host_opt",
        "_model",
        "_optimizer_total",
        "_overhead",
        "_paged",
        "_peft",
        "_pp_grads",
        "_splits",
        "_terms_memo",
        "_trainable",
        "_weights_total",
        "_working",
    )

    def __init__(self, workload: Workload, kernels: Kernels = DEFAULT_KERNELS) -> None:
        m = workload.model
        reg = regime(workload.precision)
        peft = not workload.method.trains_all_weights
        # Trainable parameters and what each costs.
        trainable: int
        if peft:
            trainable = lora_params(m, workload.lora_rank, workload.lora_targets)
            frozen_bytes, block_bytes = frozen_base_bytes(workload)
        else:
            trainable = m.params
            frozen_bytes = 0.0
            block_bytes = workload.precision.compute_bytes
        fp32_grads = fp32_main_grads(workload.framework) and not peft
        per = trainable_bytes(workload.optimizer, reg, adapters=peft, fp32_grads=fp32_grads)
        # Post-training: frozen reference/reward models and PPO's trained value model
        # (recommender.estimation.posttrain), held, split and sharded like the policy's weights.
        extra_frozen, value_share = extra_models(workload, frozen_bytes)
        trained = round(trainable * (1 + value_share))
        savers = workload.savers
        self._terms_memo: dict[tuple[Strategy, bool, bool], _Terms] = {}
        self._splits: dict[tuple[Parallel, int], tuple[float, float, float, float, float]] = {}
        self._model = m
        self._peft = peft
        self._trainable = trained
        self._weights_total = trained * per.weights + frozen_bytes + extra_frozen
        # FP8 (recommender.estimation.fp8): Transformer Engine caches FP8 weights and transposes;
        # torchao casts one layer at a time; TE keeps amax histories and scales.
        block = block_params(m)
        fp8_fixed = 0.0
        if workload.precision is Precision.FP8_MIXED:
            recipe = fp8.recipe(workload.framework)
            cache = fp8.weight_cache_bytes_per_param(recipe) * block * m.layers
            self._weights_total += cache
            fp8_fixed = fp8.weight_cast_bytes(recipe, block) + fp8.scaling_state_bytes(recipe, m)
        # Optimizer step in backward (torchtune optimizer_in_bwd; Lv et al. 2023 LOMO): each
        # gradient is applied and freed as soon as it is ready, so no full gradient buffer
        # exists; one unit's gradient at a time remains (``_grads_floor``, set below).
        self._grads_total = 0.0 if savers.optimizer_in_backward else trained * per.grads
        # bitsandbytes paged optimizers allocate their states in CUDA unified memory
        # (cudaMallocManaged), which the driver evicts to host RAM under pressure (QLoRA §2
        # "Paged Optimizers"): they need host RAM, not GPU memory, and PyTorch's allocator
        # does not see them. The fp32 master copy of mixed precision is not paged.
        states = trained * (per.optimizer - per.master)
        self._paged = states if savers.paged_optimizer else 0.0
        self._optimizer_total = trained * per.optimizer - self._paged
        # ZeRO-Offload: fp32 master, states and fp32 gradients live on the CPU; the GPU keeps
        # its 16-bit weights (ZeRO-2: 2Ψ; ZeRO-3: 2Ψ/N; DeepSpeed estimators) and streams
        # gradients out in buckets (counted in the communication buffers).
        self._host_opt = trained * (per.optimizer + (4.0 if per.master else per.grads))

        # Full sharding's working set, as FSDP or DeepSpeed ZeRO-3 allocates it (zero3.py):
        # gathered parameters, the unit's unsharded gradient (full training only; adapters'
        # gradients are tiny) and ZeRO-3's reduce bucket.
        unit = m.largest_layer_params
        dense = workload.precision.compute_bytes
        self._working = {
            kind: working_set(
                m,
                kind,
                workload.framework,
                block=block,
                block_bytes=block_bytes,
                embed_bytes=dense,
                grad_bytes=per.grads,
                trains_base=not peft,
                compute_bytes=dense,
            )
            for kind in (Sharding.FSDP, Sharding.ZERO3)
        }
        self._grads_floor = unit * per.grads if savers.optimizer_in_backward and not peft else 0.0
        # Accumulation under FSDP no_sync (frameworks.unsharded_accumulation) keeps the whole
        # gradient, with FSDP1 flat parameters (Kernels.flat_frozen_grads) the frozen blocks'.
        frozen = block * m.layers * dense if peft and kernels.flat_frozen_grads else 0.0
        self._accum_grads = (0.0 if savers.optimizer_in_backward else trained * per.grads) + frozen
        self._framework = workload.framework
        # Full sharding under a pipeline keeps the stage unsharded for the whole step:
        # torchtitan does not reshard after forward when PP is on ("to avoid per-microbatch
        # all-gathers", models/llama3/infra/parallelize.py apply_fsdp), and the pipeline stage
        # syncs gradients only on the last micro-batch's backward (torch.distributed.pipelining
        # stage.py, set_requires_gradient_sync(last_backward)), so each micro-batch's
        # unsharded gradient accumulates in FSDP2's reduce dtype: fp32 under mixed precision
        # (FSDPParam.to_accumulated_grad_if_needed; torchtitan mixed_precision_reduce float32).
        accumulate = 4.0 if per.master else per.grads
        self._pp_grads = 0.0 if savers.optimizer_in_backward else trained * accumulate

        # Activations and overhead, per checkpointing choice and (overhead) world size > 1.
        self._activations = (
            activations(workload, False, kernels),
            activations(workload, True, kernels),
        )
        overhead: list[tuple[float, float]] = []
        for act in self._activations:
            fragmentation = FRAGMENTATION_FRACTION * act.gpu
            single = CUDA_CONTEXT_GIB * GIB + WORKSPACE_GIB * GIB + fragmentation + fp8_fixed
            multi = single + COMMS_BUFFER_GIB * GIB
            if workload.method is Method.QLORA:
                # One linear layer is dequantised to bf16 at a time for its matmul.
                single += 2.0 * m.hidden * m.ffn
                multi += 2.0 * m.hidden * m.ffn
            overhead.append((single, multi))
        self._overhead = tuple(overhead)

    @property
    def model(self) -> Architecture:
        """The workload's model."""
        return self._model

    def _terms(self, strategy: Strategy, *, single_gpu: bool, dp_multi: bool) -> _Terms:
        """The strategy's per-GPU bytes as kept + sharded / n (see :class:`_Terms`); they
        depend on the layout only through whether it is one GPU and whether data
        parallelism spans several ranks, so a search computes them once per strategy."""
        key = (strategy, single_gpu, dp_multi)
        found = self._terms_memo.get(key)
        if found is not None:
            return found
        sharding, par = strategy.sharding, strategy.parallel
        ckpt = 1 if strategy.checkpointing else 0
        own, whole, act, extra_overhead, host_act = self._split(par, ckpt)

        def part(total: float, sharded: bool) -> tuple[float, float]:
            return (0.0, total * own) if sharded else (total * whole, 0.0)

        full = sharding.shards_params
        sharded_opt = sharding.shards_optimizer
        weights = part(self._weights_total, full)
        grads = part(self._grads_total, sharding.shards_grads)
        optimizer = part(self._optimizer_total, sharded_opt)

        gathered_w, gathered_g, buckets = (0.0, 0.0), 0.0, 0.0
        if full and dp_multi and par.pp > 1:
            # The whole stage stays gathered, its gradients unsharded (see __init__):
            # stage·(1 − 1/n) on top of the stage's own shard.
            stage = self._weights_total * own
            gathered_w, gathered_g = (stage, -stage), self._pp_grads * own
        elif (full and dp_multi) or strategy.offload is Offload.PARAMS:
            # Tensor parallelism splits the gathered unit as it splits every block matmul.
            ws = self._working_for(sharding)
            gathered_w, gathered_g = (ws.weights / par.tp, 0.0), ws.grads / par.tp
            buckets = ws.buckets
        floor = max(self._grads_floor / par.tp - gathered_g, 0.0)

        host = (0.0, 0.0)
        if strategy.offload is not Offload.NONE:
            # Optimizer offload moves the states, the master copy and the gradients; parameter
            # offload (ZeRO-3/Infinity, FSDP CPUOffload(offload_params=True)) the weights too.
            kept, sharded = part(self._host_opt, sharded_opt or single_gpu)
            optimizer = grads = (0.0, 0.0)
            floor = 0.0  # the gradients live on the host
            if strategy.offload is Offload.PARAMS:
                sharded += self._weights_total * own
                weights = (0.0, 0.0)
            host = (kept * HOST_BUFFER_FACTOR, sharded * HOST_BUFFER_FACTOR)
        elif self._paged:
            host = part(self._paged, sharded_opt)
        if dp_multi and par.pp == 1 and unsharded_accumulation(self._framework, sharding):
            # The whole gradient per rank, on the GPU even under CPU offload (FSDP no_sync docs).
            grads, gathered_g, floor = (self._accum_grads * whole, 0.0), 0.0, 0.0
        overhead = self._overhead[ckpt][0 if single_gpu else 1] + extra_overhead + buckets
        weights = (weights[0] + gathered_w[0], weights[1] + gathered_w[1])
        grads = (grads[0] + floor + gathered_g, grads[1])
        terms = _Terms(
            weights=weights,
            grads=grads,
            optimizer=optimizer,
            activations=act,
            overhead=overhead,
            host=(host[0] + host_act, host[1]),
            gathered=(gathered_w[0] + gathered_g, gathered_w[1]),
            total=(
                weights[0] + grads[0] + optimizer[0] + act + overhead,
                weights[1] + grads[1] + optimizer[1],
            ),
        )
        self._terms_memo[key] = terms
        return terms

    def _working_for(self, sharding: Sharding) -> WorkingSet:
        """DeepSpeed's ZeRO-3 working set, or FSDP's (also HSDP's) for the other shardings."""
        return self._working[Sharding.ZERO3 if sharding is Sharding.ZERO3 else Sharding.FSDP]

    def _split(self, par: Parallel, ckpt: int) -> tuple[float, float, float, float, float]:
        """What model parallelism ``par`` leaves on one GPU, with or without checkpointing
        (``ckpt``): the shares of the model's states (sharded, replicated), its activations,
        the fragmentation margin they add beyond the unsplit ones', and the host RAM of
        offloaded activations; shared by every sharding and offload of the split."""
        key = (par, ckpt)
        found = self._splits.get(key)
        if found is not None:
            return found
        # Model parallelism first: this GPU's share of the model (memory.md §2, 3D), then
        # data-parallel sharding over the rest (parallelism.py). Trivial: 1.0, unchanged.
        own, whole = stage_fractions(self._model, par)
        acts = self._activations[ckpt]
        act, extra, host_act = acts.gpu, 0.0, acts.host
        if not par.trivial:  # split activations; the fragmentation margin follows them
            # Offloaded activations are layer activations: split like the body on the GPU.
            host_act = activation_scale(acts.host, 0.0, par)
            train = activation_scale(acts.train - acts.logits, acts.logits, par)
            split = max(train, acts.generation / (par.tp * par.pp))
            extra = FRAGMENTATION_FRACTION * (split - act)
            act = split
        found = self._splits[key] = (own, whole, act, extra, host_act)
        return found

    def _terms_on(self, strategy: Strategy, gpus: int, gpus_per_node: int) -> tuple[_Terms, int]:
        """The strategy's terms on this layout and the degree ``n`` its states are sharded
        over (:func:`~recommender.estimation.model_states.shard_degree` of the data-parallel
        ranks)."""
        par = strategy.parallel
        dp_gpus, dp_per_node = gpus, gpus_per_node
        if not par.trivial:
            dp_gpus = max(gpus // (par.tp * par.pp), 1)
            dp_per_node = max(gpus_per_node // par.tp, 1)
        n = shard_degree(strategy.sharding, gpus=dp_gpus, gpus_per_node=dp_per_node)
        return self._terms(strategy, single_gpu=gpus == 1, dp_multi=dp_gpus > 1), n

    def totals(self, strategy: Strategy, *, gpus: int, gpus_per_node: int) -> tuple[float, float]:
        """(``total_gib``, ``cpu_offload_gib``) of :meth:`breakdown`, without building it."""
        terms, n = self._terms_on(strategy, gpus, gpus_per_node)
        return _at(terms.total, n) / GIB, _at(terms.host, n) / GIB

    def breakdown(self, strategy: Strategy, *, gpus: int, gpus_per_node: int) -> MemoryBreakdown:
        """Peak memory per GPU with ``strategy`` on ``gpus`` GPUs (as :func:`estimate_memory`)."""
        terms, n = self._terms_on(strategy, gpus, gpus_per_node)
        acts = self._activations[1 if strategy.checkpointing else 0]
        logits, generation = acts.logits, acts.generation
        par = strategy.parallel
        if not par.trivial:  # only the last pipeline stage computes the (vocab-split) loss
            logits /= par.tp * par.cp
            generation /= par.tp * par.pp  # KV heads split by TP, layers by PP
        return MemoryBreakdown(
            weights_gib=_at(terms.weights, n) / GIB,
            gradients_gib=_at(terms.grads, n) / GIB,
            optimizer_gib=_at(terms.optimizer, n) / GIB,
            activations_gib=terms.activations / GIB,
            overhead_gib=terms.overhead / GIB,
            logits_gib=logits / GIB,
            gathered_gib=_at(terms.gathered, n) / GIB,
            cuda_context_gib=CUDA_CONTEXT_GIB,
            fragmentation_gib=FRAGMENTATION_FRACTION * terms.activations / GIB,
            cpu_offload_gib=_at(terms.host, n) / GIB,
            trainable_params=self._trainable,
            generation_gib=generation / GIB,
        )


@dataclass(frozen=True, slots=True)
class _Terms:
    """One strategy's per-GPU bytes, each part as (kept, sharded): what every rank holds,
    and what is divided by the shard degree ``n`` of the layout (kept + sharded / n).

    Per strategy the layout changes only ``n`` (ZeRO §5: states ÷ the data-parallel degree;
    activations and buffers stay), which is also why a fixed strategy never needs more
    memory on more nodes. ``gathered`` is the part of weights and gradients that full
    sharding holds unsharded; ``host`` is host RAM for offloaded or paged states.
    """

    weights: tuple[float, float]
    grads: tuple[float, float]
    optimizer: tuple[float, float]
    activations: float
    overhead: float
    host: tuple[float, float]
    gathered: tuple[float, float]
    #: Everything on the GPU: weights, gradients, optimizer states, activations, overhead.
    total: tuple[float, float]


def _at(part: tuple[float, float], n: int) -> float:
    """A (kept, sharded) part on ``n`` shards."""
    return part[0] + part[1] / n
