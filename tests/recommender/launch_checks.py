"""Validators for the launch files, each standing in for the tool that reads the file.

* accelerate.yaml: the keys and values Accelerate 1.15.0 reads, from its own source (copied
  into ``data/accelerate_1.15.0_config_schema.json``, whose ``source`` names the files):
  ``load_config_from_file`` refuses a top-level key that is not a ``ClusterConfig`` field,
  and ``accelerate launch`` copies each nested key onto the launch argument of that name
  (``fsdp_config`` keys prefixed ``fsdp_``), so a nested key that names no argument would be
  silently ignored; a parallelism config needs FSDP2 (``_validate_launch_command``), its
  sizes must multiply to the processes, and TP/CP cannot sit beside pure replication
  (``ParallelismConfig.__post_init__``). Installing accelerate itself would pull torch.
* task.yaml: SkyPilot's own parser (``sky.Task.from_yaml_config``) when the ``launch-test``
  extra is installed, with a HOME that holds the test AWS catalog (SkyPilot checks instance
  types against it; offline it reads ``~/.sky/catalogs``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = json.loads((DATA / "accelerate_1.15.0_config_schema.json").read_text())
TOP_LEVEL = frozenset(SCHEMA["top_level"])
LAUNCH_ARGUMENTS = frozenset(SCHEMA["launch_arguments"])
DISTRIBUTED_TYPES = frozenset(SCHEMA["distributed_types"])
SKYPILOT_AWS = Path(__file__).resolve().parents[1] / "feeds/data/skypilot_aws.csv"
NESTED = ("fsdp_config", "deepspeed_config", "parallelism_config", "megatron_lm_config")


def load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def check_accelerate(text: str) -> dict[str, Any]:
    """accelerate.yaml as Accelerate 1.15.0 reads it; returns the parsed document."""
    doc = load(text)
    assert set(doc) <= TOP_LEVEL, set(doc) - TOP_LEVEL
    assert doc["distributed_type"] in DISTRIBUTED_TYPES
    for section in NESTED:
        for key in doc.get(section) or {}:
            arg = key if section != "fsdp_config" or key.startswith("fsdp") else f"fsdp_{key}"
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


def skypilot_task(text: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """task.yaml through SkyPilot's parser (skips without the ``launch-test`` extra)."""
    catalog_dir = home / ".sky/catalogs/v8/aws"
    catalog_dir.mkdir(parents=True, exist_ok=True)
    (catalog_dir / "vms.csv").write_text(SKYPILOT_AWS.read_text())
    monkeypatch.setenv("HOME", str(home))
    sky = pytest.importorskip("sky")
    return sky.Task.from_yaml_config(load(text))  # it pops keys: parse a fresh copy
