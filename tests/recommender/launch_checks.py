"""The launch files through the tools that read them.

* accelerate.yaml: Accelerate 1.15.0 itself (the ``launch-test`` extra): its config loader
  (``load_config_from_file``), ``accelerate launch``'s argument parser and checks
  (``_validate_launch_command``, which copies each nested key onto the launch argument of that
  name) and the environment it hands the training processes (``prepare_multi_gpu_env``,
  ``prepare_deepspeed_cmd_env``, ``prepare_simple_launcher_cmd_env``). Building the FSDP plugin
  from that environment needs a GPU, so the environment is what the tests read. Beside it, the
  checks no loader makes: a nested key that names no launch argument would be ignored
  silently, and a parallelism config's sizes must multiply to the processes
  (``ParallelismConfig.__post_init__``; building one needs transformers).
* torchtitan.toml: torchtitan 0.2.2 itself: ``ConfigManager.parse_args`` (refuses a field its
  ``JobConfig`` lacks, and tyro checks the types), ``ParallelDims`` (the degrees against the
  world size), its model registry (the flavor exists), the pipeline split and schedule
  (``pipeline_parallel.py``) and the trainer's batch arithmetic (``train.py``).
* task.yaml: SkyPilot's own parser (``sky.Task.from_yaml_config``), with a HOME that holds the
  test AWS catalog (SkyPilot checks instance types against it; offline it reads
  ``~/.sky/catalogs``).

Without the extra the real tools are absent: the checks fall back to the keys Accelerate
1.15.0 and torchtitan 0.2.2 read, taken from their source (``data/*_schema.json`` name the
files), and the tools' own checks skip, unless ``GPUFIT_REQUIRE_LAUNCH_TOOLS=1`` (set by
.ci/run), where a missing tool fails the test.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import tomllib
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = json.loads((DATA / "accelerate_1.15.0_config_schema.json").read_text())
TOP_LEVEL = frozenset(SCHEMA["top_level"])
LAUNCH_ARGUMENTS = frozenset(SCHEMA["launch_arguments"])
DISTRIBUTED_TYPES = frozenset(SCHEMA["distributed_types"])
TITAN_SCHEMA = json.loads((DATA / "torchtitan_0.2.2_job_config_schema.json").read_text())
SKYPILOT_AWS = Path(__file__).resolve().parents[1] / "feeds/data/skypilot_aws.csv"
NESTED = ("fsdp_config", "deepspeed_config", "parallelism_config", "megatron_lm_config")


def tool(module: str) -> ModuleType:
    """Import a reading tool; skip without it, unless .ci/run requires it. Its import-time
    deprecation warnings are ignored, as ``pytest.importorskip`` ignores them."""
    if os.environ.get("GPUFIT_REQUIRE_LAUNCH_TOOLS") == "1":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(module)
    return pytest.importorskip(module)


def load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def _nested_arg(section: str, key: str) -> str:
    """The ``accelerate launch`` argument a nested key is copied onto (launch.py)."""
    return key if section != "fsdp_config" or key.startswith("fsdp") else f"fsdp_{key}"


def check_accelerate(text: str) -> dict[str, Any]:
    """accelerate.yaml against the keys Accelerate 1.15.0 reads; returns the document."""
    doc = load(text)
    assert set(doc) <= TOP_LEVEL, set(doc) - TOP_LEVEL
    assert doc["distributed_type"] in DISTRIBUTED_TYPES
    for section in NESTED:
        for key in doc.get(section) or {}:
            arg = _nested_arg(section, key)
            assert arg in LAUNCH_ARGUMENTS, f"{section}.{key} is no `accelerate launch` argument"
    par = doc.get("parallelism_config")
    if par:
        assert doc["distributed_type"] == "FSDP"
        assert doc["fsdp_config"]["fsdp_version"] == 2
        sizes = [par[f"parallelism_config_{k}_size"] for k in ("dp_replicate", "dp_shard", "tp")]
        sizes.append(par["parallelism_config_cp_size"])
        assert math.prod(sizes) == doc["num_processes"]
        # ParallelismConfig.__post_init__ refuses TP/CP beside pure replication
        replicate, shard, tp, cp = sizes
        assert not ((tp > 1 or cp > 1) and replicate > 1 and shard == 1)
    return doc


def accelerate_launch_env(text: str, directory: Path) -> dict[str, str]:
    """What ``accelerate launch --config_file accelerate.yaml`` (as task.yaml runs it, on the
    first node) hands the training processes, computed by Accelerate itself."""
    tool("accelerate")
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import (
        prepare_deepspeed_cmd_env,
        prepare_multi_gpu_env,
        prepare_simple_launcher_cmd_env,
    )

    path = directory / "accelerate.yaml"
    path.write_text(text)
    load_config_from_file(str(path))  # the loader refuses a key ClusterConfig lacks
    doc = check_accelerate(text)
    parser = launch_command_parser()
    arguments = set(vars(parser.parse_args(["train.py"])))
    for section in NESTED:  # a key naming no argument would be set and then ignored
        for key in doc.get(section) or {}:
            assert _nested_arg(section, key) in arguments, f"{section}.{key}"
    args = parser.parse_args(
        [
            *("--config_file", str(path), "--num_machines", str(doc["num_machines"])),
            *("--num_processes", str(doc["num_processes"]), "--machine_rank", "0"),
            *("--main_process_ip", "127.0.0.1", "--main_process_port", "29500"),
            "train.py",
        ]
    )
    args, defaults, mixed_from_config = _validate_launch_command(args)
    if args.use_deepspeed:  # as accelerate's launch_command does before its launcher
        fields = [*defaults.deepspeed_config, *(["mixed_precision"] if mixed_from_config else [])]
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _, env = prepare_deepspeed_cmd_env(args)
    elif args.use_fsdp or args.multi_gpu:
        env = prepare_multi_gpu_env(args)
    else:
        _, env = prepare_simple_launcher_cmd_env(args)
    return dict(env)


def _check_titan_schema(doc: dict[str, Any], schema: dict[str, Any], where: str = "") -> None:
    """Every section and field a ``JobConfig`` of torchtitan 0.2.2 has, values of its types."""
    kinds = {"bool": bool, "int": int, "str": str, "float | int": (int, float)}
    for key, value in doc.items():
        assert key in schema, f"torchtitan 0.2.2 has no field {where}{key}"
        field = schema[key]
        if "section" in field:
            assert isinstance(value, dict)
            _check_titan_schema(value, field["section"], f"{where}{key}.")
        elif "choices" in field:
            assert value in field["choices"], f"{where}{key} = {value!r}"
        else:
            kind = field["type"].removesuffix(" | None")
            if kind in kinds:
                assert isinstance(value, kinds[kind]), f"{where}{key}: {kind}"
                assert kind != "int" or not isinstance(value, bool)


def check_torchtitan(text: str, directory: Path, *, world_size: int) -> dict[str, Any]:
    """torchtitan.toml as torchtitan 0.2.2 reads it, for ``world_size`` GPUs; returns the
    document. torchtitan itself checks what it can without GPUs."""
    doc = tomllib.loads(text)
    _check_titan_schema(doc, TITAN_SCHEMA["fields"])
    tool("torchtitan")
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle, get_schedule_class
    from torchtitan.config import ConfigManager
    from torchtitan.distributed.parallel_dims import ParallelDims
    from torchtitan.distributed.pipeline_parallel import generate_llm_fqn_per_model_part
    from torchtitan.protocols.train_spec import get_train_spec

    path = directory / "torchtitan.toml"
    path.write_text(text)
    (directory / "hf_assets").mkdir(exist_ok=True)  # what the set-up downloads
    config = ConfigManager().parse_args(["--job.config_file", str(path)])
    par, training = config.parallelism, config.training
    dims = ParallelDims(
        dp_replicate=par.data_parallel_replicate_degree,
        dp_shard=par.data_parallel_shard_degree,
        cp=par.context_parallel_degree,
        tp=par.tensor_parallel_degree,
        pp=par.pipeline_parallel_degree,
        ep=par.expert_parallel_degree,
        etp=par.expert_tensor_parallel_degree,
        world_size=world_size,
    )
    args = get_train_spec(config.model.name).model_args[config.model.flavor]
    if dims.ep > 1:  # the experts split over ep ranks inside dp_shard × cp (etp = tp)
        assert args.moe_args.num_experts % dims.ep == 0
        assert (dims.dp_shard * dims.cp) % dims.ep == 0
    # train.py: the global batch in whole local batches of every data-parallel rank
    dp = dims.dp_replicate * dims.dp_shard
    assert training.global_batch_size % (training.local_batch_size * dp) == 0
    if dims.pp > 1:  # pipeline_parallel.py: the split and the micro-batches
        schedule = get_schedule_class(par.pipeline_parallel_schedule)
        per = par.pipeline_parallel_layers_per_stage
        stages = math.ceil(
            (
                args.n_layers
                + par.pipeline_parallel_first_stage_less_layers
                + par.pipeline_parallel_last_stage_less_layers
            )
            / per
        )
        assert stages % dims.pp == 0
        single = issubclass(schedule, PipelineScheduleSingle)
        assert (stages // dims.pp == 1) if single else (stages // dims.pp >= 2)
        parts = generate_llm_fqn_per_model_part(
            stages,
            args.n_layers,
            par.pipeline_parallel_first_stage_less_layers,
            par.pipeline_parallel_last_stage_less_layers,
        )
        assert sum(len([m for m in p if m.startswith("layers.")]) for p in parts) == args.n_layers
        assert training.local_batch_size % par.pipeline_parallel_microbatch_size == 0
        # torch's schedules: 1F1B needs a micro-batch per stage; the interleaved one runs
        # rounds of pp micro-batches (Schedule1F1B, ScheduleInterleaved1F1B __init__)
        micro = training.local_batch_size // par.pipeline_parallel_microbatch_size
        if single:
            assert micro >= stages
        else:
            assert micro % max(1, micro // dims.pp) == 0
    return doc


def skypilot_task(text: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """task.yaml through SkyPilot's parser."""
    catalog_dir = home / ".sky/catalogs/v8/aws"
    catalog_dir.mkdir(parents=True, exist_ok=True)
    (catalog_dir / "vms.csv").write_text(SKYPILOT_AWS.read_text())
    monkeypatch.setenv("HOME", str(home))
    sky = tool("sky")
    return sky.Task.from_yaml_config(load(text))  # it pops keys: parse a fresh copy
