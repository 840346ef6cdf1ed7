"""Slack's markup is decoded in one place: ``bot.listeners.answers.slack_text``."""

from __future__ import annotations

import pytest

from bot.listeners.answers import slack_text


@pytest.mark.parametrize(
    ("raw", "typed"),
    [
        ("<@U0GPUFIT> 13B lora 1 day", "13B lora 1 day"),
        ("<@U0GPUFIT|gpufit> 13B lora", "13B lora"),
        ("13B lora <!channel> <!here> <!subteam^S01|team>", "13B lora"),
        ("ask <#C0123|ml-infra> about 8B", "ask about 8B"),
        ("budget &lt; $3,000 &amp; spot", "budget < $3,000 & spot"),
        ("7B &gt;= 2 days", "7B >= 2 days"),
        ("docs <https://example.org/a?b=1&amp;c=2|the guide> here", "docs the guide here"),
        ("see <https://example.org/x>", "see https://example.org/x"),
        ("<mailto:a@example.org|mail us>", "mail us"),
        ("  13B\n full\tfinetune  ", "13B full finetune"),
        ("", ""),
    ],
)
def test_markup_is_decoded_to_the_words_typed(raw: str, typed: str) -> None:
    """Mentions dropped, links to their label, entities decoded, whitespace collapsed."""
    assert slack_text(raw) == typed


def test_entities_are_decoded_once() -> None:
    """A typed ``&lt;`` arrives as ``&amp;lt;`` and comes out as typed, not as ``<``."""
    assert slack_text("&amp;lt;tag&amp;gt; &amp;amp;") == "&lt;tag&gt; &amp;"


def test_a_typed_angle_bracket_is_not_markup() -> None:
    """``&lt;@U1&gt;`` is text the user typed, not a mention: it survives as ``<@U1>``."""
    assert slack_text("&lt;@U1&gt; 13B") == "<@U1> 13B"
