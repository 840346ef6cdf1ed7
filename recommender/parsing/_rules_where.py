"""Parser rules for where the job runs: the GPUs and their count (``on 8x H100``,
``2 gpus``, ``an H100``), the providers (``aws only``, ``no aws``, ``exclude vast and
runpod``) and the regions.

Conventions:

* ``regions`` holds lower-case prefixes of provider region ids (see ``_lexicon.REGIONS``):
  ``europe`` → ``("eu", "europe", "northeurope", "westeurope")`` so AWS ``eu-west-1``, GCP
  ``europe-west4`` and Azure ``westeurope`` all match. A lower-case ``us`` is only a region
  after ``in``/``region`` (otherwise it is the pronoun); ``US`` always is.
* ``providers`` holds canonical provider ids; ``no aws``/``except aws`` keeps every other one,
  and a negation covers the list it starts (``no aws or gcp``).
"""

from __future__ import annotations

import re

from recommender.gpus import normalize, try_normalize
from recommender.parsing import _lexicon as lex
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import _number, _ok, _whole
from recommender.parsing._scan import Tokens
from recommender.workload import MAX_GPU_COUNT

__all__ = ["hardware", "provider", "region"]


_PROVIDER_NAME = re.compile(lex.PROVIDER_NAME)


def provider(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    for name in _PROVIDER_NAME.finditer(m["p"]):
        ids = lex.PROVIDERS[name.group(0).replace("-", " ")]
        (st.excluded if m["neg"] else st.providers).update(ids)
    return True


def region(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    word = m["r"].replace("-", " ")
    if word == "us" and m["pre"] is None and raw[0] != "US":
        return False  # "can you help us": the pronoun, not the region
    prefixes = lex.REGIONS.get(word, (m["r"],))
    st.regions.extend(p for p in prefixes if p not in st.regions)
    return True


_COUNT_X = re.compile(r"(-?[0-9]+)x(.*)", re.IGNORECASE)  # "8x", "8xa100"
_INT = re.compile(r"-?[0-9]+")
_KILO = re.compile(r"([0-9]+(?:\.[0-9]+)?)k")
_LETTER_DIGIT = re.compile(r"(?=.*[a-z])(?=.*[0-9])")
_MEMORY = re.compile(r"[0-9]+gb")
_SIZE_LIKE = re.compile(r"[0-9.]+[kmbt]")


def _find_gpu(words: list[str]) -> tuple[str, int] | None:
    for span in range(min(3, len(words)), 0, -1):
        if not all(w.isascii() for w in words[1:span]):
            continue  # GPU keys drop non-ASCII: "H100 周五" is not one name
        name = " ".join(words[:span])
        gpu = try_normalize(name) or (try_normalize(name[:-1]) if name.endswith("s") else None)
        if gpu is not None:
            return gpu, span
    return None


def hardware(toks: Tokens, i: int, st: Draft) -> int:
    """``on 8x H100``, ``8xA100 80GB``, ``8 x h100``, ``2 gpus``, ``single gpu``, ``an H100``."""
    norm, n, j = toks.norm, len(toks.norm), i
    prefixed = norm[j] in ("on", "using", "with", "across") and j + 1 < n
    j += 1 if prefixed else 0
    count: float | None = None
    if norm[j] in ("a", "an") and j + 1 < n:
        count, j = 1, j + 1
    explicit, rest, word = False, "", norm[j]
    if m := _COUNT_X.fullmatch(word):
        count, explicit, rest, j = _number(m[1], toks.raw[i : j + 1]), True, m[2], j + 1
    elif _INT.fullmatch(word) or word in lex.GPU_COUNT_WORDS:
        count = lex.GPU_COUNT_WORDS.get(word) or _number(word, toks.raw[i : j + 1])
        j += 1
        if j < n and norm[j] == "x":
            explicit, j = True, j + 1
    elif (kilo := _KILO.fullmatch(word)) and j + 1 < n and _find_gpu(list(norm[j + 1 : j + 4])):
        count = _number(kilo[1], toks.raw[i : j + 1]) * 1000  # "16k H100s": a count, k 1,000
        j += 1
        if j < n and norm[j] == "x":
            explicit, j = True, j + 1
    memory = ""  # "a single 80GB card": the memory a card has, said with the count
    if (
        count is not None
        and j + 1 < n
        and _MEMORY.fullmatch(norm[j])
        and norm[j + 1] in lex.GPU_WORDS
    ):
        memory, j = toks.raw[j], j + 1
    words = ([rest] if rest else []) + list(norm[j : j + 3])
    if not words:
        return 0
    gpu_id: str | None = None
    if words[0] in lex.GPU_WORDS:
        if count is None:
            return 0
        used = 1
    elif found := _find_gpu(words):
        gpu_id, used = found
        if count is None and not (prefixed or used > 1 or _LETTER_DIGIT.match(words[0])):
            return 0
    else:
        first = words[0]
        if (explicit or (count is not None and first in lex.ACCELERATOR_WORDS)) and (
            first in lex.ACCELERATOR_WORDS
            or (_LETTER_DIGIT.match(first) and not _SIZE_LIKE.fullmatch(first))
        ):
            if rest:  # the name is inside the count's token: as typed, or the whole token
                typed = _COUNT_X.fullmatch(toks.raw[j - 1])  # ("0×0A", "²X0A": the token)
                name = typed[2] if typed else toks.raw[j - 1]
            else:
                name = toks.raw[j]
            normalize(name)  # raises UnknownGpuError
        return 0
    end = j + used - (1 if rest else 0)
    if end < n and norm[end] in lex.GPU_WORDS:
        end += 1
    raw = toks.raw[i:end]
    if count is None and gpu_id and i > 0 and toks.norm[i - 1] in ("our", "my"):
        # "our rtx 4090": one card; "our H100s" says no count and is asked about
        count = None if raw[-1].lower().endswith("s") else 1
    whole = None if count is None else _whole(count, 1, MAX_GPU_COUNT, raw, "The GPU count")
    if not (_ok(st.gpu_id, gpu_id or st.gpu_id) and _ok(st.gpu_count, whole or st.gpu_count)):
        return 0
    st.gpu_id, st.gpu_count = gpu_id or st.gpu_id, whole or st.gpu_count
    if memory:
        st.notes.append(
            f"read {' '.join(raw)!r}: {memory} a card is noted; each option's GPUs are the ones "
            "the job fits"
        )
    return end - i
