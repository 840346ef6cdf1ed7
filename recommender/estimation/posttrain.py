"""Post-training objectives: the extra models, sequences and generation they hold in memory,
and the extra FLOPs they cost per trained token.

Each objective (:class:`~recommender.workload.Objective`) is a row of :data:`SPECS`:

* DPO and IPO train on pairs (chosen + rejected, concatenated into one forward: TRL
  ``DPOTrainer.concatenated_forward``) against a frozen reference model; KTO trains on
  unpaired completions plus a mismatched "KL" completion per sample (TRL ``KTOTrainer``), also
  against a reference. ORPO and SimPO train on pairs with no reference.
* PPO-style RLHF holds the policy and a value model (both trained), a frozen reference and a
  frozen reward model (InstructGPT; TRL ``PPOTrainer``), and generates its rollouts.
* GRPO holds the policy and a frozen reference, samples a group of completions per prompt
  and keeps their KV cache while generating (DeepSeekMath §4; TRL ``GRPOTrainer``).

With LoRA or QLoRA the reference model is the frozen base with the adapters switched off
(TRL: ``ref_model=None`` with a PEFT model, ``disable_adapter()``), so it costs no memory; the
reward model and PPO's value model are separate networks either way (assumed the policy's
architecture). :mod:`recommender.estimation.memory` adds the models,
:mod:`recommender.estimation.activations` the sequences and the generation,
:mod:`recommender.estimation.steptime` the FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.workload import Objective, Workload

__all__ = [
    "SPECS",
    "ObjectiveSpec",
    "extra_flops_per_param",
    "extra_models",
    "flops_multiplier",
    "generation_bytes",
    "generation_sequences",
]


@dataclass(frozen=True, slots=True)
class ObjectiveSpec:
    """What one objective holds besides the policy being trained."""

    #: Sequences trained together per sample: 2 for pairs, for KTO's KL completion, and for
    #: PPO's value model, which runs forward and backward on the same rollouts.
    sequences: int
    reference: bool  # a frozen reference model (free under LoRA/QLoRA: adapters disabled)
    reward: bool  # a frozen reward model
    value: bool  # a trained value model of the policy's size
    generates: bool  # samples completions on-policy (KV cache while generating)


SPECS: dict[Objective, ObjectiveSpec] = {
    Objective.SFT: ObjectiveSpec(1, reference=False, reward=False, value=False, generates=False),
    Objective.DPO: ObjectiveSpec(2, reference=True, reward=False, value=False, generates=False),
    Objective.IPO: ObjectiveSpec(2, reference=True, reward=False, value=False, generates=False),
    Objective.KTO: ObjectiveSpec(2, reference=True, reward=False, value=False, generates=False),
    Objective.ORPO: ObjectiveSpec(2, reference=False, reward=False, value=False, generates=False),
    Objective.SIMPO: ObjectiveSpec(2, reference=False, reward=False, value=False, generates=False),
    Objective.PPO: ObjectiveSpec(2, reference=True, reward=True, value=True, generates=True),
    Objective.GRPO: ObjectiveSpec(1, reference=True, reward=False, value=False, generates=True),
}

# A forward pass costs 2 FLOPs per parameter and token, forward + backward 6 (Kaplan et al.
# 2020 §2.1); a frozen base with adapters trains at 4 (no weight gradients: Hu et al. 2021).
FORWARD_FLOPS = 2.0
TRAIN_FLOPS = 6.0
ADAPTER_TRAIN_FLOPS = 4.0


def _dense_bytes(workload: Workload) -> float:
    """A frozen model is held in the compute dtype: 16-bit, or fp32 in fp32 training."""
    return workload.precision.compute_bytes


def extra_models(workload: Workload, frozen_base: float) -> tuple[float, float]:
    """(bytes of frozen models beyond the policy, size of a second trained model as a share
    of the policy: PPO's value model, 0 when there is none).

    ``frozen_base`` is the bytes of the policy's own frozen base under LoRA/QLoRA (0 in full
    training): a PEFT value model sits on a base of its own. The reward model is held like the
    policy's base (NF4 under QLoRA), the reference in the compute dtype. The reward and value
    models are the policy's size unless the text gave theirs (DeepSpeed-Chat pairs a 13B
    actor with a 350M reward model that also initialises the critic).
    """
    spec = SPECS[workload.objective]
    peft = not workload.method.trains_all_weights
    ratio = _reward_ratio(workload)
    dense = workload.model.params * _dense_bytes(workload)
    frozen = 0.0
    if spec.reference and not peft and not workload.precomputed_reference:
        frozen += dense  # precomputed reference log-probs (TRL): no reference model held
    if spec.reward:
        frozen += (frozen_base if peft else dense) * ratio
    if spec.value and peft:
        frozen += frozen_base * ratio
    return frozen, ratio if spec.value else 0.0


def generation_sequences(workload: Workload) -> int:
    """Sequences generated at once: GRPO's group per prompt of the micro-batch, PPO's
    rollout micro-batch; 0 when the objective does not generate."""
    spec = SPECS[workload.objective]
    if not spec.generates:
        return 0
    if workload.objective is Objective.GRPO:
        return workload.group_size * workload.micro_batch
    return workload.micro_batch


def generation_bytes(workload: Workload) -> float:
    """The KV cache of the sequences generated at once, at the full sequence length: keys and
    values of every layer, 2·L·kv_heads·head_dim elements per token (vLLM/HF cache layout)."""
    m = workload.model
    per_token = 2 * m.layers * m.kv_heads * m.head_dim * _dense_bytes(workload)
    return per_token * workload.seq_len * generation_sequences(workload)


def _reward_ratio(workload: Workload) -> float:
    """Reward (and PPO critic) size over the policy's: as stated, else the policy's own
    (OpenRLHF and verl examples use a reward model of the policy's size)."""
    if workload.reward_params is None:
        return 1.0
    return workload.reward_params / workload.model.params


def extra_flops_per_param(workload: Workload) -> float:
    """FLOPs per policy parameter and trained token beyond training the policy once:

    * a frozen reference forward (2), unless its log-probs were precomputed (TRL
      ``precompute_ref_log_probs``);
    * KTO: the policy's forward on the mismatched KL completion, under no_grad, and the
      reference's forward on it (2 + 2; TRL ``KTOTrainer.forward`` builds the KL batch);
    * PPO: the reward forward (2 × its size), the critic's forward for values while making
      experience and its training (2 + 6, or 4 with adapters, × its size), and the actor's
      forward for the old log-probs (2) (OpenRLHF ``make_experience``; DeepSpeed-Chat
      ``generate_experience``);
    * GRPO: the old log-probs forward where the framework recomputes them (verl, OpenRLHF;
      TRL skips it at ``num_iterations=1``).

    Generating the rollouts is priced by its decode time (:mod:`recommender.estimation.rollout`),
    not
    here: decoding is bound by memory bandwidth, not FLOPs."""
    spec = SPECS[workload.objective]
    train = TRAIN_FLOPS if workload.method.trains_all_weights else ADAPTER_TRAIN_FLOPS
    ratio = _reward_ratio(workload)
    extra = 0.0
    if spec.reference and not workload.precomputed_reference:
        extra += FORWARD_FLOPS
    if workload.objective is Objective.KTO:
        extra += 2 * FORWARD_FLOPS
    if spec.reward:
        extra += FORWARD_FLOPS * ratio
    if spec.value:
        extra += (FORWARD_FLOPS + train) * ratio
    if workload.objective is Objective.PPO or (
        workload.objective is Objective.GRPO and workload.rl_framework in ("verl", "openrlhf")
    ):
        extra += FORWARD_FLOPS
    return extra


def flops_multiplier(workload: Workload) -> float:
    """Total FLOPs per trained token over the policy's own training FLOPs (1 for SFT)."""
    train = TRAIN_FLOPS if workload.method.trains_all_weights else ADAPTER_TRAIN_FLOPS
    return (train + extra_flops_per_param(workload)) / train
