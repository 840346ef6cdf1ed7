"""The framework phrases of the workload parser (issue #36): framework names (trainers, and
the RL frameworks and recipes that make rollouts) and the phrases that turn a framework's
default saver off. The handlers record them in the
:class:`~recommender.parsing._draft.Draft`; :mod:`recommender.parsing._draft` applies the named
framework's
defaults (:mod:`recommender.estimation.frameworks`) when the text is finished."""

from __future__ import annotations

import re

from recommender.parsing import _lexicon as lex
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import _Rule, _rx, _set, _sets
from recommender.workload import Framework, LossKernel

__all__ = ["FRAMEWORK_RULES", "FRAMEWORK_WORDS", "HF_RECIPES", "RL_FRAMEWORKS", "RL_FRAMEWORK_RULE"]


#: Framework words → :class:`~recommender.workload.Framework` values. DeepSpeed is also read
#: from "deepspeed zero 3" (the ZeRO rule); a trainer that drives DeepSpeed (TRL, Axolotl)
#: takes precedence over it, as its config fills DeepSpeed's "auto" values.
FRAMEWORK_WORDS: dict[str, str] = {
    "torchtune": "torchtune",
    "torch tune": "torchtune",
    "trl": "hf",
    "hf trainer": "hf",
    "huggingface trainer": "hf",
    "hugging face trainer": "hf",
    "transformers trainer": "hf",
    "sfttrainer": "hf",
    "sft trainer": "hf",
    "dpotrainer": "hf",
    "grpotrainer": "hf",
    "axolotl": "axolotl",
    "unsloth": "unsloth",
    "litgpt": "litgpt",
    "lit gpt": "litgpt",
    "deepspeed": "deepspeed",
    "deep speed": "deepspeed",
    "megatron": "megatron",
    "megatron lm": "megatron",
    "megatron core": "megatron",
    "nemo": "megatron",
    "torchtitan": "torchtitan",
    "torch titan": "torchtitan",
    "llm foundry": "llm-foundry",
    "llmfoundry": "llm-foundry",
}
_FW_ALT = "|".join(
    re.escape(w).replace(r"\ ", "[- ]") for w in sorted(FRAMEWORK_WORDS, key=len, reverse=True)
)
FRAMEWORK = rf"(?:(?:with|using|via|in|on) )?(?P<fw>{_FW_ALT})(?:[- ](?:recipes?|defaults?))?"
#: Turning a framework's default saver off: "plain loss", "no compile", "no offload of
#: activations", "no optimizer in backward".
PLAIN_LOSS = rf"(?:plain|standard|unchunked|no[- ]chunked)[- ]{lex._CE}"
NO_COMPILE = r"(?:no|without)[- ](?:torch[.-]?)?compiled?"
NO_ACTIVATION_OFFLOAD = r"(?:no|without)[- ]activations?[- ]offload(?:ing)?"
NO_OPTIMIZER_IN_BACKWARD = r"(?:no|without)[- ]optimi[sz]er[- ](?:step[- ])?in[- ](?:backward|bwd)"
#: DPO/KTO with the reference log-probs computed before training (TRL
#: ``precompute_ref_log_probs``): no reference model in memory.
PRECOMPUTED_REFERENCE = lex._either(
    r"precompute[sd]?[- ](?:the[- ])?ref(?:erence)?[- ]?(?:model[- ])?"
    r"(?:log[- ]?probs?|logps|log[- ]probabilit(?:y|ies)|outputs)",
    r"precomputed[- ]ref(?:erence)?(?:[- ]model)?",
)


def _framework(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """A framework name. DeepSpeed under a trainer that drives it (TRL, Axolotl) leaves the
    trainer as the framework: its config fills DeepSpeed's "auto" values."""
    named = Framework(FRAMEWORK_WORDS[m["fw"].replace("-", " ")])
    if st.framework in (None, named, Framework.DEEPSPEED):
        st.framework = named if named is not Framework.DEEPSPEED else st.framework or named
        return True
    return named is Framework.DEEPSPEED


#: RL and post-training frameworks → :attr:`Workload.rl_framework` (how rollouts are made);
#: the trainer frameworks (TRL, torchtune, Axolotl, Unsloth, …) are read by
#: :mod:`recommender.parsing._rules_framework` into :attr:`Workload.framework`.
RL_FRAMEWORKS: dict[str, str] = {
    "openrlhf": "openrlhf",
    "verl": "verl",
    "deepspeed chat": "deepspeed-chat",
    "deepspeed-chat": "deepspeed-chat",
    "ds chat": "deepspeed-chat",
    "ds-chat": "deepspeed-chat",
    "dschat": "deepspeed-chat",
    "open r1": "open-r1",
    "open-r1": "open-r1",
    "openr1": "open-r1",
}
#: Recipes built on TRL and the HF Trainer: their trainer is :attr:`Framework.HF`.
HF_RECIPES = (
    "alignment handbook",
    "alignment-handbook",
    "llama factory",
    "llama-factory",
    "llamafactory",
    "open r1",
    "open-r1",
    "openr1",
)
_RL_FRAMEWORK = r"(?P<f>" + "|".join(
    re.escape(k) for k in sorted({*RL_FRAMEWORKS, *HF_RECIPES}, key=len, reverse=True)
)
_RL_FRAMEWORK += r")(?:'s)?"


def _rl_framework(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """An RL framework (how rollouts are made) or a recipe on the HF Trainer."""
    name = m["f"]
    if name in RL_FRAMEWORKS and not _set(st, "rl_framework", RL_FRAMEWORKS[name]):
        return False
    if name in HF_RECIPES and st.framework is None:
        st.framework = Framework.HF
    return True


#: Tried with the post-training phrases (:mod:`recommender.parsing._rules_post`), in their
#: place in :data:`recommender.parsing.parse._RULES`.
RL_FRAMEWORK_RULE = _Rule("rl framework", _rx(_RL_FRAMEWORK, _rl_framework))


#: Tried after the objective rule ("dpo trainer" is the objective) and before the savers'
#: own phrases are tried again, in :data:`recommender.parsing.parse._RULES`.
FRAMEWORK_RULES: tuple[_Rule, ...] = (
    _Rule("framework", _rx(FRAMEWORK, _framework)),
    _Rule("plain loss", _rx(PLAIN_LOSS, _sets("loss", LossKernel.PLAIN))),
    _Rule("no compile", _rx(NO_COMPILE, _sets("compile", False))),
    _Rule("no act offload", _rx(NO_ACTIVATION_OFFLOAD, _sets("activation_offload", False))),
    _Rule("no opt in bwd", _rx(NO_OPTIMIZER_IN_BACKWARD, _sets("optimizer_in_backward", False))),
    _Rule("precomputed ref", _rx(PRECOMPUTED_REFERENCE, _sets("precomputed_reference", True))),
)
