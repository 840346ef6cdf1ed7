"""The three launch files of a :class:`~recommender.launch.LaunchSpec`, as texts.

YAML is written by hand (PyYAML is not a runtime dependency): every string scalar is
double-quoted with JSON escapes (valid YAML), so values such as ``no`` or ``on`` stay strings,
and text from price feeds reaches comments only on one line (:func:`_one_line`). The tests
read every file back with ``yaml.safe_load`` and, where installed, SkyPilot's own parser.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from recommender.launch import LaunchSpec

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


#: Where the task mounts the Accelerate config and the checkpoint bucket on every node.
CONFIG_PATH = "/gpufit/accelerate.yaml"
CHECKPOINT_DIR = "/checkpoints"
MAIN_PROCESS_PORT = 29500

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def _one_line(text: str) -> str:
    """Text safe in a YAML comment: control characters and line breaks become spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())


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


def _minutes(hours: float) -> int:
    return max(1, round(hours * 60))


def _task_yaml(spec: LaunchSpec) -> str:
    kind = "spot" if spec.spot else "on-demand"
    lines = [
        f"# SkyPilot task for gpufit option {spec.rank}: "
        + _one_line(f"{spec.provider} {spec.instance_type} ({kind}) in {spec.region}"),
        f"# Plan: {_one_line(spec.strategy)}",
        "# Launch from this directory: sky launch -c NAME task.yaml --env DATA_PATH=...",
        f"name: {_q('gpufit-' + re.sub(r'[^a-z0-9]+', '-', spec.model.lower()).strip('-'))}",
        "workdir: .  # your training script lives here; synced to every node",
        f"num_nodes: {spec.nodes}",
        "resources:",
    ]
    if spec.cloud is None:
        lines.append(
            f"  # SkyPilot has no {_one_line(spec.provider)!r} cloud: any cloud with these GPUs"
        )
    else:
        lines.append(f"  cloud: {_q(spec.cloud)}")
        lines.append(f"  region: {_q(spec.region)}")
        if spec.zone:  # feeds name zones as IDs (use1-az6) or names: a comment, not a pin
            lines.append(f"  # priced in zone {_one_line(spec.zone)}; add `zone:` to pin it")
        lines.append(f"  instance_type: {_q(spec.instance_type)}")
    lines += [
        f"  accelerators: {_q(f'{spec.accelerator}:{spec.gpus_per_node}')}",
        f"  use_spot: {_q(spec.spot)}",
        f"  disk_size: {spec.disk_size_gib}  # GiB per node: env + weights + data + 2 checkpoints",
        "envs:",
        '  TRAIN_SCRIPT: "train.py"  # your script, in this directory',
        '  TRAIN_ARGS: ""  # extra arguments for it',
        '  DATA_PATH: ""  # where the training data is (s3://..., gs://..., a path); required',
        f"  CHECKPOINT_DIR: {_q(CHECKPOINT_DIR)}",
        f"  MAIN_PROCESS_PORT: {_q(str(MAIN_PROCESS_PORT))}",
    ]
    if spec.checkpoint_interval_hours is not None:
        minutes = _minutes(spec.checkpoint_interval_hours)
        lines.append(
            f"  CHECKPOINT_EVERY_MINUTES: {_q(str(minutes))}  "
            "# spot: gpufit's checkpoint interval (Young/Daly)"
        )
    lines += [
        "file_mounts:",
        f"  {CONFIG_PATH}: accelerate.yaml",
        f"  {CHECKPOINT_DIR}:  # a bucket: checkpoints outlive the cluster",
        f"    name: {_q(spec.checkpoint_bucket)}",
        "    mode: MOUNT",
        "setup: |",
        "  set -euo pipefail",
        '  pip install --upgrade "accelerate>=1.0" "transformers>=4.40" datasets',
    ]
    if spec.distributed_type == "DEEPSPEED":
        lines.append("  pip install deepspeed")
    lines += [
        "  if [ -f requirements.txt ]; then pip install -r requirements.txt; fi",
        "run: |",
        "  set -euo pipefail",
        '  : "${DATA_PATH:?set it: sky launch ... --env DATA_PATH=s3://bucket/path}"',
        "  # SkyPilot's multi-node environment: the first IP is the main process's node.",
        '  MAIN_IP=$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
        "  NUM_PROCESSES=$((SKYPILOT_NUM_NODES * SKYPILOT_NUM_GPUS_PER_NODE))",
        '  RESUME_ARGS=""',
    ]
    if spec.spot:
        lines += [
            "  # Spot: preempted runs restart here; resume from the latest checkpoint.",
            "  # Save one every $CHECKPOINT_EVERY_MINUTES minutes "
            '(accelerator.save_state(f"$CHECKPOINT_DIR/checkpoint-{step}")).',
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
        '    --data_path "$DATA_PATH" --output_dir "$CHECKPOINT_DIR" $RESUME_ARGS',
    ]
    return "\n".join(lines) + "\n"


def _accelerate_yaml(spec: LaunchSpec) -> str:
    lines = [
        f"# Hugging Face Accelerate config for gpufit option {spec.rank}: "
        + _one_line(spec.strategy),
        "# Keys as documented by Accelerate (package_reference/cli.md, usage_guides/fsdp.md,",
        "# usage_guides/deepspeed.md); `accelerate launch --config_file accelerate.yaml`.",
        "compute_environment: LOCAL_MACHINE",
        f"distributed_type: {spec.distributed_type}",
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
    if spec.distributed_type == "FSDP":
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
            "  gradient_accumulation_steps: 1  # set to your global batch / (micro-batch × GPUs)",
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


def _readme(spec: LaunchSpec, query: str) -> str:
    kind = "spot" if spec.spot else "on-demand"
    cluster = re.sub(r"[^a-z0-9]+", "-", spec.model.lower()).strip("-") or "gpufit"
    lines = [
        f"# Launch files for gpufit option {spec.rank}",
        "",
        f"Question: {_one_line(query)}",
        "",
        f"- Where: {spec.provider} `{spec.instance_type}` ({kind}), {spec.region}"
        + (f" / {spec.zone}" if spec.zone else ""),
        f"- Layout: {spec.nodes} node(s) × {spec.gpus_per_node} {spec.accelerator} "
        f"= {spec.total_gpus} GPUs; {spec.strategy}",
        f"- Memory per GPU: {spec.memory_per_gpu_gib:.1f} of {spec.usable_gib_per_gpu:.1f} GiB "
        "usable",
        f"- Expected: {spec.expected_hours:.1f} h, ${spec.expected_cost_usd:,.2f}"
        + (
            f" (up to {spec.pessimistic_hours:.1f} h, ${spec.pessimistic_cost_usd:,.2f} "
            "at the pessimistic end of the spot range)"
            if spec.spot
            else ""
        ),
        f"- Checkpoint: {spec.checkpoint_gib:.1f} GiB, in the bucket "
        f"`{spec.checkpoint_bucket}` mounted at `{CHECKPOINT_DIR}`",
    ]
    if spec.checkpoint_interval_hours is not None:
        lines.append(
            f"- Spot checkpoint interval: every {_minutes(spec.checkpoint_interval_hours)} "
            "minutes (`CHECKPOINT_EVERY_MINUTES` in task.yaml)"
        )
    lines += [
        f"- Disk: {spec.disk_size_gib} GiB per node (environment, base weights, data, two "
        "checkpoints)",
        "",
        "## Fill in",
        "",
        "1. Put your training script in this directory as `train.py` (or set `TRAIN_SCRIPT`), "
        "with a `requirements.txt` if it needs more than accelerate/transformers/datasets. "
        "It receives `--data_path`, `--output_dir` and, when resuming, "
        "`--resume_from_checkpoint`; save with `accelerator.save_state` into "
        "`$CHECKPOINT_DIR/checkpoint-<step>`.",
        "2. Say where the data is: `--env DATA_PATH=s3://your-bucket/data` (or edit task.yaml).",
        "3. If the bucket name is taken, change `name:` under `file_mounts` in task.yaml.",
        "",
        "## Launch",
        "",
        "```",
        f"sky launch -c {cluster} task.yaml --env DATA_PATH=s3://your-bucket/data",
        "```",
    ]
    if spec.spot:
        lines += [
            "",
            "On spot, a managed job restarts the task after a preemption (it resumes from the "
            "latest checkpoint):",
            "",
            "```",
            f"sky jobs launch -n {cluster} task.yaml --env DATA_PATH=s3://your-bucket/data",
            "```",
        ]
    if spec.cloud is None:
        lines += [
            "",
            f"SkyPilot has no `{_one_line(spec.provider)}` cloud, so task.yaml pins only the "
            "GPUs; SkyPilot picks a cloud that has them.",
        ]
    lines += [
        "",
        "Figures are gpufit's estimates at the time of the answer; prices move.",
    ]
    return "\n".join(lines) + "\n"


def launch_files(spec: LaunchSpec, *, query: str = "") -> LaunchFiles:
    """The three launch files of a spec (``query`` is quoted in the README only)."""
    return LaunchFiles(
        task_yaml=_task_yaml(spec),
        accelerate_yaml=_accelerate_yaml(spec),
        readme=_readme(spec, query),
    )
