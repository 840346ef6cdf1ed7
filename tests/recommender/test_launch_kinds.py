"""One plan of each kind through `launch`: what runs is what was priced, the set-up installs
what the method needs, and every file passes the checks of the tool that reads it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recommender.errors import WorkloadError
from recommender.estimation.global_batch import FINETUNE_BATCH_TOKENS, default_batch_tokens
from recommender.launch.files import LaunchFiles, launch_files
from recommender.launch.spec import LaunchSpec, launch_spec
from recommender.launch.torchtitan import torchtitan_reason
from recommender.ranking.recommend import Option, recommend
from recommender.workload import (
    HardwareRequest,
    Method,
    Objective,
    Offload,
    Sharding,
    Workload,
)
from tests.factories import NOW, catalog, offer, workload
from tests.recommender.launch_checks import (
    accelerate_launch_env,
    check_accelerate,
    check_torchtitan,
    load,
    skypilot_task,
    tool,
)

# Offers SkyPilot's test AWS catalog (tests/feeds/data/skypilot_aws.csv) holds, so its
# parser can check them: 8×A100-40GB p4d in us-east-1 (on demand and spot), 1×V100 p3.
P4D = offer(instance_type="p4d.24xlarge", gpu_id="A100-SXM-40GB", price_usd_per_hour=21.96)
P4D_SPOT = offer(
    instance_type="p4d.24xlarge",
    gpu_id="A100-SXM-40GB",
    price_usd_per_hour=8.12,
    spot=True,
    zone="use1-az1",
)
P3 = offer(
    instance_type="p3.2xlarge",
    gpu_id="V100-SXM-16GB",
    gpu_count=1,
    price_usd_per_hour=3.06,
    region="us-west-2",
)
H200 = offer(instance_type="p5e.48xlarge", gpu_id="H200-SXM-141GB", price_usd_per_hour=40.0)


@dataclass(frozen=True)
class Kind:
    workload: Workload
    offer: Any


KINDS = {
    "single GPU": Kind(workload(model="Qwen2 0.5B"), P3),
    "FSDP": Kind(workload(sharding=Sharding.FSDP), P4D),
    "ZeRO-3 offload": Kind(workload(sharding=Sharding.ZERO3, offload=Offload.PARAMS), P4D),
    "TP multi-node": Kind(
        workload(
            sharding=Sharding.FSDP,
            tensor_parallel=8,
            hardware=HardwareRequest("A100-SXM-40GB", 16),
        ),
        P4D,
    ),
    "TP+PP multi-node": Kind(
        workload(
            model="Llama 3.3 70B",
            method=Method.PRETRAIN,
            tokens=1e9,
            tensor_parallel=8,
            pipeline_parallel=4,
            hardware=HardwareRequest("A100-SXM-40GB", 64),
        ),
        P4D,
    ),
    "LoRA": Kind(workload(method=Method.LORA), P4D),
    "QLoRA": Kind(workload(model="Llama 3.3 70B", method=Method.QLORA), P4D),
    "DPO": Kind(workload(objective=Objective.DPO, method=Method.LORA), P4D),
    "GRPO": Kind(workload(objective=Objective.GRPO, method=Method.LORA), H200),
    "spot": Kind(workload(), P4D_SPOT),
}


def _option(kind: Kind) -> Option:
    rec = recommend(kind.workload, catalog(kind.offer), now=NOW)
    assert rec.options, "the workload fits on the offer"
    return rec.options[0]


def _files(name: str) -> tuple[LaunchSpec, LaunchFiles, Option]:
    kind = KINDS[name]
    option = _option(kind)
    spec = launch_spec(kind.workload, option)
    return spec, launch_files(spec, query=name), option


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_file_passes_its_readers_checks(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, files, option = _files(name)
    task = load(files.task_yaml)
    assert task["num_nodes"] == option.nodes
    assert set(files.by_name()) == {"task.yaml", files.config_name, "README.md"}
    # the engine is named as the config names it, in the README and in both files
    assert spec.engine in files.readme
    assert spec.engine in files.config
    assert spec.engine in files.task_yaml
    dp = option.plan.strategy.parallel.dp(option.plan.gpus)
    assert spec.global_batch == spec.micro_batch * dp * spec.grad_accum
    if spec.framework == "torchtitan":
        doc = check_torchtitan(files.config, tmp_path, world_size=option.plan.gpus)
        assert "`[parallelism]` in torchtitan.toml" in files.readme
        assert doc["training"]["global_batch_size"] == spec.global_batch
    else:
        acc = check_accelerate(files.config)
        assert acc["num_processes"] == option.plan.gpus == spec.total_gpus
        assert acc["num_machines"] == option.nodes
        assert f"`distributed_type: {acc['distributed_type']}`" in files.readme
        envs = task["envs"]  # the batch of the plan's step model, in whole micro-batches
        assert envs["MICRO_BATCH"] == str(KINDS[name].workload.micro_batch)
        assert envs["GRAD_ACCUM"] == envs["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"]
        assert int(envs["GLOBAL_BATCH"]) == spec.global_batch
        if "deepspeed_config" in acc:
            assert acc["deepspeed_config"]["gradient_accumulation_steps"] == spec.grad_accum
    # SkyPilot's parser accepts the task, with the option's resources
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for file_name, text in files.by_name().items():
        (work / file_name).write_text(text)
    (work / "train.py").write_text("print('hi')\n")
    sky_task = skypilot_task(files.task_yaml, tmp_path / "home", monkeypatch)
    (resources,) = sky_task.resources
    assert sky_task.num_nodes == option.nodes
    assert resources.instance_type == option.offer.instance_type
    assert resources.use_spot is option.offer.spot
    assert "/checkpoints" in sky_task.storage_mounts


#: What Accelerate's launcher hands the processes for each kind it runs (accelerate 1.15.0
#: utils/launch.py: ACCELERATE_USE_FSDP, FSDP_*, PARALLELISM_CONFIG_*, ACCELERATE_DEEPSPEED_*).
@pytest.mark.parametrize("name", sorted(n for n in KINDS if n != "TP+PP multi-node"))
def test_accelerate_launches_the_plan(name: str, tmp_path: Path) -> None:
    spec, files, _ = _files(name)
    env = accelerate_launch_env(files.accelerate_yaml, tmp_path)
    assert env["ACCELERATE_MIXED_PRECISION"] == spec.mixed_precision
    if spec.distributed_type == "FSDP":
        assert env["ACCELERATE_USE_FSDP"] == "true"
        assert env["FSDP_VERSION"] == str(spec.fsdp_version)
        assert env["FSDP_OFFLOAD_PARAMS"] == str(spec.fsdp_offload_params).lower()
        if spec.fsdp_version == 1:
            assert env["FSDP_SHARDING_STRATEGY"] == spec.fsdp_sharding_strategy
    else:
        assert "ACCELERATE_USE_FSDP" not in env
    if spec.fsdp_version == 2:
        assert env["PARALLELISM_CONFIG_TP_SIZE"] == str(spec.tp)
        assert env["PARALLELISM_CONFIG_CP_SIZE"] == str(spec.cp)
        assert env["PARALLELISM_CONFIG_DP_SHARD_SIZE"] == str(spec.dp_shard)
        assert env["PARALLELISM_CONFIG_DP_REPLICATE_SIZE"] == str(spec.dp_replicate)
    else:
        assert not any(k.startswith("PARALLELISM_CONFIG_") for k in env)
    if spec.distributed_type == "DEEPSPEED":
        assert env["ACCELERATE_USE_DEEPSPEED"] == "true"
        assert env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == str(spec.zero_stage)
        assert env["ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"] == spec.offload_param_device
        assert env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] == str(spec.grad_accum)


def test_accelerate_refuses_a_config_key_it_does_not_read(tmp_path: Path) -> None:
    """The real loader bites: a top-level key ClusterConfig lacks is refused."""
    _, files, _ = _files("FSDP")
    with pytest.raises(ValueError, match="not_a_key"):
        accelerate_launch_env(files.accelerate_yaml + "not_a_key: 1\n", tmp_path)


def test_global_batch_is_the_step_models() -> None:
    """The tokens per optimizer step the files ask for are the step model's global batch
    (:func:`recommender.estimation.global_batch.default_batch_tokens`), to within half a micro-batch
    of every data-parallel rank; pretraining's grows with the cluster."""
    pre = workload(method=Method.PRETRAIN, tokens=1e9)
    for name, w, o in [
        *((n, KINDS[n].workload, KINDS[n].offer) for n in ("FSDP", "single GPU", "TP multi-node")),
        ("pretrain", pre, P4D),
    ]:
        option = _option(Kind(w, o))
        spec = launch_spec(w, option)
        par = option.plan.strategy.parallel
        target = default_batch_tokens(w, par, option.plan.gpus)
        if name != "pretrain":
            assert target == FINETUNE_BATCH_TOKENS
        per_micro_step = spec.micro_batch * spec.seq_len * par.dp(option.plan.gpus)
        assert abs(spec.global_batch * spec.seq_len - target) <= per_micro_step / 2


def test_single_gpu_and_fsdp() -> None:
    single, files, _ = _files("single GPU")
    assert single.distributed_type == "NO"
    assert "network_tier" not in load(files.task_yaml)["resources"]
    fsdp, files, _ = _files("FSDP")
    acc = load(files.accelerate_yaml)
    assert acc["fsdp_config"]["fsdp_sharding_strategy"] == "FULL_SHARD"
    assert "deepspeed" not in fsdp.packages
    assert "DeepSpeed" not in files.readme


def test_zero3_offload_is_deepspeed_everywhere() -> None:
    spec, files, _ = _files("ZeRO-3 offload")
    acc = load(files.accelerate_yaml)
    assert acc["distributed_type"] == "DEEPSPEED"
    assert acc["deepspeed_config"]["zero_stage"] == 3
    assert acc["deepspeed_config"]["offload_param_device"] == "cpu"
    assert spec.engine == "DeepSpeed ZeRO-3, optimizer and parameters on the CPU"
    assert "FSDP" not in files.readme  # the README says DeepSpeed, as the config does
    assert "deepspeed==0.19.8" in load(files.task_yaml)["setup"]


def test_tensor_parallel_plan_runs_as_priced_across_nodes() -> None:
    _spec, files, option = _files("TP multi-node")
    assert option.plan.strategy.parallel.tp == 8
    acc = load(files.accelerate_yaml)
    assert acc["fsdp_config"]["fsdp_version"] == 2
    par = acc["parallelism_config"]
    assert par["parallelism_config_tp_size"] == 8
    assert par["parallelism_config_dp_shard_size"] == 2
    assert par["parallelism_config_cp_size"] == 1
    task = load(files.task_yaml)
    assert task["resources"]["network_tier"] == "best"
    run = task["run"]
    assert 'MAIN_IP=$(echo "$SKYPILOT_NODE_IPS" | head -n1)' in run
    assert '--machine_rank "$SKYPILOT_NODE_RANK"' in run
    assert '--num_machines "$SKYPILOT_NUM_NODES"' in run
    assert "EFA" in files.readme
    assert "use_internal_ips" in files.readme


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


@pytest.mark.parametrize(
    ("sharding", "offload", "method", "missing"),
    [
        (Sharding.ZERO1, Offload.NONE, Method.FULL, "FSDP2 shards the weights"),
        (Sharding.DDP, Offload.NONE, Method.FULL, "FSDP2 shards the whole model states"),
        (Sharding.FSDP, Offload.OPTIMIZER, Method.FULL, "optimizer alone on the CPU"),
        (Sharding.FSDP, Offload.NONE, Method.LORA, "not for PEFT adapters"),
    ],
)
def test_tensor_parallel_plans_no_framework_runs_are_refused(
    sharding: Sharding, offload: Offload, method: Method, missing: str
) -> None:
    w = workload(sharding=sharding, offload=offload, method=method, tensor_parallel=2)
    option = _option(Kind(w, offer(ram_gib=2048.0)))
    assert option.plan.strategy.parallel.tp == 2
    spec = launch_spec(w, option)
    assert missing in spec.unsupported
    with pytest.raises(WorkloadError):
        launch_files(spec)


def test_hsdp_with_whole_replicas_per_node_is_refused() -> None:
    """TP8 on 8-GPU nodes under HSDP leaves one rank per node to shard over: Accelerate's
    ParallelismConfig refuses TP beside pure replication."""
    w = workload(
        sharding=Sharding.HSDP, tensor_parallel=8, hardware=HardwareRequest("A100-SXM-40GB", 16)
    )
    option = _option(Kind(w, P4D))
    assert option.plan.strategy.sharding is Sharding.HSDP
    spec = launch_spec(w, option)
    assert "dp_replicate > 1 needs dp_shard > 1" in spec.unsupported


def test_lora_and_qlora_install_peft_and_bitsandbytes() -> None:
    lora, files, _ = _files("LoRA")
    assert "peft==0.21.2" in lora.packages.split()
    assert "bitsandbytes" not in lora.packages
    run = load(files.task_yaml)["run"]
    assert "--use_peft --lora_r 16 --lora_target_modules all-linear" in run
    assert "--load_in_4bit" not in run
    qlora, files, _ = _files("QLoRA")
    assert {"peft==0.21.2", "bitsandbytes==0.50.2"} <= set(qlora.packages.split())
    task = load(files.task_yaml)
    assert "--load_in_4bit --bnb_4bit_quant_type nf4 --use_bnb_nested_quant" in task["run"]
    assert '"bitsandbytes==0.50.2"' in task["setup"]
    assert "trl" not in qlora.packages  # plain SFT needs no TRL trainer
    sharded = qlora.distributed_type == "FSDP" or qlora.zero_stage == 3
    assert ("--bnb_4bit_quant_storage bfloat16" in task["run"]) is sharded


def test_dpo_installs_trl_without_vllm() -> None:
    spec, files, _ = _files("DPO")
    assert "trl==1.16.0" in spec.packages.split()
    assert "vllm" not in spec.packages
    assert "DPO with TRL's trainer" in files.readme


def test_grpo_generates_with_vllm_where_the_plan_has_room() -> None:
    spec, files, option = _files("GRPO")
    assert spec.generation == "vllm"
    assert {"trl==1.16.0", "vllm==0.33.0"} <= set(spec.packages.split())
    run = load(files.task_yaml)["run"]
    assert "--num_generations 8" in run
    assert f"--vllm_gpu_memory_utilization {spec.vllm_gpu_memory_utilization}" in run
    assert spec.vllm_gpu_memory_utilization is not None
    assert 0 < spec.vllm_gpu_memory_utilization < 1
    # vLLM's copy of the weights and the KV cache fit beside what the plan holds
    share = spec.vllm_gpu_memory_utilization * 141e9 / 2**30
    assert option.plan.memory.total_gib + 16e9 / 2**30 <= option.plan.usable_gib
    assert share >= 16e9 / 2**30  # 8B parameters in 16 bits


def test_grpo_without_room_for_vllm_generates_with_transformers() -> None:
    w = workload(model="Llama 3.3 70B", objective=Objective.GRPO, method=Method.QLORA)
    option = _option(Kind(w, P4D))
    spec = launch_spec(w, option)
    assert option.plan.memory.total_gib + 70e9 * 2 / 2**30 > option.plan.usable_gib
    assert spec.generation == "transformers"
    assert "vllm" not in spec.packages
    files = launch_files(spec)
    assert "--use_vllm" not in load(files.task_yaml)["run"]
    assert "does not hold vLLM's copy" in files.readme


def test_spot_leads_with_managed_jobs_and_passes_the_interval() -> None:
    _spec, files, option = _files("spot")
    assert option.spot is not None
    minutes = round(option.spot.checkpoint_interval_hours * 60)
    task = load(files.task_yaml)
    assert task["envs"]["CHECKPOINT_EVERY_MINUTES"] == str(minutes)
    assert '--checkpoint_every_minutes "$CHECKPOINT_EVERY_MINUTES"' in task["run"]
    launch = files.readme.index("## Launch")
    assert files.readme.index("sky jobs launch -n", launch) < files.readme.index("```\n\n", launch)
    assert "sky launch -c" not in files.readme
    assert "## Preemptions and resuming" in files.readme
    assert f"every {minutes} minutes" in files.readme
    assert "--resume_from_checkpoint" in files.readme
    assert files.task_yaml.splitlines()[3].startswith("# Launch from this directory: sky jobs")
    on_demand, od_files, _ = _files("FSDP")
    assert "sky launch -c" in od_files.readme
    assert "sky jobs launch" not in od_files.readme
    assert "--checkpoint_every_minutes" not in od_files.task_yaml
    assert on_demand.checkpoint_interval_hours is None


@pytest.mark.parametrize(
    ("provider", "fabric"),
    [("aws", "EFA"), ("gcp", "GPUDirect-TCPX"), ("nebius", "InfiniBand"), ("lambda", "InfiniBand")],
)
def test_multi_node_readme_states_the_fabric_each_cloud_needs(provider: str, fabric: str) -> None:
    w = workload(sharding=Sharding.FSDP, hardware=HardwareRequest("A100-SXM-40GB", 16))
    spec = launch_spec(w, _option(Kind(w, offer(provider=provider, gpu_id="A100-SXM-40GB"))))
    assert spec.nodes == 2
    files = launch_files(spec)
    assert load(files.task_yaml)["resources"]["network_tier"] == "best"
    between = files.readme[files.readme.index("## Between the nodes") :]
    assert f"need {fabric}" in between
    assert ".." not in between
    if provider == "lambda":
        assert "SkyPilot documents no such setting for lambda" in between


def test_owned_gpus_run_on_the_teams_machines_never_rented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recommender.parsing.parse import parse_workload
    from recommender.pricing.offers import OWNED_PROVIDER

    w = parse_workload("llama 3 8b full finetune on 1B tokens, we already have 8x A100", now=NOW)
    rec = recommend(w, catalog(P4D), now=NOW)
    (option,) = [o for o in rec.options if o.offer.provider == OWNED_PROVIDER]
    files = launch_files(launch_spec(w, option))
    resources = load(files.task_yaml)["resources"]
    assert resources["infra"] == "ssh"
    assert not {"cloud", "region", "instance_type"} & set(resources)
    assert "sky ssh up" in files.readme
    monkeypatch.chdir(tmp_path)
    sky_task = skypilot_task(files.task_yaml, tmp_path / "home", monkeypatch)
    (parsed,) = sky_task.resources
    assert type(parsed.cloud).__name__ == "SSH"


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
