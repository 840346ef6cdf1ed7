"""Plans with pipeline or expert parallelism launch with torchtitan 0.2.2: its job config
carries the plan (degrees, schedule, batch, checkpoints), torchtitan's own loader reads it,
each model is the flavor torchtitan defines for it, and what it cannot run is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from recommender.errors import WorkloadError
from recommender.launch.files import launch_files
from recommender.launch.spec import launch_spec
from recommender.launch.torchtitan import FLAVORS, layers_per_stage, torchtitan_reason
from recommender.models import lookup_model
from recommender.workload import HardwareRequest, Method, Offload, Sharding
from tests.factories import offer, workload
from tests.recommender.launch_checks import check_torchtitan, load, tool
from tests.recommender.test_launch_kinds import H200, KINDS, P4D, P4D_SPOT, Kind, _files, _option


@pytest.mark.parametrize("model", sorted(FLAVORS))
def test_each_flavor_is_the_model_gpufit_prices(model: str) -> None:
    """The flavor's shape (torchtitan's ``model_args``) is the architecture gpufit priced, and
    torchtitan can load its Hugging Face weights (a state-dict adapter) to fine-tune."""
    tool("torchtitan")
    from torchtitan.protocols.train_spec import get_train_spec

    flavor = FLAVORS[model]
    spec = get_train_spec(flavor.name)
    args = spec.model_args[flavor.flavor]
    arch = lookup_model(model)
    assert arch is not None
    assert (args.n_layers, args.dim, args.n_heads) == (arch.layers, arch.hidden, arch.heads)
    assert args.vocab_size == arch.vocab
    if flavor.name != "deepseek_v3":  # MLA has no grouped KV heads to compare
        assert args.n_kv_heads == arch.kv_heads
    moe = getattr(args, "moe_args", None)
    moe_enabled = getattr(args, "moe_enabled", flavor.name == "deepseek_v3")
    assert (moe.num_experts if moe is not None and moe_enabled else 1) == arch.experts
    assert spec.state_dict_adapter is not None


@pytest.mark.parametrize(
    ("layers", "stages", "per"),
    [(80, 4, 20), (126, 16, 8), (61, 8, 8), (48, 5, 10), (10, 4, 3), (9, 4, None), (94, 8, 12)],
)
def test_layers_per_stage_makes_exactly_the_stages(
    layers: int, stages: int, per: int | None
) -> None:
    """torchtitan makes ⌈layers / per stage⌉ stages; a count no value reaches is None."""
    assert layers_per_stage(layers, stages) == per
    if per is not None:
        assert -(-layers // per) == stages


def test_tensor_and_pipeline_plan_runs_as_priced_with_torchtitan(tmp_path: Path) -> None:
    spec, files, option = _files("TP+PP multi-node")
    par = option.plan.strategy.parallel
    assert (par.tp, par.pp, option.nodes) == (8, 4, 8)
    assert spec.framework == "torchtitan"
    assert files.config_name == "torchtitan.toml"
    doc = check_torchtitan(files.config, tmp_path, world_size=64)
    p, t = doc["parallelism"], doc["training"]
    assert (p["tensor_parallel_degree"], p["pipeline_parallel_degree"]) == (8, 4)
    assert p["data_parallel_replicate_degree"] * p["data_parallel_shard_degree"] == 2
    assert p["pipeline_parallel_schedule"] == "1F1B"  # the schedule the bubble is priced for
    assert p["pipeline_parallel_layers_per_stage"] == 80 // 4  # even stages, as priced
    # one schedule runs the step's micro-batches: the pipeline's m is the plan's accumulation
    assert p["pipeline_parallel_microbatch_size"] == spec.micro_batch
    assert t["local_batch_size"] == spec.micro_batch * spec.grad_accum
    assert t["global_batch_size"] == t["local_batch_size"] * 2 == spec.global_batch
    assert t["seq_len"] == spec.seq_len
    assert doc["model"] == {"name": "llama3", "flavor": "70B", "hf_assets_path": "hf_assets"}
    assert "initial_load_path" not in doc["checkpoint"]  # pretraining starts from scratch
    # ZeRO-1, priced for the plan, runs as FSDP2 keeping the weights through the step
    assert option.plan.strategy.sharding is Sharding.ZERO1
    assert p["fsdp_reshard_after_forward"] == "never"
    assert "weights kept through the step" in files.readme
    task = load(files.task_yaml)
    assert "accelerate" not in task["setup"]
    assert '"torchtitan==0.2.2"' in task["setup"]
    assert (
        'hf download "meta-llama/Llama-3.3-70B-Instruct" --local-dir hf_assets '
        '--include "*.json" --include "tokenizer*"'  # the tokenizer and config to pretrain
    ) in task["setup"]
    run = task["run"]
    assert "-m torchtitan.train" in run
    assert "--job.config_file /gpufit/torchtitan.toml" in run
    assert '--node_rank "$SKYPILOT_NODE_RANK"' in run
    assert '--nnodes "$SKYPILOT_NUM_NODES"' in run
    assert '--master_addr "$MAIN_IP"' in run
    assert task["resources"]["network_tier"] == "best"
    assert task["file_mounts"]["/gpufit/torchtitan.toml"] == "torchtitan.toml"
    assert "sky launch -c llama-3-3-70b task.yaml --env DATASET=" in files.readme


def test_torchtitan_refuses_a_field_it_does_not_read(tmp_path: Path) -> None:
    """The real ConfigManager bites: a misspelt field is refused, not ignored (and the
    schema taken from its source refuses it too)."""
    _, files, _ = _files("TP+PP multi-node")
    bad = files.config.replace("pipeline_parallel_degree", "pipeline_parallel_degre")
    with pytest.raises(AssertionError, match=r"no field parallelism\.pipeline_parallel_degre"):
        check_torchtitan(bad, tmp_path, world_size=64)
    tool("torchtitan")
    from torchtitan.config import ConfigManager

    (tmp_path / "bad.toml").write_text(bad)
    with pytest.raises(ValueError, match="pipeline_parallel_degre"):
        ConfigManager().parse_args(["--job.config_file", str(tmp_path / "bad.toml")])


def test_an_interleaved_pipeline_runs_its_virtual_stages(tmp_path: Path) -> None:
    w = workload(
        model="Llama 3.1 70B",
        method=Method.PRETRAIN,
        tokens=1e9,
        tensor_parallel=8,
        pipeline_parallel=4,
        virtual_stages=2,
        hardware=HardwareRequest("A100-SXM-40GB", 64),
    )
    option = _option(Kind(w, P4D))
    assert option.plan.strategy.parallel.vp == 2
    spec = launch_spec(w, option)
    doc = check_torchtitan(launch_files(spec).config, tmp_path, world_size=64)
    p = doc["parallelism"]
    assert p["pipeline_parallel_schedule"] == "Interleaved1F1B"
    assert p["pipeline_parallel_layers_per_stage"] == 80 // (4 * 2)  # two stages per GPU
    assert spec.grad_accum % 4 == 0  # whole rounds of pp micro-batches


def test_a_pipeline_with_fewer_micro_batches_than_stages_is_refused() -> None:
    """torch's 1F1B needs a micro-batch per stage: PP4 with 3 micro-batches a step cannot run,
    with 4 it can."""
    kind = KINDS["TP+PP multi-node"]
    plan = _option(kind).plan
    for micro_batches, refused in ((3, True), (4, False)):
        reason = torchtitan_reason(
            kind.workload,
            plan,
            replicate=1,
            shard=2,
            mixed_precision="bf16",
            micro_batches=micro_batches,
        )
        assert ("needs at least 4 micro-batches a step" in reason) is refused


def test_offload_without_sharded_ranks_is_refused() -> None:
    """torchtitan offloads through FSDP2, which it applies only over sharded ranks: TP8 × PP4
    on 32 GPUs leaves one data-parallel rank, so the priced offload would not happen."""
    w = workload(
        model="Llama 3.1 70B",
        method=Method.PRETRAIN,
        tokens=1e9,
        tensor_parallel=8,
        pipeline_parallel=4,
        offload=Offload.PARAMS,
        sharding=Sharding.FSDP,
        hardware=HardwareRequest("A100-SXM-40GB", 32),
    )
    option = _option(Kind(w, offer(gpu_id="A100-SXM-40GB", ram_gib=2048.0)))
    assert option.plan.strategy.parallel.dp(option.plan.gpus) == 1
    assert option.plan.strategy.offload is Offload.PARAMS
    assert "applies only over sharded data-parallel" in launch_spec(w, option).unsupported


def test_expert_parallel_plan_runs_with_torchtitan(tmp_path: Path) -> None:
    w = workload(
        model="Qwen3 30B-A3B",
        method=Method.PRETRAIN,
        tokens=1e9,
        expert_parallel=8,
        sharding=Sharding.FSDP,
        hardware=HardwareRequest("H200-SXM-141GB", 16),
    )
    option = _option(Kind(w, H200))
    assert option.plan.strategy.parallel.ep == 8
    spec = launch_spec(w, option)
    files = launch_files(spec)
    doc = check_torchtitan(files.config, tmp_path, world_size=16)
    p = doc["parallelism"]
    assert p["expert_parallel_degree"] == 8
    assert p["data_parallel_shard_degree"] == 16
    assert p["pipeline_parallel_degree"] == 1
    assert doc["model"]["flavor"] == "30B-A3B"
    # no pipeline: torchtitan accumulates global / (local × dp) micro-steps, the plan's
    assert doc["training"]["global_batch_size"] // (doc["training"]["local_batch_size"] * 16) == (
        spec.grad_accum
    )


def test_a_full_finetune_loads_the_base_weights(tmp_path: Path) -> None:
    w = workload(
        model="Qwen3 32B",
        tensor_parallel=8,
        pipeline_parallel=2,
        sharding=Sharding.FSDP,
        hardware=HardwareRequest("H200-SXM-141GB", 16),
    )
    spec = launch_spec(w, _option(Kind(w, H200)))
    files = launch_files(spec)
    doc = check_torchtitan(files.config, tmp_path, world_size=16)
    assert doc["checkpoint"]["initial_load_path"] == "hf_assets"
    assert doc["checkpoint"]["initial_load_in_hf"] is True
    assert '--include "*.json"' not in load(files.task_yaml)["setup"]  # the weights as well


@pytest.mark.parametrize(
    ("model", "method", "sharding", "missing"),
    [
        ("Llama 3.3 70B", Method.LORA, Sharding.FSDP, "no LoRA adapters"),
        ("Mistral Large 123B", Method.PRETRAIN, Sharding.FSDP, "no model definition"),
        ("Llama 3.3 70B", Method.PRETRAIN, Sharding.DDP, "keeps the weights whole"),
    ],
)
def test_pipeline_plans_torchtitan_cannot_run_are_refused(
    model: str, method: Method, sharding: Sharding, missing: str
) -> None:
    w = workload(
        model=model,
        method=method,
        tokens=1e9,
        sharding=sharding,
        tensor_parallel=8,
        pipeline_parallel=2,
        hardware=HardwareRequest("H200-SXM-141GB", 32),
    )
    option = _option(Kind(w, H200))
    assert option.plan.strategy.parallel.pp == 2
    spec = launch_spec(w, option)
    assert missing in spec.unsupported
    assert "Accelerate cannot run" in spec.unsupported
    with pytest.raises(WorkloadError, match="cannot write launch files for option 1"):
        launch_files(spec)


def test_a_spot_pipeline_plan_checkpoints_at_its_interval_and_resumes(tmp_path: Path) -> None:
    w = KINDS["TP+PP multi-node"].workload
    option = _option(Kind(w, P4D_SPOT))
    assert option.spot is not None
    spec = launch_spec(w, option)
    files = launch_files(spec)
    doc = check_torchtitan(files.config, tmp_path, world_size=option.plan.gpus)
    # the Young/Daly interval in steps of the plan's step time
    steps = round(option.spot.checkpoint_interval_hours / (option.hours / spec.train_steps))
    assert doc["checkpoint"]["interval"] == spec.checkpoint_interval_steps == max(1, steps)
    assert doc["checkpoint"]["enable"] is True
    assert doc["job"]["dump_folder"] == "/checkpoints"  # the bucket: resumes after preemption
    task = load(files.task_yaml)
    assert task["envs"]["CHECKPOINT_EVERY_STEPS"] == str(spec.checkpoint_interval_steps)
    assert '--checkpoint.interval "$CHECKPOINT_EVERY_STEPS"' in task["run"]
    launch = files.readme.index("## Launch")
    assert files.readme.index("sky jobs launch -n", launch) < files.readme.index("```\n\n", launch)
    assert "loads the newest one by itself" in files.readme
