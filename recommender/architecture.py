"""The shape of a model, enough to count its memory and FLOPs: the language (or vision, or
audio) transformer stack, and for a vision-language model its vision tower and projector.

Which models exist and what they are called is :mod:`recommender.models`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["AUDIO_WINDOW_S", "VLM_TEXT_TOKENS", "Architecture", "Block"]

#: Text tokens one vision-language training example carries beside its image tokens when the
#: question does not say (``seq N`` changes it).
VLM_TEXT_TOKENS = 512  # ours: one question-and-answer turn about an image
#: Seconds of audio one speech example holds: Whisper pads or cuts every example to a 30-s
#: window (Radford et al. 2022, arXiv:2212.04356 §2.2; ``chunk_length`` 30 in its
#: preprocessor_config.json); a speech model with no window of its own counts 30-s examples
#: too (ours: one unit for every speech model).
AUDIO_WINDOW_S = 30.0


class Block(StrEnum):
    """The transformer block family; it decides the activation and FLOP accounting."""

    LLAMA = "llama"  # pre-norm RMSNorm, SwiGLU MLP (3 matrices), RoPE, no dropout
    GPT = "gpt"  # LayerNorm, GeLU MLP with 2 matrices (4h), learned positions, dropout
    T5 = "t5"  # encoder-decoder; counted as a GPT-like stack of its total layers


@dataclass(frozen=True, slots=True)
class Architecture:
    """The shape of a model, enough to count memory and FLOPs.

    ``params`` is the total parameter count (for a vision-language model: language model,
    vision tower and projector; all are held in memory). ``layers`` … ``vocab`` describe the
    stack the training tokens run through (the language model of a vision-language model).
    For mixture-of-experts models ``active_params`` is what one token touches (it sets the
    FLOPs), while every expert must be held in memory.
    """

    name: str
    params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied_embeddings: bool
    block: Block = Block.LLAMA
    experts: int = 1
    experts_per_token: int = 1
    known: bool = True
    aliases: tuple[str, ...] = ()
    #: From ``data/models.csv``: the published active parameters of a mixture of experts
    #: (0: computed), tokens per example for a non-LLM (0: the text default), an
    #: approximation the answer must state, and the config the figures come from.
    active: int = 0
    default_seq: int = 0
    note: str = ""
    source: str = ""
    #: A vision-language model's vision tower and projector (connector, resampler), both
    #: included in ``params``; ``image_tokens`` is what one image adds to the language
    #: model's sequence, ``vision_positions`` how many positions the vision tower runs over
    #: for it (patches × tiles), both at ``image_px`` (the side of the image they are for).
    #: An image model (ViT) has ``image_tokens`` and ``patch_px`` alone.
    vision_params: int = 0
    projector_params: int = 0
    image_tokens: int = 0
    vision_positions: int = 0
    image_px: int = 0
    patch_px: int = 0
    #: An audio encoder's positions per second of audio (Whisper and wav2vec 2.0: 50).
    audio_hz: float = 0.0

    def __post_init__(self) -> None:
        if self.params <= 0 or self.layers <= 0 or self.hidden <= 0:
            raise ValueError(f"architecture {self.name!r} needs positive sizes")
        if self.heads <= 0 or self.kv_heads <= 0 or self.heads % self.kv_heads:
            raise ValueError(f"architecture {self.name!r}: heads must be a multiple of kv_heads")
        if self.vision_params + self.projector_params >= self.params:
            raise ValueError(f"architecture {self.name!r}: the vision parts exceed the total")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def embedding_params(self) -> int:
        """Input embedding plus (when untied) the LM head."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP (of each expert): SwiGLU's gate, up and down projections
        (Shazeer 2020; Llama, Touvron et al. 2023), a GeLU MLP's fc1 and fc2 (GPT-2)."""
        return 3 if self.block is Block.LLAMA else 2

    @property
    def language_params(self) -> int:
        """The stack the tokens run through: all of it but a vision tower and projector."""
        return self.params - self.vision_params - self.projector_params

    @property
    def active_params(self) -> int:
        """Parameters one token passes through, FLOP for FLOP (all of a dense model's).

        A vision-language example of ``default_seq`` tokens runs its language model over
        every token, the projector over the image tokens and the vision tower over the
        image's patches, so per token of the example it costs
        ``language + (vision × positions + projector × image tokens) / default_seq``
        (the vision tower's patches can outnumber the tokens: InternViT-6B over 7 tiles).
        """
        if self.active:
            dense = self.active
        elif self.experts <= 1:
            dense = self.language_params
        else:
            expert = self.mlp_matrices * self.hidden * self.ffn * self.layers
            dense = self.language_params - expert * (self.experts - self.experts_per_token)
        if not self.vision_params or not self.default_seq:
            return dense + self.vision_params + self.projector_params
        vision = self.vision_params * self.vision_positions
        projector = self.projector_params * max(self.image_tokens, 1)
        return dense + round((vision + projector) / self.default_seq)

    @property
    def largest_layer_params(self) -> int:
        """Parameters of the largest wrapped unit (a decoder block, or the embedding)."""
        attn = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        mlp = self.mlp_matrices * self.hidden * self.ffn * self.experts
        return max(attn + mlp, self.vocab * self.hidden)

    @property
    def billions(self) -> float:
        return self.params / 1e9

    @property
    def tokens_per_audio_second(self) -> float:
        """Encoder positions per second of audio (0: not an audio model). Hours of audio
        become training tokens at this rate: Whisper 50 (30-s windows of 3,000 mel frames,
        halved by the conv stem), wav2vec 2.0 / HuBERT 50 (a 320-sample stride at 16 kHz;
        the paper's "49 Hz" is the 49 frames of a one-second clip, which loses 0.75 of a
        frame at its edges: a 15.6-s crop is 781 frames, 49.98 a second)."""
        return self.audio_hz

    def tokens_per_image(self, side_px: int | None = None) -> int:
        """Tokens one image costs this model (0: it takes no images).

        A ViT at ``side_px`` (default: the resolution its figures are for) is one token per
        ``patch_px`` square plus its class token. A vision-language model returns its image
        tokens at ``image_px``: its own resizing or tiling decides, so ``side_px`` is not
        applied to it.
        """
        if not self.image_tokens:
            return 0
        if self.vision_params or not self.patch_px or side_px is None:
            return self.image_tokens
        grid = (self.image_px // self.patch_px) ** 2
        extra = self.image_tokens - grid  # the class token (ViT, CLIP), none for SigLIP
        return (side_px // self.patch_px) ** 2 + extra
