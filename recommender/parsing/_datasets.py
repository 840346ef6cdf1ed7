"""Well-known public datasets by name, for "the whole of <dataset>" (issue #35 item 3).

Each entry holds one size as its publisher states it: tokens for pretraining corpora,
examples for instruction, preference and prompt sets, images, or hours of audio. A size
that depends on a version names the version. The parser reads a name only after "the whole
of", "all of", "the entire", "the full" or "on"/"over" (:mod:`recommender.parsing._rules_work`),
so "math reasoning" is not the MATH dataset; an unknown name after "the whole of" is asked
about, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DATASETS", "Dataset", "Unit", "find_dataset"]


class Unit(StrEnum):
    TOKENS = "tokens"  # a pretraining corpus: its token count is the work of one pass
    EXAMPLES = "examples"  # instruction or chat examples (SFT)
    PAIRS = "pairs"  # preference pairs (chosen + rejected)
    PROMPTS = "prompts"  # prompts for sampling (GRPO/PPO) or problems
    IMAGES = "images"
    AUDIO_HOURS = "hours of audio"


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    size: float
    unit: Unit
    names: tuple[str, ...]  # normalised spellings, as the tokenizer folds them
    source: str


DATASETS: tuple[Dataset, ...] = (
    # pretraining corpora (tokens)
    Dataset(
        "FineWeb",
        18.5e12,  # HuggingFaceFW/fineweb card: "more than 18.5T tokens (originally 15T)"
        Unit.TOKENS,
        ("fineweb",),
        "huggingface.co/datasets/HuggingFaceFW/fineweb",
    ),
    Dataset(
        "FineWeb-Edu",
        1.3e12,  # FineWeb blog post: FineWeb-Edu "1.3 trillion (very high quality)" tokens
        Unit.TOKENS,
        ("fineweb-edu", "fineweb edu"),
        "huggingface.co/datasets/HuggingFaceFW/fineweb-edu",
    ),
    Dataset(
        "The Pile",
        300e9,  # Biderman et al. 2023 (Pythia) §2: the Pile is ~300B tokens (GPT-NeoX tokenizer)
        Unit.TOKENS,
        ("the pile", "pile"),
        "Gao et al. 2020, arXiv:2101.00027; token count: Biderman et al. 2023, arXiv:2304.01373",
    ),
    Dataset(
        "RedPajama-1T",
        1.2e12,  # togethercomputer/RedPajama-Data-1T card: 1.2 trillion tokens (LLaMA tokenizer)
        Unit.TOKENS,
        ("redpajama", "redpajama-1t", "redpajama 1t", "red pajama", "redpajama-data-1t"),
        "huggingface.co/datasets/togethercomputer/RedPajama-Data-1T",
    ),
    Dataset(
        "SlimPajama-627B",
        627e9,  # cerebras/SlimPajama-627B card: 627B tokens
        Unit.TOKENS,
        ("slimpajama", "slimpajama-627b", "slim pajama"),
        "huggingface.co/datasets/cerebras/SlimPajama-627B",
    ),
    Dataset(
        "C4 (en)",
        175e9,  # RedPajama-Data-1T card's table: C4, 175B tokens (LLaMA tokenizer)
        Unit.TOKENS,
        ("c4", "c4-en", "c4 en"),
        "Raffel et al. 2020; tokens: huggingface.co/datasets/togethercomputer/RedPajama-Data-1T",
    ),
    # instruction and chat sets (examples)
    Dataset(
        "Alpaca",
        52_002,  # tatsu-lab/alpaca card: 52,002 instruction-following examples
        Unit.EXAMPLES,
        ("alpaca", "tatsu-lab/alpaca"),
        "huggingface.co/datasets/tatsu-lab/alpaca",
    ),
    Dataset(
        "UltraChat 200k",
        207_865,  # HuggingFaceH4/ultrachat_200k: train_sft split, 207,865 rows ("208k")
        Unit.EXAMPLES,
        ("ultrachat", "ultrachat 200k", "ultrachat-200k", "ultrachat200k"),
        "huggingface.co/datasets/HuggingFaceH4/ultrachat_200k (train_sft)",
    ),
    Dataset(
        "OpenHermes 2.5",
        1_001_551,  # teknium/OpenHermes-2.5 card: ~1M samples (1,001,551 rows)
        Unit.EXAMPLES,
        ("openhermes", "openhermes 2.5", "openhermes-2.5", "open hermes", "open hermes 2.5"),
        "huggingface.co/datasets/teknium/OpenHermes-2.5",
    ),
    # preference sets (pairs)
    Dataset(
        "UltraFeedback (binarized)",
        61_135,  # HuggingFaceH4/ultrafeedback_binarized: train_prefs, 61,135 pairs ("61.1k")
        Unit.PAIRS,
        (
            "ultrafeedback",
            "ultrafeedback binarized",
            "ultrafeedback-binarized",
            "ultrafeedback binarized set",
        ),
        "huggingface.co/datasets/HuggingFaceH4/ultrafeedback_binarized (train_prefs)",
    ),
    # prompt and problem sets (prompts)
    Dataset(
        "GSM8K",
        7_473,  # Cobbe et al. 2021 §2: 7,473 training problems (1,319 test)
        Unit.PROMPTS,
        ("gsm8k", "gsm-8k", "openai/gsm8k"),
        "Cobbe et al. 2021, arXiv:2110.14168",
    ),
    Dataset(
        "MATH",
        7_500,  # Hendrycks et al. 2021 §3: 7,500 training problems (5,000 test)
        Unit.PROMPTS,
        ("math",),
        "Hendrycks et al. 2021, arXiv:2103.03874",
    ),
    # images
    Dataset(
        "ImageNet-1k",
        1_281_167,  # Russakovsky et al. 2015, Table 2: 1,281,167 training images (ILSVRC 2012)
        Unit.IMAGES,
        ("imagenet", "imagenet-1k", "imagenet 1k", "ilsvrc", "ilsvrc-2012"),
        "Russakovsky et al. 2015, arXiv:1409.0575",
    ),
    Dataset(
        "ImageNet-21k",
        14_197_122,  # image-net.org: 14,197,122 images in the full (fall 2011) release
        Unit.IMAGES,
        ("imagenet-21k", "imagenet 21k", "imagenet-22k", "imagenet 22k"),
        "image-net.org (fall 2011 release)",
    ),
    Dataset(
        "LAION-400M",
        400e6,  # Schuhmann et al. 2021: 400M CLIP-filtered image-text pairs
        Unit.IMAGES,
        ("laion-400m", "laion 400m", "laion400m"),
        "Schuhmann et al. 2021, arXiv:2111.02114",
    ),
    Dataset(
        "LAION-2B-en",
        2.32e9,  # Schuhmann et al. 2022 (LAION-5B) §3: 2.32B English image-text pairs
        Unit.IMAGES,
        ("laion-2b", "laion 2b", "laion-2b-en", "laion2b", "laion2b-en"),
        "Schuhmann et al. 2022, arXiv:2210.08402",
    ),
    Dataset(
        "LAION-5B",
        5.85e9,  # Schuhmann et al. 2022: 5.85B CLIP-filtered image-text pairs
        Unit.IMAGES,
        ("laion-5b", "laion 5b", "laion5b", "laion"),
        "Schuhmann et al. 2022, arXiv:2210.08402",
    ),
    # audio
    Dataset(
        "LibriSpeech",
        960.0,  # Panayotov et al. 2015, Table 1: 960 hours of training speech
        Unit.AUDIO_HOURS,
        ("librispeech", "librispeech 960h", "librispeech-960h", "librispeech 960"),
        "Panayotov et al. 2015 (ICASSP), openslr.org/12",
    ),
    Dataset(
        "Common Voice 17.0",
        20_408.0,  # mozilla-foundation/common_voice_17_0 card: 20,408 validated hours
        Unit.AUDIO_HOURS,
        ("common voice", "common-voice", "commonvoice", "common voice 17", "common voice 17.0"),
        "huggingface.co/datasets/mozilla-foundation/common_voice_17_0",
    ),
)

_BY_NAME: dict[str, Dataset] = {name: d for d in DATASETS for name in d.names}
#: Longest name, in words: how far the parser looks ahead.
LONGEST = max(len(name.split(" ")) for name in _BY_NAME)


def find_dataset(words: tuple[str, ...]) -> tuple[Dataset, int] | None:
    """The dataset the normalised ``words`` start with, and how many words name it."""
    for span in range(min(LONGEST, len(words)), 0, -1):
        found = _BY_NAME.get(" ".join(words[:span]))
        if found is not None:
            return found, span
    return None
