"""Block Kit limits, checked and enforced in one place.

:func:`check_limits` lists every limit a message breaks (tests and the fake Slack use it to
fail loudly); :func:`fit_message` returns a message that keeps every limit by truncating text
with "…" and dropping what cannot be shortened safely (blocks it must change are copied first;
the caller's blocks are never modified), so production never sends a message Slack would
reject. Every renderer's output goes through :func:`fit_message`.

Numbers: Slack's Block Kit reference and the slack_sdk model constants (slack.md §1.6).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.render.safe import CONTROLS, escape_fallback, strip_controls

__all__ = [
    "Block",
    "Message",
    "check_limits",
    "fit_message",
    "text_size",
    "truncate",
]

Block = dict[str, Any]

MAX_BLOCKS = 50  # Slack: 50 blocks per message (100 only in modals and the Home tab)
SECTION_TEXT_MAX = 3000  # section text 1-3000 chars (section-block reference)
FIELDS_MAX = 10  # section fields: at most 10 items ...
FIELD_TEXT_MAX = 2000  # ... of 2000 chars each (not checked by slack_sdk)
HEADER_TEXT_MAX = 150  # header plain_text (slack_sdk HeaderBlock.text_max_length)
CONTEXT_ELEMENTS_MAX = 10  # context block elements (slack_sdk ContextBlock)
CONTEXT_TEXT_MAX = 3000  # ours: the text-object ceiling used across Block Kit
ACTIONS_ELEMENTS_MAX = 25  # actions block elements (slack_sdk ActionsBlock)
BUTTON_TEXT_MAX = 75  # button text (slack_sdk ButtonElement)
BUTTON_VALUE_MAX = 2000  # button value (slack_sdk ButtonElement)
ID_MAX = 255  # action_id / block_id (slack_sdk InteractiveElement, Block)
#: Combined block text per message: Slack answers msg_blocks_too_long at ~13k chars
#: (slackapi/bolt-js#2509); we keep a margin below it.
TOTAL_TEXT_BUDGET = 12_000
#: The whole serialized ``blocks`` JSON: Slack caps the request too, and many small blocks
#: carry more structure than text. Ours: 15k keeps clear of the ~16k seen to be refused.
PAYLOAD_BUDGET = 15_000
#: The top-level fallback text: Slack truncates above 40k; a notification needs far less.
FALLBACK_TEXT_MAX = 3000  # ours

ELLIPSIS = "…"


def _compact_json(value: object) -> str:
    """``value`` as JSON without spaces, non-ASCII characters as themselves: the size Slack
    counts (a character is one, not a ``\\uXXXX`` escape)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Message:
    """A Slack message: the notification/screen-reader ``text`` and the Block Kit ``blocks``."""

    text: str
    blocks: tuple[Block, ...] = ()
    #: The blocks :func:`fit_message` serialized to measure them, with their compact JSON
    #: (reused by :meth:`response_json`); not part of the message's value. Used only while
    #: ``blocks`` is that very tuple, so a copy with other blocks (``dataclasses.replace``)
    #: serializes its own instead of sending the old blocks' text.
    measured: tuple[tuple[Block, ...], str] | None = field(
        default=None, compare=False, repr=False, kw_only=True
    )

    def response_json(self, response_type: str) -> str:
        """The JSON text of this message as an HTTP response to Slack (``text``,
        ``response_type``, ``blocks`` when there are any): the value Bolt's
        ``ack(response_type=..., **message.kwargs())`` sends, without serializing the blocks a
        second time when :func:`fit_message` did already."""
        head = f'{{"text":{_compact_json(self.text)},'
        head += f'"response_type":{_compact_json(response_type)}'
        if not self.blocks:
            body = head + "}"
        else:
            measured = self.measured
            if measured is not None and measured[0] is self.blocks:
                blocks = measured[1]
            else:
                blocks = _compact_json(self.blocks)
            body = f'{head},"blocks":{blocks}}}'
        if not body.isascii():
            try:
                body.encode()
            except UnicodeEncodeError:  # a lone surrogate (from an escape in a JSON feed)
                doc: dict[str, Any] = {"text": self.text, "response_type": response_type}
                if self.blocks:
                    doc["blocks"] = list(self.blocks)
                return json.dumps(doc)  # escaped, as Bolt would have sent it
        return body

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``respond``/``chat_postMessage``/``ack``.

        The block dicts are shared, not copied: a message may be sent many times (answers are
        cached), so nothing may change a block after :func:`fit_message` built it; Bolt's ack
        and slack_sdk's clients only read them to serialize. A test sends a cached answer
        through each of them and checks its blocks are unchanged.
        """
        return {"text": self.text, "blocks": list(self.blocks)}


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + ELLIPSIS


def _texts(node: Any) -> Iterator[str]:
    """Every ``text`` string inside a block (text objects, fields, elements, buttons)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                yield value
            else:
                yield from _texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _texts(item)


def text_size(blocks: Sequence[Block]) -> int:
    """Combined length of the text in ``blocks`` (what Slack's size limit counts)."""
    return sum(len(t) for b in blocks for t in _texts(b))


def payload_size(blocks: Sequence[Block]) -> int:
    """Length of the serialized ``blocks`` (non-ASCII counted as characters, not escapes)."""
    return len(_compact_json(blocks))


def _too_big(blocks: Sequence[Block]) -> bool:
    return _measured(blocks)[0]


def _measured(blocks: Sequence[Block]) -> tuple[bool, str]:
    """Whether ``blocks`` are over a size budget, and their compact JSON."""
    payload = _compact_json(blocks)
    size = len(payload)
    if size > PAYLOAD_BUDGET:
        return True, payload
    # Every text is written out whole in the serialized blocks (escapes only lengthen it), so
    # the texts cannot add up to more than the payload: count them only when it could matter.
    return size > TOTAL_TEXT_BUDGET and text_size(blocks) > TOTAL_TEXT_BUDGET, payload


def _text_of(obj: Any) -> str:
    if isinstance(obj, dict) and isinstance(obj.get("text"), str):
        return str(obj["text"])
    return ""


def _block_problems(i: int, block: Block) -> list[str]:
    """Every limit block ``i`` breaks, as sentences naming it (empty: all kept)."""
    kind = block.get("type")
    problems = _problems_of(kind, block)
    if problems:  # named only then: most blocks keep every limit
        return [f"block {i} ({kind}): {problem}" for problem in problems]
    return problems


def _problems_of(kind: Any, block: Block) -> list[str]:
    problems: list[str] = []
    block_id = block.get("block_id")
    if isinstance(block_id, str) and len(block_id) > ID_MAX:
        problems.append(f"block_id longer than {ID_MAX}")
    if kind == "section":
        text = block.get("text")
        fields = block.get("fields") or []
        if text is None and not fields:
            problems.append("needs text or fields")
        if text is not None and not 1 <= len(_text_of(text)) <= SECTION_TEXT_MAX:
            problems.append(f"text must be 1-{SECTION_TEXT_MAX} chars")
        if len(fields) > FIELDS_MAX:
            problems.append(f"more than {FIELDS_MAX} fields")
        for field in fields:
            if not 1 <= len(_text_of(field)) <= FIELD_TEXT_MAX:
                problems.append(f"a field must be 1-{FIELD_TEXT_MAX} chars")
        accessory = block.get("accessory")
        if isinstance(accessory, dict):
            problems.extend(_element_problems(accessory))
    elif kind == "header":
        if not 1 <= len(_text_of(block.get("text"))) <= HEADER_TEXT_MAX:
            problems.append(f"text must be 1-{HEADER_TEXT_MAX} chars")
        if (block.get("text") or {}).get("type") != "plain_text":
            problems.append("text must be plain_text")
    elif kind == "context":
        elements = block.get("elements") or []
        if not 1 <= len(elements) <= CONTEXT_ELEMENTS_MAX:
            problems.append(f"needs 1-{CONTEXT_ELEMENTS_MAX} elements")
        for element in elements:
            if not 1 <= len(_text_of(element)) <= CONTEXT_TEXT_MAX:
                problems.append(f"element text must be 1-{CONTEXT_TEXT_MAX} chars")
    elif kind == "actions":
        elements = block.get("elements") or []
        if not 1 <= len(elements) <= ACTIONS_ELEMENTS_MAX:
            problems.append(f"needs 1-{ACTIONS_ELEMENTS_MAX} elements")
        for element in elements:
            problems.extend(_element_problems(element))
    return problems


def _element_problems(element: Block) -> list[str]:
    problems: list[str] = []
    action_id = element.get("action_id")
    if isinstance(action_id, str) and len(action_id) > ID_MAX:
        problems.append(f"action_id longer than {ID_MAX}")
    if element.get("type") == "button":
        if not 1 <= len(_text_of(element.get("text"))) <= BUTTON_TEXT_MAX:
            problems.append(f"button text must be 1-{BUTTON_TEXT_MAX} chars")
        value = element.get("value")
        if isinstance(value, str) and len(value) > BUTTON_VALUE_MAX:
            problems.append(f"button value longer than {BUTTON_VALUE_MAX}")
    return problems


def check_limits(blocks: Sequence[Block], text: str | None) -> list[str]:
    """Every Block Kit limit the message breaks, as readable sentences (empty: all kept)."""
    problems: list[str] = []
    if not text or not text.strip():
        problems.append("message has no top-level text fallback")
    elif len(text) > FALLBACK_TEXT_MAX:
        problems.append(f"fallback text longer than {FALLBACK_TEXT_MAX}")
    if len(blocks) > MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks; at most {MAX_BLOCKS}")
    for i, block in enumerate(blocks):
        problems.extend(_block_problems(i, block))
    size = text_size(blocks)
    if size > TOTAL_TEXT_BUDGET:
        problems.append(f"{size} chars of block text; budget {TOTAL_TEXT_BUDGET}")
    payload = payload_size(blocks)
    if payload > PAYLOAD_BUDGET:
        problems.append(f"{payload} chars of blocks JSON; budget {PAYLOAD_BUDGET}")
    return problems


# ----------------------------------------------------------------- enforcing


def _fit_text_object(obj: Any, limit: int) -> None:
    if isinstance(obj, dict) and isinstance(obj.get("text"), str):
        obj["text"] = truncate(obj["text"], limit) or ELLIPSIS


def _fit_element(element: Block) -> bool:
    """Shorten an interactive element in place; ``False`` when it must be dropped."""
    if isinstance(element.get("action_id"), str):
        element["action_id"] = element["action_id"][:ID_MAX]
    if element.get("type") == "button":
        _fit_text_object(element.get("text"), BUTTON_TEXT_MAX)
        value = element.get("value")
        # A cut value would carry a different query: drop the button rather than corrupt it.
        if isinstance(value, str) and len(value) > BUTTON_VALUE_MAX:
            return False
    return True


def _fit_block(block: Block) -> Block | None:
    """``block`` when it keeps every limit already (the common case: no copy), else a
    shortened copy, or ``None`` when nothing of it can be kept."""
    if not _block_problems(0, block):
        return block
    b = copy.deepcopy(block)
    if isinstance(b.get("block_id"), str):
        b["block_id"] = b["block_id"][:ID_MAX]
    kind = b.get("type")
    if kind == "section":
        if "text" in b:
            _fit_text_object(b["text"], SECTION_TEXT_MAX)
        if b.get("fields"):
            b["fields"] = b["fields"][:FIELDS_MAX]
            for field in b["fields"]:
                _fit_text_object(field, FIELD_TEXT_MAX)
        if isinstance(b.get("accessory"), dict) and not _fit_element(b["accessory"]):
            del b["accessory"]
    elif kind == "header":
        _fit_text_object(b.get("text"), HEADER_TEXT_MAX)
    elif kind == "context":
        b["elements"] = (b.get("elements") or [])[:CONTEXT_ELEMENTS_MAX]
        for element in b["elements"]:
            _fit_text_object(element, CONTEXT_TEXT_MAX)
        if not b["elements"]:
            return None
    elif kind == "actions":
        kept = [e for e in (b.get("elements") or []) if _fit_element(e)]
        b["elements"] = kept[:ACTIONS_ELEMENTS_MAX]
        if not b["elements"]:
            return None
    return b


def _cleaned(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: strip_controls(v) if k == "text" and isinstance(v, str) else _cleaned(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_cleaned(item) for item in node]
    return node


def _clean(block: Block) -> Block:
    """``block`` without bidirectional and zero-width controls in its texts (a copy, made only
    when there is one to strip)."""
    if any(CONTROLS.search(t) for t in _texts(block)):
        cleaned: Block = _cleaned(block)
        return cleaned
    return block


def _omitted(count: int) -> Block:
    return {
        "type": "context",
        "elements": [
            {
                "type": "mrkdwn",
                "text": f"{ELLIPSIS} {count} more part(s) left out to fit Slack's limits",
                "verbatim": True,
            }
        ],
    }


def fit_message(blocks: Sequence[Block], text: str) -> Message:
    """The message, made to keep every Block Kit limit (the given blocks are not modified).

    Bidirectional and zero-width controls are stripped from every text and the fallback, and
    ``<``/``>`` in the fallback are escaped (it is read as mrkdwn; see :mod:`bot.render.safe`).
    Texts are cut with "…"; buttons whose value is too long are dropped; when there are too
    many blocks or too much text, blocks are left out from the end of the body (the last
    block, normally the buttons, is kept) and a short "… left out" note takes their place.
    """
    blocks = [_clean(b) for b in blocks]
    fitted = [f for f in (_fit_block(b) for b in blocks) if f is not None]
    too_big, blocks_json = (True, None) if len(fitted) > MAX_BLOCKS else _measured(fitted)
    if too_big:
        tail = fitted[-1:]
        body = fitted[:-1]
        dropped = 0
        while body and (
            len(body) + len(tail) + 1 > MAX_BLOCKS
            or _too_big([*body, *tail, _omitted(dropped + 1)])
        ):
            body.pop()
            dropped += 1
        fitted = [*body, _omitted(dropped), *tail] if dropped else [*body, *tail]
        if _too_big(fitted):  # a single enormous last block
            fitted = [_omitted(len(blocks))]
        blocks_json = None
    fallback = truncate(escape_fallback(text).strip(), FALLBACK_TEXT_MAX) or "gpufit"
    final = tuple(fitted)
    measured = None if blocks_json is None else (final, blocks_json)
    return Message(text=fallback, blocks=final, measured=measured)
