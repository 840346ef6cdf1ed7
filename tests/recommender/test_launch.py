"""Launch files: an option's SkyPilot task, Accelerate config and README, read back as YAML."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from recommender.launch.files import LaunchFiles, launch_files
from recommender.launch.skypilot import MIN_DISK_GIB, disk_size_gib, skypilot_accelerator
from recommender.launch.spec import LaunchSpec, _distributed, launch_spec
from recommender.pricing.offers import Fabric
from recommender.ranking.recommend import Option, recommend
from recommender.workload import HardwareRequest, Offload, Precision, Sharding, Workload
from tests.factories import H100_OD, H100_SPOT, NOW, catalog, offer, workload
from tests.recommender.launch_checks import check_accelerate


def _first(w: Workload, *offers: Any) -> Option:
    rec = recommend(w, catalog(*offers), now=NOW)
    assert rec.options, "the workload fits on the offers"
    return rec.options[0]


def _files(w: Workload, *offers: Any) -> tuple[LaunchSpec, LaunchFiles]:
    spec = launch_spec(w, _first(w, *offers))
    return spec, launch_files(spec, query="a question")


def _load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def test_on_demand_single_node_task_and_config() -> None:
    spec, files = _files(workload(), H100_OD)
    task = _load(files.task_yaml)
    res = task["resources"]
    assert res == {
        "cloud": "aws",
        "region": "us-east-1",
        "instance_type": "p5.48xlarge",
        "accelerators": "H100:8",
        "use_spot": False,
        "disk_size": spec.disk_size_gib,
    }
    assert task["num_nodes"] == 1
    assert task["file_mounts"]["/gpufit/accelerate.yaml"] == "accelerate.yaml"
    assert task["file_mounts"]["/checkpoints"] == {"name": spec.checkpoint_bucket, "mode": "MOUNT"}
    assert "pip install" in task["setup"]
    run = task["run"]
    for var in (
        "SKYPILOT_NODE_RANK",
        "SKYPILOT_NODE_IPS",
        "SKYPILOT_NUM_NODES",
        "SKYPILOT_NUM_GPUS_PER_NODE",
    ):
        assert var in run
    assert 'MAIN_IP=$(echo "$SKYPILOT_NODE_IPS" | head -n1)' in run
    assert "accelerate launch" in run
    assert "--config_file /gpufit/accelerate.yaml" in run
    assert "resume_from_checkpoint" not in run  # on demand: no preemptions to resume from
    assert "CHECKPOINT_EVERY_MINUTES" not in task["envs"]
    assert all(isinstance(v, str) for v in task["envs"].values())

    acc = _load(files.accelerate_yaml)
    assert acc["compute_environment"] == "LOCAL_MACHINE"
    assert acc["num_machines"] == 1
    assert acc["num_processes"] == 8
    assert acc["machine_rank"] == 0
    assert acc["mixed_precision"] == "bf16"
    assert acc["main_training_function"] == "main"
    assert acc["distributed_type"] == spec.distributed_type


def test_spot_option_resumes_and_carries_the_checkpoint_interval() -> None:
    option = _first(workload(), H100_SPOT)
    assert option.spot is not None
    spec = launch_spec(workload(), option)
    files = launch_files(spec)
    task = _load(files.task_yaml)
    assert task["resources"]["use_spot"] is True
    minutes = round(option.spot.checkpoint_interval_hours * 60)
    assert task["envs"]["CHECKPOINT_EVERY_MINUTES"] == str(minutes)
    assert "--resume_from_checkpoint $LATEST" in task["run"]
    assert 'ls -1d "$CHECKPOINT_DIR"/checkpoint-*' in task["run"]
    assert f"every {minutes} minutes" in files.readme
    assert "sky jobs launch" in files.readme
    assert "zone" not in task["resources"]  # a zone ID is not a SkyPilot zone name
    assert "use1-az4" in files.task_yaml  # ... but the priced zone is said


def test_multi_node_plan() -> None:
    w = workload(hardware=HardwareRequest("H100-SXM-80GB", 16))
    spec, files = _files(w, H100_OD)
    assert spec.nodes == 2
    task = _load(files.task_yaml)
    acc = _load(files.accelerate_yaml)
    assert task["num_nodes"] == 2
    assert acc["num_machines"] == 2
    assert acc["num_processes"] == 16
    if acc["distributed_type"] == "DEEPSPEED":
        assert acc["deepspeed_config"]["deepspeed_multinode_launcher"] == "standard"


@pytest.mark.parametrize(
    ("sharding", "offload", "gpus", "expected"),
    [
        (Sharding.DDP, Offload.NONE, 1, ("NO", None, False, None, "none", "none")),
        (Sharding.DDP, Offload.NONE, 8, ("MULTI_GPU", None, False, None, "none", "none")),
        (Sharding.ZERO1, Offload.NONE, 8, ("DEEPSPEED", None, False, 1, "none", "none")),
        (Sharding.ZERO2, Offload.NONE, 8, ("DEEPSPEED", None, False, 2, "none", "none")),
        (Sharding.ZERO3, Offload.NONE, 8, ("DEEPSPEED", None, False, 3, "none", "none")),
        (Sharding.FSDP, Offload.NONE, 8, ("FSDP", "FULL_SHARD", False, None, "none", "none")),
        (
            Sharding.FSDP_GRAD_OP,
            Offload.NONE,
            8,
            ("FSDP", "SHARD_GRAD_OP", False, None, "none", "none"),
        ),
        (Sharding.HSDP, Offload.NONE, 16, ("FSDP", "HYBRID_SHARD", False, None, "none", "none")),
        (Sharding.ZERO2, Offload.OPTIMIZER, 1, ("DEEPSPEED", None, False, 2, "cpu", "none")),
        (Sharding.FSDP, Offload.OPTIMIZER, 8, ("DEEPSPEED", None, False, 3, "cpu", "none")),
        (Sharding.FSDP, Offload.PARAMS, 8, ("FSDP", "FULL_SHARD", True, None, "none", "none")),
        (Sharding.ZERO3, Offload.PARAMS, 1, ("DEEPSPEED", None, False, 3, "cpu", "cpu")),
    ],
)
def test_strategy_maps_onto_accelerate(
    sharding: Sharding, offload: Offload, gpus: int, expected: tuple[object, ...]
) -> None:
    assert _distributed(sharding, offload, gpus) == expected


@pytest.mark.parametrize(
    "fixed",
    [
        {"sharding": Sharding.DDP, "model": "Llama 3.2 1B"},
        {"sharding": Sharding.ZERO2},
        {"sharding": Sharding.ZERO3, "checkpointing": True},
        {"sharding": Sharding.FSDP, "checkpointing": True},
        {"sharding": Sharding.FSDP, "offload": Offload.OPTIMIZER},
        {"sharding": Sharding.FSDP, "offload": Offload.PARAMS},
    ],
)
def test_accelerate_yaml_uses_only_keys_accelerate_reads(fixed: dict[str, Any]) -> None:
    w = workload(**fixed)
    _, files = _files(w, H100_OD, offer(ram_gib=2048.0, instance_type="p5.48xlarge-ram"))
    acc = check_accelerate(files.accelerate_yaml)
    if acc["distributed_type"] == "FSDP":
        cfg = acc["fsdp_config"]
        assert cfg["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
        assert cfg["fsdp_state_dict_type"] == "SHARDED_STATE_DICT"
        assert isinstance(cfg["fsdp_activation_checkpointing"], bool)
    if acc["distributed_type"] == "DEEPSPEED":
        cfg = acc["deepspeed_config"]
        assert cfg["zero_stage"] in (1, 2, 3)
        assert cfg["offload_optimizer_device"] in ("none", "cpu")
        assert cfg["zero3_init_flag"] is (cfg["zero_stage"] == 3)


@pytest.mark.parametrize(
    ("precision", "gpu", "expected"),
    [
        (Precision.FP32, "H100-SXM-80GB", "no"),  # a bare `no` would read back as False
        (Precision.BF16_MIXED, "V100-SXM-32GB", "fp16"),  # no bf16 on V100
        (Precision.FP8_MIXED, "H100-SXM-80GB", "fp8"),
        (Precision.FP8_MIXED, "A100-SXM-80GB", "bf16"),  # no FP8 on A100
        (Precision.FP16_MIXED, "A100-SXM-80GB", "fp16"),
    ],
)
def test_mixed_precision(precision: Precision, gpu: str, expected: str) -> None:
    w = workload(model="Llama 3.2 1B", precision=precision)
    _, files = _files(w, offer(gpu_id=gpu, instance_type="x"))
    assert _load(files.accelerate_yaml)["mixed_precision"] == expected


def test_feed_text_cannot_break_the_yaml() -> None:
    hostile = offer(
        provider="aws",
        instance_type='p5: "x"\nrun: rm -rf / # ',
        region="us-east-1\n  evil: 1",
        zone="z\nrun: boom",
    )
    spec, files = _files(workload(), hostile)
    task = _load(files.task_yaml)
    assert task["resources"]["instance_type"] == hostile.instance_type
    assert task["resources"]["region"] == hostile.region
    assert "evil" not in task["resources"]
    assert "boom" not in task["run"]
    assert "rm -rf" not in task["run"]
    assert _load(files.accelerate_yaml)["distributed_type"] == spec.distributed_type


def test_provider_skypilot_does_not_know() -> None:
    spec, files = _files(workload(), offer(provider="acme-gpu", fabric=Fabric.NONE))
    task = _load(files.task_yaml)
    assert spec.cloud is None
    assert set(task["resources"]) == {"accelerators", "use_spot", "disk_size"}
    assert "no `acme-gpu` cloud" in files.readme


def test_files_are_a_function_of_the_spec() -> None:
    spec, files = _files(workload(), H100_SPOT)
    again = LaunchSpec(**json.loads(json.dumps(spec.as_dict())))
    assert again == spec
    assert launch_files(again, query="a question") == files


def test_disk_holds_data_and_checkpoints() -> None:
    w = workload(tokens=50e9)
    size = disk_size_gib(w, 50e9)
    assert size % 50 == 0
    assert size >= MIN_DISK_GIB
    assert size >= 50e9 * 8 / 2**30  # the data alone is ~372 GiB
    assert disk_size_gib(workload(model="Llama 3.2 1B"), 1e6) == MIN_DISK_GIB


def test_skypilot_accelerator_names() -> None:
    assert skypilot_accelerator("A100-SXM-80GB") == "A100-80GB"
    assert skypilot_accelerator("A100-SXM-40GB") == "A100"
    assert skypilot_accelerator("H100-SXM-80GB", "a3-megagpu-8g") == "H100-MEGA"
    assert skypilot_accelerator("V100-SXM-32GB") == "V100-32GB"


def test_a_model_split_of_the_bundled_catalog_is_refused_by_name() -> None:
    """A real question whose best plan is TP8 × PP2: the spec names the split and why no
    supported framework runs it; the plain plan has neither."""
    from recommender import parse_workload
    from recommender.feeds import bundled_catalog

    w = parse_workload("llama-3-70b pretrain on 100B tokens tp 8 pp 2")
    option = recommend(w, bundled_catalog(), now=NOW).options[0]
    spec = launch_spec(w, option)
    assert spec.model_split == "TP8 × PP2"
    assert spec.unsupported.startswith("This plan splits the model TP8 × PP2")
    plain_w = workload()
    plain = launch_spec(plain_w, _first(plain_w, offer()))
    assert plain.model_split == ""
    assert plain.unsupported == ""
