"""torchtitan's side of a launch: plans that split the model by pipeline or experts.

Accelerate has neither pipeline nor expert parallelism (:mod:`recommender.launch.spec`), so such a
plan runs with torchtitan 0.2.2, whose TOML job config sets every degree the plan prices:
``[parallelism]`` ``data_parallel_replicate_degree`` × ``data_parallel_shard_degree`` ×
``context_parallel_degree`` × ``tensor_parallel_degree`` × ``pipeline_parallel_degree`` = the
GPUs (``ParallelDims._validate``), ``expert_parallel_degree`` inside the data-parallel and
context ranks with the experts split by TP as well (``expert_tensor_parallel_degree`` = tp,
as gpufit prices them), and the pipeline schedule (``1F1B``, or ``Interleaved1F1B`` with vp
stages per rank). Field names and meanings are those of ``torchtitan/config/job_config.py``
at tag v0.2.2 (``JobConfig`` and its sections); 0.2.2 is torchtitan's last release that reads
TOML (pytorch/torchtitan#2386 replaced the files with Python config functions after it).

The batch, as torchtitan's trainer reads it (``train.py``, ``distributed/pipeline_parallel
.py``): with a pipeline, one optimizer step runs all the plan's micro-batches through the
schedule (``local_batch_size`` = micro-batch × accumulation, split into
``pipeline_parallel_microbatch_size`` pieces: the plan's m micro-batches that the bubble is
priced over); without one, torchtitan accumulates ``global_batch_size / (local_batch_size ×
data-parallel ranks)`` micro-steps.

Only models torchtitan 0.2.2 defines are launched (:data:`FLAVORS`, each checked against its
``model_args`` in the tests); a plan it cannot run as priced is refused with the reason
(:func:`torchtitan_reason`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from recommender.estimation.parallelism import layers_per_stage
from recommender.estimation.plan import Plan
from recommender.pricing.costing import Option
from recommender.workload import Method, Objective, Offload, Sharding, Workload

if TYPE_CHECKING:
    from recommender.launch.spec import LaunchSpec

__all__ = [
    "FLAVORS",
    "HF_ASSETS",
    "TORCHTITAN",
    "Flavor",
    "layers_per_stage",
    "reshard",
    "torchtitan_fields",
    "torchtitan_reason",
    "torchtitan_toml",
]

#: The torchtitan release gpufit writes job configs for (see the module docstring).
TORCHTITAN = "0.2.2"
#: Where the set-up puts the model's Hugging Face files, relative to the task's workdir (where
#: SkyPilot runs both ``setup`` and ``run``).
HF_ASSETS = "hf_assets"


@dataclass(frozen=True, slots=True)
class Flavor:
    """A model as torchtitan names it (``model.name``, ``model.flavor``) and the Hugging Face
    repository its tokenizer and weights come from (``model.hf_assets_path``)."""

    name: str
    flavor: str
    hf_repo: str


#: gpufit model → torchtitan 0.2.2 model and flavor (``torchtitan/models/<name>/__init__.py``).
#: Its llama3 flavors carry Llama 3.1's RoPE scaling (``RoPEScalingArgs``, factor 8), so they
#: are Llama 3.1 and 3.3, not Llama 3; DeepSeek V2 and V2 Lite are the ``236B`` and ``16B``
#: flavors of its deepseek_v3 model.
FLAVORS: Mapping[str, Flavor] = MappingProxyType(
    {
        "Llama 3.1 8B": Flavor("llama3", "8B", "meta-llama/Llama-3.1-8B"),
        "Llama 3.1 70B": Flavor("llama3", "70B", "meta-llama/Llama-3.1-70B"),
        "Llama 3.1 405B": Flavor("llama3", "405B", "meta-llama/Llama-3.1-405B"),
        "Llama 3.3 70B": Flavor("llama3", "70B", "meta-llama/Llama-3.3-70B-Instruct"),
        "Qwen3 0.6B": Flavor("qwen3", "0.6B", "Qwen/Qwen3-0.6B"),
        "Qwen3 1.7B": Flavor("qwen3", "1.7B", "Qwen/Qwen3-1.7B"),
        "Qwen3 4B": Flavor("qwen3", "4B", "Qwen/Qwen3-4B"),
        "Qwen3 8B": Flavor("qwen3", "8B", "Qwen/Qwen3-8B"),
        "Qwen3 14B": Flavor("qwen3", "14B", "Qwen/Qwen3-14B"),
        "Qwen3 32B": Flavor("qwen3", "32B", "Qwen/Qwen3-32B"),
        "Qwen3 30B-A3B": Flavor("qwen3", "30B-A3B", "Qwen/Qwen3-30B-A3B"),
        "Qwen3 235B-A22B": Flavor("qwen3", "235B-A22B", "Qwen/Qwen3-235B-A22B"),
        "DeepSeek V2 Lite": Flavor("deepseek_v3", "16B", "deepseek-ai/DeepSeek-V2-Lite"),
        "DeepSeek V2": Flavor("deepseek_v3", "236B", "deepseek-ai/DeepSeek-V2"),
        "DeepSeek V3": Flavor("deepseek_v3", "671B", "deepseek-ai/DeepSeek-V3"),
        "DeepSeek R1": Flavor("deepseek_v3", "671B", "deepseek-ai/DeepSeek-R1"),
    }
)


def reshard(sharding: Sharding, pp: int) -> str | None:
    """``fsdp_reshard_after_forward`` that runs ``sharding`` as priced, or ``None``: FSDP2
    reshards the parameters after forward where the plan shards them (full shard, ZeRO-3,
    HSDP: "always") and keeps them until backward where it shards only the gradients
    (grad-op, ZeRO-2: "never").

    ZeRO-1 runs as "never" under a pipeline: a pipeline schedule turns FSDP2's gradient sync
    off for every micro-batch and reduces once after the last (``backward_maybe_with_nosync``
    and ``perform_reduce_grad`` in torch ``distributed/pipelining/stage.py``, read in 2.13.0),
    so weights and gradients stay whole through the step and only the optimizer is sharded:
    ZeRO-1's memory and its one reduce-scatter and all-gather per step. Without a pipeline
    torchtitan syncs every micro-step, which is not what ZeRO-1 was priced as.
    """
    if sharding.shards_params:
        return "always"
    if sharding.shards_grads or (sharding is Sharding.ZERO1 and pp > 1):
        return "never"
    return None


#: Accelerate's mixed_precision → torchtitan's ``training.mixed_precision_param`` (a Literal of
#: these two in job_config.py).
_PARAM_DTYPE = {"bf16": "bfloat16", "no": "float32"}


def torchtitan_reason(
    workload: Workload,
    plan: Plan,
    *,
    replicate: int,
    shard: int,
    mixed_precision: str,
    micro_batches: int,
) -> str:
    """Why torchtitan 0.2.2 cannot run ``plan`` as priced ("" when it can); ``replicate`` ×
    ``shard`` is the plan's data-parallel split (:func:`recommender.launch.spec._dp_split`),
    ``micro_batches`` its micro-batches per optimizer step on each data-parallel rank."""
    s = plan.strategy
    par = s.parallel
    degrees = par.describe_degrees()
    head = f"This plan splits the model {degrees}, which Accelerate cannot run; torchtitan"
    flavor = FLAVORS.get(workload.model.name)
    if flavor is None:
        known = ", ".join(sorted(FLAVORS))
        return (
            f"{head} {TORCHTITAN} runs it but has no model definition for "
            f"{workload.model.name} (gpufit launches these with it: {known}). Run this "
            "layout with Megatron-LM or NeMo at these degrees."
        )
    if workload.method not in (Method.FULL, Method.PRETRAIN) or workload.objective not in (
        Objective.SFT,
    ):
        return (
            f"{head} {TORCHTITAN} trains full weights on next-token loss only: it has no "
            f"{workload.method.label} adapters and no {workload.objective.label} trainer."
        )
    whole = replicate * shard == 1  # one data-parallel rank: nothing to shard
    if not whole and s.sharding is Sharding.ZERO1 and par.pp == 1:
        return (
            f"{head} {TORCHTITAN} runs ZeRO-1's layout (FSDP2 keeping the weights through the "
            "step) only under a pipeline, whose schedule reduces gradients once a step; "
            "without one it reduces them every micro-step, a different cost from the one "
            'priced. Add "fsdp" to the question for a plan it runs.'
        )
    if not whole and (reshard(s.sharding, par.pp) is None or (replicate > 1 and shard == 1)):
        return (
            f"{head} {TORCHTITAN} shards with FSDP2 beside a model split (its DDP runs only "
            f"without one), and {s.describe().split(' with ')[-1]} keeps the weights whole on "
            'every rank (a different layout from the one priced); add "fsdp" to the question '
            "for a plan it runs."
        )
    if s.offload is Offload.OPTIMIZER:
        return (
            f"{head} {TORCHTITAN} offloads parameters, gradients and optimizer together "
            "(training.enable_cpu_offload) or nothing, not the optimizer alone."
        )
    if s.offload is Offload.PARAMS and shard * par.cp == 1:
        # parallelize.py applies FSDP (and with it the offload) only when fsdp_enabled
        return (
            f"{head} {TORCHTITAN} offloads to the CPU through FSDP2, which it applies only "
            "over sharded data-parallel or context ranks, and this plan has none."
        )
    if mixed_precision not in _PARAM_DTYPE:
        return (
            f"{head} {TORCHTITAN} trains in bf16 or fp32 as gpufit writes it, and this plan is "
            f"priced in {mixed_precision}."
        )
    if par.pp > 1 and layers_per_stage(workload.model.layers, par.pp * par.vp) is None:
        return (
            f"{head} {TORCHTITAN} cannot cut {workload.model.layers} layers into "
            f"{par.pp * par.vp} stages of whole layers."
        )
    if par.pp > 1 and par.vp == 1 and micro_batches < par.pp:
        # torch's Schedule1F1B refuses fewer micro-batches than stages (pipelining/schedules.py)
        return (
            f"{head} {TORCHTITAN} pipelines with torch's 1F1B schedule, which needs at least "
            f"{par.pp} micro-batches a step (one per stage); this plan's global batch makes "
            f"{micro_batches}."
        )
    if par.ep > 1 and (shard * par.cp) % par.ep:
        return (
            f"{head} {TORCHTITAN} places EP{par.ep} inside the {shard} × {par.cp} sharded "
            "data-parallel and context ranks of a replica group, which it does not divide."
        )
    return ""


#: Hours of work between checkpoints of an on-demand torchtitan run (ours: a node failure
#: then costs at most an hour; spot runs use their Young/Daly interval instead).
ON_DEMAND_CHECKPOINT_HOURS = 1.0


def torchtitan_fields(
    workload: Workload, option: Option, *, accum: int, steps: int
) -> dict[str, Any]:
    """The spec's torchtitan fields for a plan with pipeline or expert parallelism ({} for
    one Accelerate runs): with a pipeline, all the step's micro-batches go through one
    schedule (``local_batch``); checkpoints every interval of the plan's step time."""
    s = option.plan.strategy
    par = s.parallel
    if par.pp == 1 and par.ep == 1:
        return {}
    every_hours = (
        option.spot.checkpoint_interval_hours if option.spot else ON_DEMAND_CHECKPOINT_HOURS
    )
    hours_per_step = option.hours / steps
    return {
        "framework": "torchtitan",
        "fsdp_reshard": reshard(s.sharding, par.pp) or "always",
        "pp_schedule": ("Interleaved1F1B" if par.vp > 1 else "1F1B") if par.pp > 1 else "",
        "pp_layers_per_stage": layers_per_stage(workload.model.layers, par.pp * par.vp) or 0
        if par.pp > 1
        else 0,
        "local_batch": workload.micro_batch * (accum if par.pp > 1 else 1),
        "checkpoint_interval_steps": min(steps, max(1, round(every_hours / hours_per_step))),
    }


def _v(value: object) -> str:
    """A TOML value: strings as JSON strings (TOML basic strings share JSON's escapes, and
    TOML also wants DEL escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def torchtitan_toml(spec: LaunchSpec, *, comment: str, checkpoint_dir: str) -> str:
    """The job config of a torchtitan spec (``spec.framework == "torchtitan"``): ``comment``
    heads the file, checkpoints go under ``checkpoint_dir`` (the task's bucket mount)."""
    flavor = FLAVORS[spec.model]
    finetune = spec.method != Method.PRETRAIN.value
    lines = [
        *(f"# {line}" for line in comment.splitlines()),
        "",
        "[job]",
        f"dump_folder = {_v(checkpoint_dir)}  # the bucket: checkpoints outlive the nodes",
        f"description = {_v(f'gpufit option {spec.rank}: {spec.model}')}",
        "",
        "[model]",
        f"name = {_v(flavor.name)}",
        f"flavor = {_v(flavor.flavor)}",
        f"hf_assets_path = {_v(HF_ASSETS)}  # {flavor.hf_repo}, fetched by the set-up",
        "",
        "[training]",
        '# an unregistered name stops the run: task.yaml passes --training.dataset "$DATASET"',
        'dataset = "your_dataset"',
        f"local_batch_size = {spec.local_batch}  # sequences per data-parallel rank per step",
        f"global_batch_size = {spec.global_batch}  # sequences per optimizer step",
        f"seq_len = {spec.seq_len}",
        f"steps = {spec.train_steps}  # the plan's tokens in global batches",
        f"mixed_precision_param = {_v(_PARAM_DTYPE[spec.mixed_precision])}",
        f"enable_cpu_offload = {_v(spec.fsdp_offload_params)}",
        "",
        "[parallelism]",
        f"data_parallel_replicate_degree = {spec.dp_replicate}",
        f"data_parallel_shard_degree = {spec.dp_shard}",
        f"fsdp_reshard_after_forward = {_v(spec.fsdp_reshard)}",
        f"tensor_parallel_degree = {spec.tp}",
        f"context_parallel_degree = {spec.cp}",
        f"pipeline_parallel_degree = {spec.pp}",
    ]
    if spec.pp > 1:
        lines += [
            f"pipeline_parallel_schedule = {_v(spec.pp_schedule)}",
            f"pipeline_parallel_microbatch_size = {spec.micro_batch}",
            f"pipeline_parallel_layers_per_stage = {spec.pp_layers_per_stage}",
            "pipeline_parallel_first_stage_less_layers = 0  # even stages, as priced",
            "pipeline_parallel_last_stage_less_layers = 0",
        ]
    lines += [
        f"expert_parallel_degree = {spec.ep}",
        f"expert_tensor_parallel_degree = {spec.tp if spec.ep > 1 else 1}",
        "",
        "[activation_checkpoint]",
        f"mode = {_v('full' if spec.activation_checkpointing else 'none')}",
        "",
        "[checkpoint]",
        "enable = true  # a restart resumes from the newest step in dump_folder/checkpoint",
        'folder = "checkpoint"',
        f"interval = {spec.checkpoint_interval_steps}  # steps",
    ]
    if finetune:
        lines += [
            f"initial_load_path = {_v(HF_ASSETS)}  # the base weights, when no "
            "checkpoint exists yet",
            "initial_load_in_hf = true",
            "initial_load_model_only = true",
        ]
    return "\n".join(lines) + "\n"
