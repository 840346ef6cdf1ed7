"""The README of a launch, and the words it shares with task.yaml's comments.

The README says what the files run (the engine, named as accelerate.yaml names it), the
plan's figures, what the set-up installs, what the training script must accept, how to
launch (``sky jobs launch`` first on spot: managed jobs recover from preemptions; ``sky
launch`` on demand), how resuming works, and for several nodes the fabric they need.

Fabric settings are SkyPilot's (docs.skypilot.co/en/latest/reference/yaml-spec.html,
``resources.network_tier``; examples/aws_efa, examples/gcp_gpu_direct_tcpx and
examples/nebius_infiniband in skypilot-org/skypilot, its CoreWeave page): ``network_tier:
best`` enables EFA on AWS VMs, GPUDirect-TCPX on GCP A3 VMs and InfiniBand on Nebius and
CoreWeave; elsewhere the README asks for nodes on one InfiniBand fabric. AWS instances with
several EFA interfaces also need ``aws.use_internal_ips: true`` in SkyPilot's own config.
"""

from __future__ import annotations

import re

from recommender import providers
from recommender.launch.spec import LaunchSpec
from recommender.pricing.offers import OWNED_PROVIDER

__all__ = ["CHECKPOINT_DIR", "cluster_name", "fabric_text", "launch_command", "one_line", "readme"]

#: Where the task mounts the checkpoint bucket on every node.
CHECKPOINT_DIR = "/checkpoints"

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def one_line(text: str) -> str:
    """Text safe in a YAML comment or a Markdown line: control characters and line breaks
    become spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())


def minutes(hours: float) -> int:
    return max(1, round(hours * 60))


def cluster_name(spec: LaunchSpec) -> str:
    return re.sub(r"[^a-z0-9]+", "-", spec.model.lower()).strip("-") or "gpufit"


def launch_command(spec: LaunchSpec) -> str:
    """The command that starts the task: a managed job on spot (SkyPilot restarts it after a
    preemption), a cluster on demand."""
    name = cluster_name(spec)
    verb = f"sky jobs launch -n {name}" if spec.spot else f"sky launch -c {name}"
    return f"{verb} task.yaml --env DATA_PATH=s3://your-bucket/data"


def fabric_text(spec: LaunchSpec) -> str:
    """What a multi-node plan needs between its nodes, and how task.yaml asks for it (the
    fabric ``network_tier: best`` provisions on each cloud is in its provider module)."""
    provider = providers.get(spec.provider)
    text = (
        f"{spec.nodes} nodes exchange gradients every step, so they need "
        f"{provider.network_tier or 'InfiniBand'} between them (the priced offer's fabric: "
        f"{spec.fabric}). task.yaml sets `resources.network_tier: best`, with which SkyPilot "
        "provisions it"
    )
    if provider.network_tier is not None:
        return text + provider.network_note
    tiered = [p.name for p in providers.PROVIDERS.values() if p.network_tier is not None]
    return text + (
        f" on {', '.join(tiered[:-1])} and {tiered[-1]}; SkyPilot documents no such setting "
        f"for {one_line(spec.provider)}: choose nodes on one InfiniBand fabric there."
    )


def _engine_lines(spec: LaunchSpec) -> list[str]:
    lines = [
        f"- Runs as: Hugging Face Accelerate, {spec.engine} (`distributed_type: "
        f"{spec.distributed_type}` in accelerate.yaml)",
        f"- Priced as: {spec.strategy}",
    ]
    if spec.distributed_type == "DEEPSPEED" and "FSDP" in spec.strategy:
        lines.append(
            f"  - The plan's FSDP sharding runs as DeepSpeed ZeRO-{spec.zero_stage}: FSDP "
            "cannot offload the optimizer alone, and ZeRO-3 shards the same states as FSDP "
            "full shard (ZeRO-2 as grad-op shard)."
        )
    elif spec.distributed_type == "FSDP" and "ZeRO" in spec.strategy:
        lines.append(
            "  - The plan's ZeRO sharding runs as FSDP: Accelerate runs tensor parallelism "
            "with FSDP2 only, and FSDP full shard shards the same states as ZeRO-3 (grad-op "
            "shard as ZeRO-2)."
        )
    lines.append(
        f"- Batch: {spec.micro_batch} sequence(s) of {spec.seq_len} tokens per micro-batch on "
        f"each data-parallel rank × {spec.grad_accum} gradient-accumulation steps = "
        f"{spec.global_batch} sequences ({spec.global_batch * spec.seq_len:,} tokens) per "
        "optimizer step, the global batch the estimate assumes"
    )
    return lines


def _method_lines(spec: LaunchSpec) -> list[str]:
    lines: list[str] = []
    if spec.method in ("lora", "qlora"):
        quant = ", the base weights in 4-bit NF4 (bitsandbytes)" if spec.method == "qlora" else ""
        lines.append(
            f"- Adapters: LoRA rank {spec.lora_rank} on {spec.lora_targets} linear layers{quant} "
            "(`--use_peft --lora_r ... --lora_target_modules ...`, TRL's names)"
        )
    if spec.objective != "sft":
        lines.append(f"- Objective: {spec.objective.upper()} with TRL's trainer for it")
    if spec.generation == "vllm":
        lines.append(
            f"- Generation: {spec.num_generations} completions per prompt with vLLM on the "
            "training GPUs (TRL's `--use_vllm --vllm_mode colocate`), "
            f"`--vllm_gpu_memory_utilization {spec.vllm_gpu_memory_utilization}`: vLLM's copy "
            "of the weights and the KV cache fit in the memory the plan leaves free"
        )
    elif spec.generation == "transformers":
        lines.append(
            f"- Generation: {spec.num_generations} completions per prompt with the policy's "
            "own `generate` (TRL's default), as priced: the memory the plan leaves free does "
            "not hold vLLM's copy of the weights"
        )
    return lines


def _resume_lines(spec: LaunchSpec) -> list[str]:
    if spec.checkpoint_interval_hours is None:
        return []
    every = minutes(spec.checkpoint_interval_hours)
    return [
        "",
        "## Preemptions and resuming",
        "",
        "A managed job (`sky jobs launch`) is restarted by SkyPilot after a preemption, on a new "
        "spot instance, and runs `run` again. The checkpoints are in the bucket mounted at "
        f"`{CHECKPOINT_DIR}`, which outlives the instance; `run` finds the newest "
        "`checkpoint-<step>` there and passes it as `--resume_from_checkpoint`, so the "
        "script loads it (`accelerator.load_state`) and goes on from that step.",
        "",
        f"Save a checkpoint every {every} minutes: task.yaml passes "
        f"`--checkpoint_every_minutes {every}` (`CHECKPOINT_EVERY_MINUTES`). It is gpufit's "
        f"Young/Daly interval for this offer, √(2 × time to write {spec.checkpoint_gib:.1f} GiB "
        "× mean time between preemptions): more often wastes time writing, less often "
        "loses more work to each preemption. The spot estimate assumes this interval.",
    ]


def readme(spec: LaunchSpec, query: str) -> str:
    kind = "spot" if spec.spot else "on-demand"
    lines = [
        f"# Launch files for gpufit option {spec.rank}",
        "",
        f"Question: {one_line(query)}",
        "",
        f"- Where: {spec.provider} `{spec.instance_type}` ({kind}), {spec.region}"
        + (f" / {spec.zone}" if spec.zone else ""),
        f"- Layout: {spec.nodes} node(s) × {spec.gpus_per_node} {spec.accelerator} "
        f"= {spec.total_gpus} GPUs",
        *_engine_lines(spec),
        *_method_lines(spec),
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
        f"- Disk: {spec.disk_size_gib} GiB per node (environment, base weights, data, two "
        "checkpoints)",
        f"- Set-up installs (Python 3.11 environment): {', '.join(spec.packages.split())}",
        "",
        "## Fill in",
        "",
        "1. Put your training script in this directory as `train.py` (or set `TRAIN_SCRIPT`), "
        "with a `requirements.txt` for anything else it needs. It receives `--data_path`, "
        "`--output_dir`, `--per_device_train_batch_size`, `--gradient_accumulation_steps`, "
        "`--max_length`"
        + (", `--checkpoint_every_minutes`" if spec.spot else "")
        + " and the method's flags above (TRL's argument names), and, when resuming, "
        "`--resume_from_checkpoint`; save with `accelerator.save_state` into "
        "`$CHECKPOINT_DIR/checkpoint-<step>`.",
        "2. Say where the data is: `--env DATA_PATH=s3://your-bucket/data` (or edit task.yaml).",
        "3. If the bucket name is taken, change `name:` under `file_mounts` in task.yaml.",
        "",
        "## Launch",
        "",
        "```",
        launch_command(spec),
        "```",
    ]
    if not spec.spot:
        lines += ["", "On demand nothing preempts the run: a plain cluster launch is enough."]
    lines += _resume_lines(spec)
    if spec.nodes > 1:
        lines += ["", "## Between the nodes", "", fabric_text(spec)]
    if spec.provider == OWNED_PROVIDER:
        lines += [
            "",
            "## Your own GPUs",
            "",
            "task.yaml runs on your machines, not rented ones: `infra: ssh` is a SkyPilot SSH "
            "Node Pool. List the machines in `~/.sky/ssh_node_pools.yaml` and run `sky ssh "
            'up` first (SkyPilot: "Deploy SkyPilot on existing machines"); `ssh/<pool>` '
            "picks one pool, `k8s` your Kubernetes cluster instead.",
        ]
    elif spec.cloud is None:
        lines += [
            "",
            f"SkyPilot has no `{one_line(spec.provider)}` cloud, so task.yaml pins only the "
            "GPUs; SkyPilot picks a cloud that has them.",
        ]
    lines += ["", "Figures are gpufit's estimates at the time of the answer; prices move."]
    return "\n".join(lines) + "\n"
