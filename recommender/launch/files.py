"""The three launch files of a :class:`~recommender.launch.spec.LaunchSpec`, as texts.

YAML is written by hand (PyYAML is not a runtime dependency): every string scalar is
double-quoted with JSON escapes (valid YAML), so values such as ``no`` or ``on`` stay strings,
and text from price feeds reaches comments only on one line (:func:`one_line`). The tests
read every file back with ``yaml.safe_load``, check accelerate.yaml against the keys
Accelerate 1.15.0 reads, and task.yaml with SkyPilot's own parser where it is installed.

A spec that says why no supported framework runs its plan (``unsupported``) gets no files:
:func:`launch_files` raises :class:`~recommender.errors.WorkloadError` with that reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from recommender.errors import WorkloadError
from recommender.launch.readme import (
    CHECKPOINT_DIR,
    cluster_name,
    launch_command,
    minutes,
    one_line,
    readme,
)
from recommender.launch.setup import PYTHON
from recommender.launch.spec import LaunchSpec
from recommender.pricing.offers import OWNED_PROVIDER

__all__ = ["CHECKPOINT_DIR", "CONFIG_PATH", "MAIN_PROCESS_PORT", "LaunchFiles", "launch_files"]


@dataclass(frozen=True, slots=True)
class LaunchFiles:
    """The three launch files' texts."""

    task_yaml: str
    accelerate_yaml: str
    readme: str

    def by_name(self) -> dict[str, str]:
        return {
            "task.yaml": self.task_yaml,
            "accelerate.yaml": self.accelerate_yaml,
            "README.md": self.readme,
        }


#: Where the task mounts the Accelerate config on every node, and the rendezvous port.
CONFIG_PATH = "/gpufit/accelerate.yaml"
MAIN_PROCESS_PORT = 29500
#: The set-up's environment on every node (a Python the pins accept: launch_setup.PYTHON).
ENV_DIR = "~/gpufit-env"


def _q(value: object) -> str:
    """A YAML scalar: strings double-quoted (JSON escapes are YAML escapes), so ``no``,
    ``on``, ``1e3`` or ``a: b`` stay strings; numbers, booleans and null as themselves."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def _script_args(spec: LaunchSpec) -> list[str]:
    """The plan's settings as the training script's arguments (TRL/transformers names)."""
    args = [
        '--data_path "$DATA_PATH" --output_dir "$CHECKPOINT_DIR"',
        '--per_device_train_batch_size "$MICRO_BATCH"',
        '--gradient_accumulation_steps "$GRAD_ACCUM" --max_length "$SEQ_LEN"',
    ]
    if spec.checkpoint_interval_hours is not None:
        args.append('--checkpoint_every_minutes "$CHECKPOINT_EVERY_MINUTES"')
    if spec.lora_rank:
        targets = "all-linear" if spec.lora_targets == "all" else "q_proj k_proj v_proj o_proj"
        args.append(f"--use_peft --lora_r {spec.lora_rank} --lora_target_modules {targets}")
    if spec.method == "qlora":
        args.append("--load_in_4bit --bnb_4bit_quant_type nf4 --use_bnb_nested_quant")
        if spec.distributed_type == "FSDP" or spec.zero_stage == 3:
            # sharded 4-bit weights need a storage dtype the other parameters share (PEFT
            # docs: "FSDP with QLoRA", "DeepSpeed ZeRO-3 with QLoRA")
            args.append("--bnb_4bit_quant_storage bfloat16")
    if spec.num_generations:
        args.append(f"--num_generations {spec.num_generations}")
    if spec.generation == "vllm":
        args.append(
            "--use_vllm --vllm_mode colocate "
            f"--vllm_gpu_memory_utilization {spec.vllm_gpu_memory_utilization}"
        )
    return args


def _task_yaml(spec: LaunchSpec) -> str:
    kind = "spot" if spec.spot else "on-demand"
    lines = [
        f"# SkyPilot task for gpufit option {spec.rank}: "
        + one_line(f"{spec.provider} {spec.instance_type} ({kind}) in {spec.region}"),
        f"# Plan: {one_line(spec.strategy)}",
        f"# Runs as: Accelerate, {one_line(spec.engine)}",
        f"# Launch from this directory: {launch_command(spec)}",
        f"name: {_q('gpufit-' + cluster_name(spec))}",
        "workdir: .  # your training script lives here; synced to every node",
        f"num_nodes: {spec.nodes}",
        "resources:",
    ]
    if spec.provider == OWNED_PROVIDER:  # never rent what the team owns
        lines.append(
            '  infra: "ssh"  # your machines as an SSH Node Pool (`sky ssh up`); ssh/<pool> '
            "names one"
        )
    elif spec.cloud is None:
        lines.append(
            f"  # SkyPilot has no {one_line(spec.provider)!r} cloud: any cloud with these GPUs"
        )
    else:
        lines.append(f"  cloud: {_q(spec.cloud)}")
        lines.append(f"  region: {_q(spec.region)}")
        if spec.zone:  # feeds name zones as IDs (use1-az6) or names: a comment, not a pin
            lines.append(f"  # priced in zone {one_line(spec.zone)}; add `zone:` to pin it")
        lines.append(f"  instance_type: {_q(spec.instance_type)}")
    lines += [
        f"  accelerators: {_q(f'{spec.accelerator}:{spec.gpus_per_node}')}",
        f"  use_spot: {_q(spec.spot)}",
        f"  disk_size: {spec.disk_size_gib}  # GiB per node: env + weights + data + 2 checkpoints",
    ]
    if spec.nodes > 1:
        lines.append('  network_tier: "best"  # the fabric between nodes: see README.md')
    lines += [
        "envs:",
        '  TRAIN_SCRIPT: "train.py"  # your script, in this directory',
        '  TRAIN_ARGS: ""  # extra arguments for it',
        '  DATA_PATH: ""  # where the training data is (s3://..., gs://..., a path); required',
        f"  CHECKPOINT_DIR: {_q(CHECKPOINT_DIR)}",
        f"  MAIN_PROCESS_PORT: {_q(str(MAIN_PROCESS_PORT))}",
        f"  MICRO_BATCH: {_q(str(spec.micro_batch))}  # sequences per GPU per micro-step",
        f"  GRAD_ACCUM: {_q(str(spec.grad_accum))}  # micro-steps per optimizer step",
        f"  ACCELERATE_GRADIENT_ACCUMULATION_STEPS: {_q(str(spec.grad_accum))}  # read by "
        "Accelerator()",
        f"  GLOBAL_BATCH: {_q(str(spec.global_batch))}  # sequences per optimizer step",
        f"  SEQ_LEN: {_q(str(spec.seq_len))}",
    ]
    if spec.checkpoint_interval_hours is not None:
        lines.append(
            f"  CHECKPOINT_EVERY_MINUTES: {_q(str(minutes(spec.checkpoint_interval_hours)))}  "
            "# spot: gpufit's checkpoint interval (Young/Daly)"
        )
    lines += [
        "file_mounts:",
        f"  {CONFIG_PATH}: accelerate.yaml",
        f"  {CHECKPOINT_DIR}:  # a bucket: checkpoints outlive the cluster (and preemptions)",
        f"    name: {_q(spec.checkpoint_bucket)}",
        "    mode: MOUNT",
        "setup: |",
        "  set -euo pipefail",
        f"  # Python {PYTHON}: trl and vllm at these pins need it (recommender/launch/setup.py)",
        "  pip install uv",
        f"  uv venv --python {PYTHON} --seed {ENV_DIR}",
        f"  source {ENV_DIR}/bin/activate",
        "  uv pip install " + " ".join(f'"{p}"' for p in spec.packages.split()),
        "  if [ -f requirements.txt ]; then uv pip install -r requirements.txt; fi",
        "run: |",
        "  set -euo pipefail",
        f"  source {ENV_DIR}/bin/activate",
        '  : "${DATA_PATH:?set it: --env DATA_PATH=s3://bucket/path}"',
        "  # Rendezvous from SkyPilot's environment: the first IP is the main process's node.",
        '  MAIN_IP=$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
        "  NUM_PROCESSES=$((SKYPILOT_NUM_NODES * SKYPILOT_NUM_GPUS_PER_NODE))",
        '  RESUME_ARGS=""',
    ]
    if spec.spot:
        lines += [
            "  # Spot: a managed job restarts here after a preemption; resume from the newest",
            "  # checkpoint (save one every $CHECKPOINT_EVERY_MINUTES minutes into",
            '  # "$CHECKPOINT_DIR/checkpoint-<step>" with accelerator.save_state).',
            '  LATEST=$(ls -1d "$CHECKPOINT_DIR"/checkpoint-* 2>/dev/null | sort -V '
            "| tail -n1 || true)",
            '  if [ -n "$LATEST" ]; then',
            '    echo "resuming from $LATEST"',
            '    RESUME_ARGS="--resume_from_checkpoint $LATEST"',
            "  fi",
        ]
    lines += [
        "  accelerate launch \\",
        f"    --config_file {CONFIG_PATH} \\",
        '    --num_machines "$SKYPILOT_NUM_NODES" \\',
        '    --num_processes "$NUM_PROCESSES" \\',
        '    --machine_rank "$SKYPILOT_NODE_RANK" \\',
        '    --main_process_ip "$MAIN_IP" \\',
        '    --main_process_port "$MAIN_PROCESS_PORT" \\',
        '    "$TRAIN_SCRIPT" $TRAIN_ARGS \\',
        *(f"    {arg} \\" for arg in _script_args(spec)),
        "    $RESUME_ARGS",
    ]
    return "\n".join(lines) + "\n"


def _accelerate_yaml(spec: LaunchSpec) -> str:
    lines = [
        f"# Hugging Face Accelerate config for gpufit option {spec.rank}: " + one_line(spec.engine),
        f"# Priced as: {one_line(spec.strategy)}",
        "# Keys as Accelerate 1.15.0 reads them (config_args.py ClusterConfig; nested keys are",
        "# `accelerate launch` arguments); `accelerate launch --config_file accelerate.yaml`.",
        "compute_environment: LOCAL_MACHINE",
        f"distributed_type: {_q(spec.distributed_type)}",  # quoted: a bare NO reads as false
        f"num_machines: {spec.nodes}",
        f"num_processes: {spec.total_gpus}  # all GPUs of all machines",
        "machine_rank: 0  # overridden at launch: --machine_rank $SKYPILOT_NODE_RANK",
        f"main_process_port: {MAIN_PROCESS_PORT}",
        "rdzv_backend: static",
        "same_network: true",
        f"mixed_precision: {_q(spec.mixed_precision)}",
        "main_training_function: main",
        "use_cpu: false",
        "debug: false",
    ]
    if spec.distributed_type == "FSDP" and spec.fsdp_version == 2:
        lines += [
            "fsdp_config:",
            "  fsdp_version: 2",
            f"  fsdp_reshard_after_forward: {_q(spec.fsdp_reshard_after_forward)}",
            f"  fsdp_offload_params: {_q(spec.fsdp_offload_params)}",
            f"  fsdp_activation_checkpointing: {_q(spec.activation_checkpointing)}",
            "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
            "  fsdp_state_dict_type: SHARDED_STATE_DICT",
            "  fsdp_cpu_ram_efficient_loading: true",
            "parallelism_config:  # dp_replicate × dp_shard × tp × cp = num_processes",
            f"  parallelism_config_dp_replicate_size: {spec.dp_replicate}",
            f"  parallelism_config_dp_shard_size: {spec.dp_shard}",
            f"  parallelism_config_tp_size: {spec.tp}",
            f"  parallelism_config_cp_size: {spec.cp}",
        ]
    elif spec.distributed_type == "FSDP":
        lines += [
            "fsdp_config:",
            "  fsdp_version: 1",
            f"  fsdp_sharding_strategy: {spec.fsdp_sharding_strategy}",
            f"  fsdp_offload_params: {_q(spec.fsdp_offload_params)}",
            f"  fsdp_activation_checkpointing: {_q(spec.activation_checkpointing)}",
            "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
            "  fsdp_state_dict_type: SHARDED_STATE_DICT",
            "  fsdp_use_orig_params: true",
            "  fsdp_sync_module_states: true",
            "  fsdp_cpu_ram_efficient_loading: true",
        ]
    elif spec.distributed_type == "DEEPSPEED":
        lines += [
            "deepspeed_config:",
            f"  zero_stage: {spec.zero_stage}",
            f"  offload_optimizer_device: {spec.offload_optimizer_device}",
            f"  offload_param_device: {spec.offload_param_device}",
            f"  gradient_accumulation_steps: {spec.grad_accum}  # the plan's global batch",
            f"  zero3_init_flag: {_q(spec.zero_stage == 3)}",
        ]
        if spec.nodes > 1:
            lines.append("  deepspeed_multinode_launcher: standard  # one launcher per node")
    if spec.activation_checkpointing and spec.distributed_type != "FSDP":
        lines.append(
            "# activation checkpointing is on in the plan: call "
            "model.gradient_checkpointing_enable() in your script"
        )
    return "\n".join(lines) + "\n"


def launch_files(spec: LaunchSpec, *, query: str = "") -> LaunchFiles:
    """The three launch files of a spec (``query`` is quoted in the README only).

    Raises:
        WorkloadError: no framework gpufit writes configs for runs the plan as priced
            (``spec.unsupported`` says what is missing).
    """
    if spec.unsupported:
        raise WorkloadError(
            f"gpufit cannot write launch files for option {spec.rank}. {spec.unsupported}",
            hint="Try another --option, or ask for a plan without a model split "
            "(drop `tp`/`pp`/`3d parallel`).",
        )
    return LaunchFiles(
        task_yaml=_task_yaml(spec),
        accelerate_yaml=_accelerate_yaml(spec),
        readme=readme(spec, query),
    )
