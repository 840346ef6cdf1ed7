"""Parser rules for the amount of work, in the units people state it (issue #35 item 3):
hours of audio, images at a resolution, steps at a batch ("1000 steps at batch 64"),
tokens per step, prompts × samples × length, and "the whole of <a well-known dataset>"
(read by :mod:`recommender.parsing._rules_dataset`).

Tokens, samples × length × epochs, preference pairs and prompts × samples are read by
:mod:`recommender.parsing._rules_lang` and :mod:`recommender.parsing._rules_post`.
:func:`settle` turns what these rules read into examples and their length before those
modules' ``settle`` make a token budget of them; each step of the arithmetic is stated in
the answer.

Audio and images need a fact of the model: how many positions a second of audio or an
image becomes (:func:`audio_positions_per_second`, :func:`image_positions`).
"""

from __future__ import annotations

import re

from recommender.architecture import AUDIO_WINDOW_S
from recommender.errors import WorkloadError
from recommender.gpus import try_normalize
from recommender.models import Architecture
from recommender.parsing import _lexicon as lex
from recommender.parsing._draft import Draft
from recommender.parsing._lexicon import NUM, alt
from recommender.parsing._rulekit import _bad, _number, _Rule, _rx, _set, _whole
from recommender.parsing._rules_dataset import named_dataset
from recommender.parsing._words import ADJECTIVES
from recommender.workload import Objective

__all__ = ["RULES", "audio_positions_per_second", "image_positions", "settle"]

# ------------------------------------------------------------------ model facts


def audio_positions_per_second(model: Architecture) -> float | None:
    """Positions a second of audio becomes for ``model`` (its
    :attr:`~recommender.architecture.Architecture.tokens_per_audio_second`, from the model
    table); ``None`` for a model that takes no audio."""
    return model.tokens_per_audio_second or None


_PATCH = re.compile(r"^(?:CLIP )?ViT-[A-Za-z]+/(?P<p>[0-9]+)")


def image_positions(model: Architecture, width: int, height: int) -> int | None:
    """Positions a ``width`` × ``height`` image becomes: for a ViT, one per patch of the
    size its name gives ("ViT-B/16") plus the class token (Dosovitskiy et al. 2021, §3.1);
    ``None`` when the model's name gives no patch size."""
    patch = model.patch_px
    if not patch or model.vision_params:  # a VLM resizes or tiles images its own way
        m = _PATCH.match(model.name)
        if m is None:
            return None
        patch = int(m["p"])
    return (width // patch) * (height // patch) + 1


# ------------------------------------------------------------------ phrases

_AUDIO_NOUN = (
    r"(?:audio|speech|recordings?|voice|calls?|podcasts?|utterances|transcripts?|音频|语音|录音"
    # a speech corpus named as what the hours are of ("100 hours librispeech clean"): the
    # hours stated, not the whole corpus
    r"|(?:librispeech|libri-?light|common[- ]voice|gigaspeech|voxpopuli)(?: (?:clean|other))?)"
)
#: Units an amount of audio is stated in ("1000 hours", "3 days of audio", "90 minutes").
_AUDIO_UNIT = alt(
    "h hr hrs hour hours min mins minute minutes day days week weeks 小时 个小时 分钟 天".split()  # noqa: SIM905
)
#: "1000 hours of audio", "300 hours of transcribed speech", "50 hrs of call-center
#: recordings", "1000h audio", "3 days of audio", "2,000 hours german speech", "500小时 中文语音":
#: an amount of data, not a run length (up to two words before the noun describe it; a
#: preposition there starts another phrase).
AUDIO = (
    rf"(?:(?:on|over|with|of|for) )?{NUM} ?(?P<k>k)? ?(?P<au>{_AUDIO_UNIT})"
    rf"(?: of| 的)?(?: (?!(?:on|with|for|in|at|to|by|and|or) )(?:[a-z-]+|[\u4e00-\u9fff]+)){{0,4}}?"
    rf" {_AUDIO_NOUN}(?: data)?"
)
#: "wav2vec2-large on 1000h", "hubert-large finetune 100h": hours with no noun and no time
#: preposition, for a speech model named before them, are its data ("for 100 hours" is read
#: by the duration rule first; for another model "100h" is a run length).
AUDIO_ON = (
    rf"(?:(?:on|with) )?{NUM} ?(?P<k>k)? ?(?P<au>h|hrs?|hours?)"
    # "12 hours max", "10h wall clock", "6 hours of training": a run length
    r"(?! (?:max|maximum|at most|or less|tops|wall|runtime|long|of training|to train|to run))"
)
_IMAGE_NOUN = (
    r"(?:images?|photos?|pictures?|pics|imgs?|selfies|headshots|shots|renders|frames|charts"
    r"|diagrams|slides)"
)
_COUNTS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9}
_COUNT = alt(_COUNTS)
#: "1.2M images at 224x224", "100k 224x224 images", "500k images at 384px resolution".
IMAGES = (
    rf"(?:(?:on|over|with|of) )?{NUM} ?(?P<u>{_COUNT})?"
    r"(?: (?P<w1>[0-9]{2,5})(?:x(?P<h1>[0-9]{2,5})|[- ]?px))?"
    rf"{ADJECTIVES} {_IMAGE_NOUN}"
    r"(?: (?:at|of|@|in) (?P<w2>[0-9]{2,5})(?:x(?P<h2>[0-9]{2,5})|[- ]?px|[- ]pixels?|(?! tok))"
    r"(?:[- ](?:resolution|res))?"
    # a side the way image models are trained, said bare ("2M images 224")
    r"| (?P<w5>224|256|288|320|336|384|448|512|518|576|640|768|896|1024)(?= |$))?"
)
#: "at 384px", "224x224 resolution", "at 512x512": a resolution alone.
RESOLUTION = (
    r"(?:(?:at|@|resolution|res) )?(?P<w>[0-9]{2,5})(?:x(?P<h>[0-9]{2,5}))?"
    r"(?:[- ]?px|[- ]pixels?)(?:[- ](?:resolution|res))?"
    r"|(?:at|@|resolution|res) (?P<w3>[0-9]{2,5})x(?P<h3>[0-9]{2,5})(?:[- ](?:resolution|res))?"
    r"|(?P<w4>[0-9]{2,5})x(?P<h4>[0-9]{2,5})"  # bare "384x384": see _resolution
)
#: "vit-l/14 at 224": a bare side after "at", for a model that takes images.
RESOLUTION_AT = r"(?:at|@) (?P<w>[0-9]{2,4})(?= |$)"
#: "每条1000 tokens" (each example 1000 tokens), "每个样本 512 tokens".
EACH_CJK = (
    r"每 ?(?:条|个|个样本|样本|条数据|条样本) ?(?P<ln>[0-9]+(?:\.[0-9]+)?) ?(?P<lk>k)?[- ]?"
    r"(?:tok(?:en)?s?|个token)"
)
_STEPS = r"(?:training |optimizer )?(?:steps|iterations|iters|updates)"
#: "1000 steps at batch 64", "200 steps at a global batch of 128 sequences of 2048 tokens",
#: "800 steps per epoch at batch 128" (times the epochs).
STEPS_AT_BATCH = (
    rf"(?P<of>of )?{NUM} ?(?P<k>k|m)? {_STEPS}(?P<pe>(?: (?:per|an|each|a) |/)epoch)?,? "
    r"(?P<at>(?:at|with|of|x) )?(?:an? )?"
    r"(?P<q>global |effective |total )?"
    r"(?:batch|bs|gbs)(?:[- ]size)?(?: of)? (?P<b>[0-9]+)"
    r"(?: (?:sequences|seqs|samples|examples))?"
    # "... of 2048 tokens", "batch 128 x 4096 tokens"
    r"(?: (?:of|x) (?P<ln>[0-9]+) ?(?P<lk>k)?[- ]tok(?:en)?s?(?: (?:sequences|seqs|samples))?)?"
)
#: "2000 steps of 64 x 4096 tokens": steps of a batch of sequences of a length.
STEPS_OF_BATCH_X_LEN = (
    rf"{NUM} ?(?P<k>k)? {_STEPS},? (?:of|at|with) (?P<b>[0-9]+) ?x ?"
    r"(?P<ln>[0-9]+) ?(?P<lk>k)?[- ]?tok(?:en)?s"
)
#: "batch of 128 prompts per step", "a global batch of 512 sequences".
BATCH_OF = (
    r"(?:an? )?(?:global |effective )?batch(?:[- ]size)? of (?P<b>[0-9]+) "
    r"(?:prompts|sequences|seqs|samples|examples)(?: (?:per|each|a) (?:step|update|iteration))?"
)
#: "3万对偏好数据", "5000组偏好": preference pairs counted the Chinese way.
PAIRS_CJK = rf"{NUM} ?(?:对|组)(?: ?(?:偏好数据|偏好|数据))?"
#: "at 1M tokens per step", "4M tokens a batch".
STEP_TOKENS = (
    rf"(?:(?:at|with) )?{NUM} ?(?P<u>{alt(lex.TOKEN_UNITS)})? ?tok(?:en)?s"
    r"(?: (?:per|a|an|each) |/)(?:step|batch|iteration|iter|update)"
)
#: "2k steps × 128 sequences × 2048 tokens" (a "×" between words is dropped as punctuation).
STEPS_X_SEQUENCES = (
    rf"{NUM} ?(?P<k>k)? {_STEPS},?(?: (?:x|of|at))? (?P<b>[0-9]+) "
    r"(?:sequences|seqs|samples|examples)"
    r"(?:(?: (?:x|of|at))? (?P<ln>[0-9]+) ?(?P<lk>k)?[- ]?tok(?:en)?s)?"
)
#: "4k prompts × 8 samples × 1k tokens": prompts, completions sampled for each, and each
#: completion's length (a "×" between words is dropped as punctuation, an "x" is read).
PROMPTS_X_GROUP_X_LEN = (
    rf"{NUM} ?(?P<u>{_COUNT})? prompts,?(?: x)? (?P<g>[0-9]+) "
    r"(?:samples|completions|generations|rollouts|responses)(?: (?:per|/) ?prompt| each)?,?(?: x)? "
    r"(?P<ln>[0-9]+(?:\.[0-9]+)?) ?(?P<lk>k)?[- ]?tok(?:en)?s(?: each)?"
)


def _audio(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    hours = _number(m["n"], raw) * (1000 if m["k"] else 1) * lex.DURATION_HOURS[m["au"]]
    if not 0 < hours <= 1e7:  # ours: 10M hours (1,141 years) is a typo, not a corpus
        raise _bad(raw, "Hours of audio must be positive and at most 10M")
    return _set(st, "audio_hours", hours)


def _audio_on(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    model = st.model
    if model is None or not model.tokens_per_audio_second or st.examples is not None:
        return False  # not a speech model, or its data already stated: a run length
    if not _audio(m, raw, st):
        return False
    st.notes.append(
        f"read {' '.join(raw)!r} as hours of audio for {model.name}; say `for "
        f"{m['n']} hours` for how long to train"
    )
    return True


def _side(w: str | None, h: str | None, raw: tuple[str, ...]) -> tuple[int, int] | None:
    if w is None:
        return None
    # ours: 8 px to 16k px a side, the range a training image is given in
    width = _whole(float(w), 8, 16_384, raw, "An image side")
    height = _whole(float(h), 8, 16_384, raw, "An image side") if h else width
    return width, height


def _images(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    count = _number(m["n"], raw) * _COUNTS.get(m["u"] or "", 1.0)
    if not 1 <= count <= 1e12:  # the dataset bound of recommender.parsing._rules_lang
        raise _bad(raw, "A dataset must have from 1 to 1T images")
    side = _side(m["w1"], m["h1"], raw) or _side(m["w2"], m["h2"], raw) or _side(m["w5"], None, raw)
    if side is not None and not _set(st, "image_px", side):
        return False
    return _set(st, "examples", count)


def _resolution(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    if m["w4"] is not None:
        # bare "384x384" only when images were counted and it names no GPU ("16x4090" is
        # sixteen RTX 4090s): both sides an image's, 64 px or more
        if st.examples is None or try_normalize(m["h4"]) is not None:
            return False
        if min(int(m["w4"]), int(m["h4"])) < 64:
            return False
    side = (
        _side(m["w"], m["h"], raw) or _side(m["w3"], m["h3"], raw) or _side(m["w4"], m["h4"], raw)
    )
    return _set(st, "image_px", side)


def _resolution_at(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    model = st.model
    if model is None or not (model.patch_px or model.vision_params or _PATCH.match(model.name)):
        return False
    return _set(st, "image_px", _side(m["w"], None, raw))


def _each_cjk(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    length = _number(m["ln"], raw) * (1024 if m["lk"] else 1)
    return _set(st, "example_len", _whole(length, 1, 1e7, raw, "An example length"))


def _steps_at_batch(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    scale = {"k": 1e3, "m": 1e6}.get(m["k"] or "", 1.0)  # "1M steps": a count, k is 1,000
    steps = _whole(_number(m["n"], raw) * scale, 1, 1e9, raw, "A step count")
    batch = _whole(_number(m["b"], raw), 1, 1e9, raw, "A global batch")
    if not (_set(st, "steps", steps) and _set(st, "global_batch", batch)):
        return False
    # "800 steps per epoch", and "3 epochs of 1,000 steps" (the epochs read just before)
    said = m.groupdict()
    st.steps_per_epoch = bool(said.get("pe") or (said.get("of") and st.epochs is not None))
    if not m.groupdict().get("at") and not m.groupdict().get("q"):  # "500 steps, batch 32"
        st.notes.append(_global_batch_note(batch))
    if m["ln"] is not None:
        length = _number(m["ln"], raw) * (1024 if m["lk"] else 1)
        return _set(st, "example_len", _whole(length, 1, 1e7, raw, "A sequence length"))
    return True


def _global_batch_note(batch: int) -> str:
    return (
        f"read 'batch {batch}' as the global batch (sequences per optimizer step), as a step "
        "count was given; say `micro-batch 4` for a GPU's share"
    )


def _batch_of(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    return _set(st, "global_batch", _whole(_number(m["b"], raw), 1, 1e9, raw, "A global batch"))


def _pairs_cjk(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    count = _whole(_number(m["n"], raw), 1, 1e12, raw, "A count of pairs")
    return _set(st, "examples", float(count))


def _step_tokens(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    value = _number(m["n"], raw) * lex.TOKEN_UNITS.get(m["u"] or "", 1.0)
    if not 1 <= value <= 1e10:  # ours: 625× Llama 3's 16M-token batch
        raise _bad(raw, "Tokens per step must be from 1 to 10B")
    return _set(st, "step_tokens", value)


def _prompts_x_group(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    prompts = _number(m["n"], raw) * _COUNTS.get(m["u"] or "", 1.0)
    if not 1 <= prompts <= 1e12:
        raise _bad(raw, "A dataset must have from 1 to 1T prompts")
    group = _whole(_number(m["g"], raw), 1, 1024, raw, "A GRPO group size")
    length = _whole(_number(m["ln"], raw) * (1024 if m["lk"] else 1), 1, 1e7, raw, "A length")
    return (
        _set(st, "examples", prompts)
        and _set(st, "group_size", group)
        and _set(st, "completion_len", length)
    )


RULES: tuple[_Rule, ...] = (
    _Rule("the whole of a dataset", named_dataset),
    _Rule("N hours of audio", _rx(AUDIO, _audio)),
    _Rule("speech model on N hours", _rx(AUDIO_ON, _audio_on)),
    _Rule("N images at WxH", _rx(IMAGES, _images)),
    _Rule("at 384px", _rx(RESOLUTION, _resolution)),
    _Rule("an image model at 224", _rx(RESOLUTION_AT, _resolution_at)),
    _Rule("N prompts x G samples x L tokens", _rx(PROMPTS_X_GROUP_X_LEN, _prompts_x_group)),
    _Rule("N steps at batch B", _rx(STEPS_AT_BATCH, _steps_at_batch)),
    _Rule("N steps of B x L tokens", _rx(STEPS_OF_BATCH_X_LEN, _steps_at_batch)),
    _Rule("N steps x B sequences", _rx(STEPS_X_SEQUENCES, _steps_at_batch)),
    _Rule("batch of N prompts", _rx(BATCH_OF, _batch_of)),
    _Rule("3万对偏好数据", _rx(PAIRS_CJK, _pairs_cjk)),
    _Rule("N tokens per step", _rx(STEP_TOKENS, _step_tokens)),
    _Rule("每条 N tokens", _rx(EACH_CJK, _each_cjk)),
)


# ------------------------------------------------------------------ settle


def settle(st: Draft) -> None:
    """Steps, audio and images → examples and their length; runs before
    :func:`recommender.parsing._rules_post.settle` and
    :func:`recommender.parsing._rules_lang.settle`."""
    rollouts = st.objective in (Objective.GRPO, Objective.PPO)
    if st.steps is not None and st.steps_per_epoch and st.epochs is not None:
        st.notes.append(f"{st.steps:,} steps per epoch × {st.epochs:g} epochs")
        st.steps = round(st.steps * st.epochs)
    if st.step_tokens is not None and (st.steps is None or st.tokens is not None):
        st.notes.append(
            f"read {st.step_tokens:,.0f} tokens per step: not used, "
            + ("a token budget was stated" if st.tokens is not None else "say how many steps")
        )
    if st.steps is not None and st.step_tokens is not None and st.tokens is None:
        st.tokens = min(st.steps * st.step_tokens, 1e15)
        st.notes.append(f"{st.steps:,} steps × {st.step_tokens:,.0f} tokens per step")
        st.steps = None  # counted: not again as steps × batch
    if st.steps is not None and st.bare_batch and st.global_batch is None and st.micro_batch:
        st.global_batch, st.micro_batch = st.micro_batch, None
        st.notes.append(_global_batch_note(st.global_batch))
    if st.steps is not None and st.examples is not None and st.step_tokens is None:
        # a dataset size was stated too: it counts the work, so the steps are said unused
        st.notes.append(
            f"{st.steps:,} steps read; the work is counted from the dataset size stated, not "
            "from the steps"
        )
    if st.steps is not None and st.example_len is None and st.seq_len and not rollouts:
        st.example_len = st.seq_len
        st.notes.append(f"each step's sequences are seq {st.seq_len} tokens long")
    if st.audio_hours is not None and st.model is not None:  # no model: finish() asks for one
        _settle_audio(st, st.model, st.audio_hours)
    if st.image_px is not None and st.model is not None:
        width, height = st.image_px
        per = image_positions(st.model, width, height)
        if per is None:
            st.notes.append(
                f"{width}×{height} images: {st.model.name} has no patch size we know, so an "
                "image counts as its default length (say `seq N` to change)"
            )
        elif st.example_len is None:
            st.example_len = per
            st.seq_len = st.seq_len or per
            st.notes.append(f"a {width}×{height} image is {per:,} positions for {st.model.name}")
        else:
            st.notes.append(
                f"{width}×{height} images: not used, an example length was stated "
                f"({st.example_len:,} tokens)"
            )


def _settle_audio(st: Draft, model: Architecture, hours: float) -> None:
    rate = audio_positions_per_second(model)
    if rate is None:
        raise WorkloadError(
            f"{hours:g} hours of audio: {model.name} is not a speech model I know the frame rate "
            "of, so I can't tell how many tokens that is.",
            hint='Try: "whisper-large-v3 on 1000 hours of audio", or say tokens: "on 2B tokens"',
        )
    positions = model.default_seq or round(rate * AUDIO_WINDOW_S)
    window = positions / rate
    examples = hours * 3600 / window
    if not _set(st, "examples", examples):
        st.notes.append(f"{hours:g} h of audio ignored: a dataset size was stated too")
        return
    st.example_len = st.example_len or positions
    st.notes.append(
        f"{hours:,.6g} h of audio = {examples:,.0f} examples of {window:g} s × "
        f"{rate:g} positions/s ({positions:,} each, {model.name})"
    )
