"""The "Launch files" answer: an option's task.yaml and framework config as code blocks.

The file texts come from :func:`recommender.launch_files`; they hold provider, region and
instance names from price feeds, so they go through :func:`escape_mrkdwn` like every other
text, inside a code block (Slack shows ``&lt;`` in a code block as ``<``).
"""

from __future__ import annotations

from bot.render.blocks import _echo, _header, _section, escape_mrkdwn
from bot.render.limits import SECTION_TEXT_MAX, Block, Message, fit_message, truncate
from bot.render.text import layout_text
from recommender import LaunchFiles, Option

__all__ = ["render_launch_files"]


def _code_sections(name: str, text: str) -> list[Block]:
    """``text`` as code blocks under a bold file name, split at line ends to fit sections."""
    room = SECTION_TEXT_MAX - 200  # the name, the fences and the escapes' growth
    chunks: list[str] = []
    chunk = ""
    for line in text.splitlines(keepends=True):
        if chunk and len(escape_mrkdwn(chunk + line)) > room:
            chunks.append(chunk)
            chunk = ""
        chunk += line
    if chunk:
        chunks.append(chunk)
    out = []
    for i, part in enumerate(chunks):
        title = f"*{escape_mrkdwn(name)}*" + (f" (part {i + 1})" if len(chunks) > 1 else "")
        body = truncate(escape_mrkdwn(part.rstrip("\n")), room)
        out.append(_section(f"{title}\n```{body}```"))
    return out


def render_launch_files(option: Option, files: LaunchFiles, *, query: str, command: str) -> Message:
    """An option's ``task.yaml`` and its framework's config (``accelerate.yaml`` or
    ``torchtitan.toml``) as code blocks, with how to use them."""
    o = option.offer
    e = escape_mrkdwn
    kind = o.kind
    blocks: list[Block] = [
        _header(f"Launch files · option {option.rank}"),
        _echo(query),
        _section(
            f"*{e(o.provider)} {e(o.instance_type)}* ({kind}) × {option.nodes} · "
            f"{e(layout_text(option.plan))}\n"
            f"Save these next to your training script, then `{e(command)}`. The README (what "
            "to fill in, resuming, the plan's figures) comes with "
            f'`gpufit launch "…" --option {option.rank}`.'
        ),
    ]
    blocks += _code_sections("task.yaml", files.task_yaml)
    blocks += _code_sections(files.config_name, files.config)
    text = f"gpufit launch files for option {option.rank}: {e(o.provider)} {e(o.instance_type)}"
    return fit_message(blocks, text)
