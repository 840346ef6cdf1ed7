"""What a launch's set-up installs: the packages a plan's method needs, at pins that resolve.

One table, :data:`PINS`, holds every package version a generated ``task.yaml`` installs; each
plan installs the subset its method, objective and engine need (:func:`requirements`):

============  ======================================================================
always        torch, accelerate, transformers, datasets
LoRA          + peft
QLoRA         + peft, bitsandbytes (4-bit NF4 base weights)
DPO, IPO,     + trl (``DPOTrainer``, ``KTOTrainer``, ``ORPOTrainer``, ``CPOTrainer`` for
KTO, ORPO,      SimPO, ``PPOTrainer``, ``GRPOTrainer``)
SimPO, PPO,
GRPO
GRPO with     + vllm (TRL's ``use_vllm=True, vllm_mode="colocate"``: generation on the
vLLM            training GPUs)
DeepSpeed     + deepspeed
============  ======================================================================

The pins work together: each pinned release's published requirements on the others hold
(PyPI metadata as of 2026-12-04; ``tests/recommender/data/launch_pins_requirements.json``
keeps the edges and a test checks them). The binding ones: vllm 0.33.0 requires
``torch==2.14.0`` and ``transformers>=5.16.1,<5.21.0``; trl 1.16.0 requires
``accelerate>=1.10.1``, ``datasets>=4.7.0``, ``transformers>=4.56.2`` and Python ≥ 3.11
(as vllm does), so the set-up makes a Python 3.11 environment. The whole set also resolved
with ``pip install --dry-run`` of all nine pins on Linux x86-64, Python 3.11.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from recommender.workload import Method, Objective

__all__ = ["PINS", "PYTHON", "requirements", "uses_trl"]

#: Python of the set-up's environment: trl 1.16.0 and vllm 0.33.0 require >= 3.11.
PYTHON = "3.11"

#: Package → pinned version (see the module docstring for why these resolve together).
PINS: Mapping[str, str] = MappingProxyType(
    {
        "torch": "2.14.0",  # the torch vllm 0.33.0 requires (==2.14.0)
        "accelerate": "1.15.0",  # latest on PyPI, 2026-09; trl needs >=1.10.1
        "transformers": "5.20.2",  # newest below vllm 0.33.0's <5.21.0
        "datasets": "5.2.0",  # trl 1.16.0 needs >=4.7.0
        "peft": "0.21.2",  # latest on PyPI, 2026-10
        "bitsandbytes": "0.50.2",  # latest on PyPI, 2026-08; torch>=2.4,<3
        "trl": "1.16.0",  # latest on PyPI, 2026-10
        "vllm": "0.33.0",  # latest on PyPI, 2026-11
        "deepspeed": "0.19.8",  # latest on PyPI, 2026-10; torch>=2.0.0
    }
)

_BASE = ("torch", "accelerate", "transformers", "datasets")


def uses_trl(objective: Objective) -> bool:
    """Every objective but plain SFT/pretraining trains with a TRL trainer."""
    return objective is not Objective.SFT


def requirements(
    method: Method, objective: Objective, *, deepspeed: bool, vllm: bool
) -> tuple[str, ...]:
    """``name==version`` for each package the plan's set-up installs, in :data:`PINS` order."""
    wanted = set(_BASE)
    if method in (Method.LORA, Method.QLORA):
        wanted.add("peft")
    if method is Method.QLORA:
        wanted.add("bitsandbytes")
    if uses_trl(objective):
        wanted.add("trl")
    if vllm:
        wanted.add("vllm")
    if deepspeed:
        wanted.add("deepspeed")
    return tuple(f"{name}=={version}" for name, version in PINS.items() if name in wanted)
