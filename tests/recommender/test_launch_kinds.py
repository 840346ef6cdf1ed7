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
from tests.recommender.launch_checks import check_accelerate, load, skypilot_task

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
    acc = check_accelerate(files.accelerate_yaml)
    task = load(files.task_yaml)
    assert acc["num_processes"] == option.plan.gpus == spec.total_gpus
    assert acc["num_machines"] == task["num_nodes"] == option.nodes
    # the engine is named as the config names it, in the README and in both files
    assert f"`distributed_type: {acc['distributed_type']}`" in files.readme
    assert spec.engine in files.readme
    assert spec.engine in files.accelerate_yaml
    assert spec.engine in files.task_yaml
    # the batch of the plan's step model, in whole micro-batches
    envs = task["envs"]
    assert envs["MICRO_BATCH"] == str(KINDS[name].workload.micro_batch)
    assert envs["GRAD_ACCUM"] == envs["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"]
    dp = option.plan.strategy.parallel.dp(option.plan.gpus)
    assert int(envs["GLOBAL_BATCH"]) == spec.micro_batch * dp * int(envs["GRAD_ACCUM"])
    if "deepspeed_config" in acc:
        assert acc["deepspeed_config"]["gradient_accumulation_steps"] == spec.grad_accum
    # SkyPilot's parser accepts the task (when installed), with the option's resources
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


def test_tensor_and_pipeline_plan_is_refused_with_the_missing_piece() -> None:
    w = workload(
        model="Llama 3.3 70B",
        method=Method.PRETRAIN,
        tokens=1e9,
        tensor_parallel=8,
        pipeline_parallel=2,
        hardware=HardwareRequest("H200-SXM-141GB", 32),
    )
    option = _option(Kind(w, H200))
    assert option.plan.strategy.parallel.pp == 2
    assert option.nodes == 4
    spec = launch_spec(w, option)
    assert "no pipeline parallelism" in spec.unsupported
    assert "Megatron-LM" in spec.unsupported
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
