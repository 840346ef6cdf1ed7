"""From an option to the files that launch it: a SkyPilot task, an Accelerate config, a README.

Pure functions: :func:`launch_spec` reads everything the files need off an option and its
workload into a :class:`LaunchSpec` (what ``gpufit ask --json`` carries as each option's
``launch`` object), and :func:`recommender.launch.files.launch_files` writes the texts from a
spec alone, so the files are a function of the option. Nothing here touches the file system.

A plan that does not split the model maps onto Accelerate as follows (``distributed_type``):

* one GPU, no offload → ``NO``; DDP on several GPUs → ``MULTI_GPU``;
* ZeRO-1/2/3 → ``DEEPSPEED`` with that ``zero_stage``;
* FSDP full shard / grad-op shard / HSDP → ``FSDP`` with ``FULL_SHARD`` / ``SHARD_GRAD_OP`` /
  ``HYBRID_SHARD`` (FSDP1 names, ``fsdp_version: 1``);
* optimizer CPU offload → ``DEEPSPEED`` (ZeRO-Offload): FSDP cannot offload the optimizer
  alone; stage 3 under a full-sharding plan, else 2; parameter offload → FSDP
  ``fsdp_offload_params`` under FSDP/HSDP, else DeepSpeed stage 3 with both offloads.

A plan that splits the model with tensor and/or context parallelism runs as FSDP2
(``fsdp_version: 2``) with Accelerate's ``parallelism_config`` (``dp_replicate × dp_shard ×
tp × cp`` = the GPUs); what no framework gpufit writes for can run is refused, with the
missing piece named (:func:`unsupported_reason`). Micro-batch, gradient accumulation and the
global batch come from the plan's step model (:func:`_batch`).

Keys are the ones Accelerate 1.15.0 reads: ``ClusterConfig`` in
``accelerate/commands/config/config_args.py`` (top level) and the ``accelerate launch``
arguments of ``accelerate/commands/launch.py`` (nested keys; docs: package_reference/cli.md,
usage_guides/fsdp.md, usage_guides/deepspeed.md, concept_guides/fsdp1_vs_fsdp2.md).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, fields
from typing import Any

from recommender.estimation.global_batch import default_batch_tokens
from recommender.estimation.hardware import precision_on
from recommender.estimation.plan import Plan
from recommender.estimation.strategies import Strategy
from recommender.gpus import get_gpu
from recommender.launch.setup import requirements
from recommender.launch.skypilot import disk_size_gib, skypilot_accelerator
from recommender.pricing.costing import Option
from recommender.pricing.economics import checkpoint_gib
from recommender.providers import skypilot_cloud
from recommender.workload import Method, Objective, Offload, Precision, Sharding, Workload

__all__ = [
    "LaunchSpec",
    "launch_spec",
    "unsupported_reason",
]

# ------------------------------------------------------------------ the spec


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """Everything the launch files say, read off one option (JSON-ready scalars only)."""

    rank: int
    provider: str
    #: SkyPilot cloud name; ``None`` when SkyPilot does not know the provider.
    cloud: str | None
    region: str
    zone: str
    instance_type: str
    accelerator: str
    gpus_per_node: int
    nodes: int
    spot: bool
    disk_size_gib: int
    model: str
    method: str
    #: Accelerate's values.
    distributed_type: str
    mixed_precision: str
    #: FSDP ``fsdp_sharding_strategy`` (FSDP1), or ``None`` when not FSDP1.
    fsdp_sharding_strategy: str | None
    fsdp_offload_params: bool
    #: DeepSpeed ``zero_stage``, or ``None`` when not DeepSpeed.
    zero_stage: int | None
    offload_optimizer_device: str
    offload_param_device: str
    activation_checkpointing: bool
    strategy: str
    #: The plan's figures.
    memory_per_gpu_gib: float
    usable_gib_per_gpu: float
    expected_hours: float
    expected_cost_usd: float
    pessimistic_hours: float
    pessimistic_cost_usd: float
    checkpoint_gib: float
    #: Spot only: the Young/Daly checkpoint interval, hours.
    checkpoint_interval_hours: float | None
    tokens: float
    checkpoint_bucket: str
    #: The plan's model split (``TP8 × PP4``), empty when the model is not split.
    model_split: str = ""
    #: The engine that runs the plan, in the words the README and the config comments use
    #: (``DeepSpeed ZeRO-3, optimizer and parameters on the CPU``).
    engine: str = ""
    #: FSDP API version: 1 (``fsdp_sharding_strategy``), 2 (with Accelerate's parallelism
    #: config for tensor/context parallelism), ``None`` when not FSDP.
    fsdp_version: int | None = None
    #: FSDP2: reshard the parameters after forward (full shard) or keep them (ZeRO-2-like).
    fsdp_reshard_after_forward: bool = True
    #: Model-parallel degrees and Accelerate's data-parallel split (replicate × shard).
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    dp_replicate: int = 1
    dp_shard: int = 1
    #: Batch: sequences per micro-batch per data-parallel rank, micro-steps per optimizer
    #: step, and sequences per optimizer step (micro_batch × data-parallel ranks × accum).
    micro_batch: int = 1
    grad_accum: int = 1
    global_batch: int = 1
    seq_len: int = 1
    objective: str = "sft"
    #: GRPO: completions per prompt, and where they are generated ("vllm": TRL's vLLM
    #: colocate mode on the training GPUs; "transformers": the policy's own generate).
    num_generations: int = 0
    generation: str = ""
    vllm_gpu_memory_utilization: float | None = None
    lora_rank: int = 0
    lora_targets: str = ""
    #: Space-separated ``name==version`` the set-up installs (:mod:`recommender.launch.setup`).
    packages: str = ""
    #: The offer's network between nodes (:class:`recommender.pricing.offers.Fabric` value).
    fabric: str = "none"
    #: Why no supported framework can run this plan as priced; empty when one can. ``gpufit
    #: launch`` refuses a spec that says why (:func:`recommender.launch.files.launch_files`).
    unsupported: str = ""

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    def as_dict(self) -> dict[str, Any]:
        """The spec as the JSON ``launch`` object (``LaunchSpec(**d)`` reads it back)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: Accelerate's ``mixed_precision`` for the precision a GPU trains in (bf16 for the rest).
_MIXED_PRECISION = {Precision.FP32: "no", Precision.FP16_MIXED: "fp16", Precision.FP8_MIXED: "fp8"}


def _precision(workload: Workload, gpu_id: str) -> str:
    """Accelerate's ``mixed_precision`` for the precision the plan's GPU runs the workload in
    (:func:`recommender.estimation.hardware.precision_on`: fp16 where there is no bf16, no FP8
    before Ada/Hopper)."""
    precision, _ = precision_on(workload.precision, get_gpu(gpu_id))
    return _MIXED_PRECISION.get(precision, "bf16")


_FSDP_STRATEGY = {
    Sharding.FSDP: "FULL_SHARD",
    Sharding.FSDP_GRAD_OP: "SHARD_GRAD_OP",
    Sharding.HSDP: "HYBRID_SHARD",
}
_ZERO_STAGE = {Sharding.ZERO1: 1, Sharding.ZERO2: 2, Sharding.ZERO3: 3}
#: Sharding FSDP2 expresses beside tensor/context parallelism: fully sharded (ZeRO-3, HSDP
#: inside each node) or parameters kept after forward (grad-op, ZeRO-2).


def _distributed(
    sharding: Sharding, offload: Offload, gpus: int
) -> tuple[str, str | None, bool, int | None, str, str]:
    """(distributed_type, fsdp strategy, fsdp param offload, zero stage, optimizer offload
    device, parameter offload device) for a plan's strategy; see the module docstring."""
    if offload is Offload.OPTIMIZER:
        stage = 3 if sharding.shards_params else 2
        return "DEEPSPEED", None, False, stage, "cpu", "none"
    if offload is Offload.PARAMS:
        if sharding in _FSDP_STRATEGY and gpus > 1:
            return "FSDP", _FSDP_STRATEGY[sharding], True, None, "none", "none"
        return "DEEPSPEED", None, False, 3, "cpu", "cpu"
    if gpus == 1:
        return "NO", None, False, None, "none", "none"
    if sharding in _FSDP_STRATEGY:
        return "FSDP", _FSDP_STRATEGY[sharding], False, None, "none", "none"
    if sharding in _ZERO_STAGE:
        return "DEEPSPEED", None, False, _ZERO_STAGE[sharding], "none", "none"
    return "MULTI_GPU", None, False, None, "none", "none"


#: What every refusal says is missing: the frameworks gpufit writes configs for.
_ACCELERATE_SPLITS = (
    "gpufit writes configs for Hugging Face Accelerate, whose parallelism config runs tensor "
    "and context parallelism with FSDP2 only"
)


def _dp_split(plan: Plan) -> tuple[int, int]:
    """(replicate, shard) of the data-parallel ranks of a split plan under FSDP2: HSDP
    replicates across nodes and shards inside each; FSDP and ZeRO shard over them all."""
    dp = plan.strategy.parallel.dp(plan.gpus)
    hsdp = plan.strategy.sharding is Sharding.HSDP and dp % plan.nodes == 0
    replicate = plan.nodes if hsdp else 1
    return replicate, dp // replicate


def unsupported_reason(workload: Workload, plan: Plan) -> str:
    """Why no framework gpufit writes configs for runs ``plan`` as priced ("" if one does).

    Accelerate runs every plan that does not split the model. A split (TP/CP) runs under
    Accelerate's ``parallelism_config`` with FSDP2; pipeline and expert parallelism it does
    not have, and its Megatron-LM plugin (accelerate 1.15.0 ``utils/megatron_lm.py``)
    imports ``megatron.training.gpt_builders`` and ``megatron.legacy``, which no Megatron-LM
    release ships together (core_v0.13.0-0.19.0: the former never, the latter gone from
    0.18.0), so gpufit writes no config for it rather than one that cannot start.
    """
    strategy = plan.strategy
    par = strategy.parallel
    if par.trivial:
        return ""
    degrees = par.describe_degrees()
    if par.pp > 1 or par.ep > 1:
        missing = "pipeline" if par.pp > 1 else "expert"
        if par.pp > 1 and par.ep > 1:
            missing = "pipeline or expert"
        return (
            f"This plan splits the model {degrees}: {_ACCELERATE_SPLITS}, with no "
            f"{missing} parallelism (its Megatron-LM plugin imports modules no Megatron-LM "
            "release ships). Run this layout with Megatron-LM, NeMo or torchtitan at these "
            "degrees."
        )
    if not strategy.sharding.shards_grads:
        kept = "the whole model states" if strategy.sharding is Sharding.DDP else "the weights"
        return (
            f"This plan runs {degrees} with {strategy.describe().split(' with ')[-1]} over "
            f"the data-parallel ranks: {_ACCELERATE_SPLITS}, and FSDP2 shards {kept}, which "
            "this plan keeps whole on every rank (a different layout from the one priced). "
            "Megatron-LM runs it (DDP, or its distributed optimizer for ZeRO-1); add "
            '"fsdp" to the question for a plan FSDP2 runs.'
        )
    replicate, shard = _dp_split(plan)
    if replicate > 1 and shard == 1:
        return (
            f"This plan runs {degrees} with each node a whole replica (HSDP with nothing "
            f"left to shard inside a node): {_ACCELERATE_SPLITS}, and its parallelism "
            "config refuses tensor/context parallelism beside pure replication "
            "(dp_replicate > 1 needs dp_shard > 1)."
        )
    if strategy.offload is Offload.OPTIMIZER:
        return (
            f"This plan runs {degrees} with the optimizer alone on the CPU: "
            f"{_ACCELERATE_SPLITS}, and FSDP2 offloads parameters with the optimizer or "
            "nothing."
        )
    if workload.method in (Method.LORA, Method.QLORA) or workload.objective is not Objective.SFT:
        return (
            f"This plan runs {degrees} for {workload.method.label} "
            f"{workload.objective.label}: gpufit writes tensor/context-parallel configs only "
            "for full-weight SFT or pretraining, not for PEFT adapters or TRL's trainers."
        )
    return ""


def _engine(
    dist: str, fsdp: str | None, fsdp_off: bool, stage: int | None, opt_dev: str, par_dev: str
) -> str:
    """The engine in words: what accelerate.yaml runs, named as the config names it."""
    if dist == "NO":
        return "one GPU, no distributed engine"
    if dist == "MULTI_GPU":
        return "PyTorch DDP"
    if dist == "DEEPSPEED":
        where = {
            ("cpu", "cpu"): ", optimizer and parameters on the CPU",
            ("cpu", "none"): ", optimizer on the CPU",
        }.get((opt_dev, par_dev), "")
        return f"DeepSpeed ZeRO-{stage}{where}"
    return f"FSDP {fsdp}" + (", parameters on the CPU" if fsdp_off else "")


def _batch(workload: Workload, plan_gpus: int, strategy: Strategy) -> tuple[int, int]:
    """(gradient accumulation, global batch in sequences): the step model's global batch
    (:func:`recommender.estimation.global_batch.default_batch_tokens`) in whole micro-batches of
    ``micro_batch`` sequences on each data-parallel rank, at least one each."""
    dp = strategy.parallel.dp(plan_gpus)
    per_step = workload.micro_batch * workload.seq_len * dp
    target = default_batch_tokens(workload, strategy.parallel, plan_gpus)
    accum = max(1, round(target / per_step))
    return accum, workload.micro_batch * dp * accum


#: Bytes per parameter of vLLM's own copy of the policy: its default ``dtype="auto"`` loads a
#: bf16/fp16 checkpoint in 16 bits (vLLM engine arguments), beside training's copy.
VLLM_WEIGHT_BYTES = 2
#: vLLM's ``gpu_memory_utilization`` is rounded up to this step (ours: a readable setting).
VLLM_UTILIZATION_STEP = 0.05


def _generation(workload: Workload, option: Option) -> tuple[str, float | None]:
    """GRPO's generator and vLLM's share of GPU memory.

    The plan holds the generation's KV cache in the training memory. TRL's vLLM colocate
    mode (``use_vllm``, ``vllm_mode="colocate"``) adds vLLM's copy of the weights; it is used
    when that copy and the KV cache fit in the memory the plan leaves free, else the policy
    generates with transformers (TRL's default), as priced.
    """
    if workload.objective is not Objective.GRPO:
        return "", None
    plan = option.plan
    vllm_gib = workload.model.params * VLLM_WEIGHT_BYTES / 2**30 + plan.memory.generation_gib
    if plan.memory.total_gib + vllm_gib > plan.usable_gib:
        return "transformers", None
    share = vllm_gib / get_gpu(plan.gpu_id).memory_gib
    steps = math.ceil(share / VLLM_UTILIZATION_STEP)
    return "vllm", round(steps * VLLM_UTILIZATION_STEP, 2)


def _bucket(option: Option, workload: Workload) -> str:
    """A checkpoint bucket name that is a function of the option (S3/GCS rules: 3-63
    lowercase letters, digits and hyphens)."""
    digest = hashlib.sha256(f"{option.offer.key}|{workload.model.name}".encode()).hexdigest()
    return f"gpufit-ckpt-{digest[:12]}"


def launch_spec(workload: Workload, option: Option) -> LaunchSpec:
    """What the launch files of ``option`` (an option of ``workload``) need."""
    offer, plan = option.offer, option.plan
    s = plan.strategy
    par = s.parallel
    dist, fsdp, fsdp_off, stage, opt_dev, param_dev = _distributed(s.sharding, s.offload, plan.gpus)
    unsupported = unsupported_reason(workload, plan)
    fsdp_version: int | None = 1 if dist == "FSDP" else None
    replicate = shard = 1
    engine = _engine(dist, fsdp, fsdp_off, stage, opt_dev, param_dev)
    if unsupported:
        engine = ""  # nothing runs it: no engine to name
    elif not par.trivial:  # FSDP2 with Accelerate's parallelism config
        replicate, shard = _dp_split(plan)
        dist, fsdp, fsdp_version, stage, opt_dev, param_dev = "FSDP", None, 2, None, "none", "none"
        fsdp_off = s.offload is Offload.PARAMS
        engine = (
            f"FSDP2 {'full shard' if s.sharding.shards_params else 'grad-op shard'} over "
            f"{replicate} × {shard} data-parallel ranks (replicated × sharded) with "
            f"{par.describe_degrees()}" + (", parameters on the CPU" if fsdp_off else "")
        )
    accum, global_batch = _batch(workload, plan.gpus, s)
    generation, vllm_share = _generation(workload, option)
    spot = option.spot
    packages = requirements(
        workload.method,
        workload.objective,
        deepspeed=dist == "DEEPSPEED",
        vllm=vllm_share is not None,
    )
    adapters = workload.method in (Method.LORA, Method.QLORA)
    return LaunchSpec(
        rank=option.rank,
        provider=offer.provider,
        cloud=skypilot_cloud(offer.provider),
        region=offer.region,
        zone=offer.zone,
        instance_type=offer.instance_type,
        accelerator=skypilot_accelerator(offer.gpu_id, offer.instance_type),
        gpus_per_node=offer.gpu_count,
        nodes=option.nodes,
        spot=offer.spot,
        disk_size_gib=disk_size_gib(workload, option.tokens),
        model=workload.model.name,
        method=workload.method.value,
        distributed_type=dist,
        mixed_precision=_precision(workload, offer.gpu_id),
        fsdp_sharding_strategy=fsdp,
        fsdp_offload_params=fsdp_off,
        zero_stage=stage,
        offload_optimizer_device=opt_dev,
        offload_param_device=param_dev,
        activation_checkpointing=s.checkpointing,
        strategy=plan.describe(),
        memory_per_gpu_gib=round(plan.memory.total_gib, 1),
        usable_gib_per_gpu=round(plan.usable_gib, 1),
        expected_hours=round(option.expected_hours, 2),
        expected_cost_usd=round(option.expected_cost_usd, 2),
        pessimistic_hours=round(option.pessimistic_wall_hours, 2),
        pessimistic_cost_usd=round(option.pessimistic_cost_usd, 2),
        checkpoint_gib=round(checkpoint_gib(workload), 1),
        checkpoint_interval_hours=(
            None if spot is None else round(spot.checkpoint_interval_hours, 2)
        ),
        tokens=round(option.tokens),
        checkpoint_bucket=_bucket(option, workload),
        model_split="" if par.trivial else par.describe_degrees(),
        engine=engine,
        fsdp_version=fsdp_version,
        fsdp_reshard_after_forward=s.sharding.shards_params or not s.sharding.shards_grads,
        tp=par.tp,
        pp=par.pp,
        cp=par.cp,
        ep=par.ep,
        dp_replicate=replicate,
        dp_shard=shard,
        micro_batch=workload.micro_batch,
        grad_accum=accum,
        global_batch=global_batch,
        seq_len=workload.seq_len,
        objective=workload.objective.value,
        num_generations=workload.group_size if workload.objective is Objective.GRPO else 0,
        generation=generation,
        vllm_gpu_memory_utilization=vllm_share,
        lora_rank=workload.lora_rank if adapters else 0,
        lora_targets=workload.lora_targets if adapters else "",
        packages=" ".join(packages),
        fabric=offer.fabric.value,
        unsupported=unsupported,
    )
