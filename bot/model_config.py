"""Reading a model's ``config.json`` for the CLI (``--model-config path``, or a path ending
in ``config.json`` in the question): the I/O half of :func:`recommender.
architecture_from_config`, which turns the decoded mapping into an architecture.

Only the command line reads files: a path in a Slack message names a file on the server,
which is not the user's to read.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from recommender import (
    Architecture,
    Workload,
    WorkloadError,
    architecture_from_config,
    parse_workload,
)

__all__ = [
    "add_model_config_argument",
    "parse_question",
    "read_model_config",
    "split_config_path",
]

#: A config.json is a few kilobytes; a larger file is not one (and is not read into memory).
MAX_CONFIG_BYTES = 1_000_000  # ours: the largest Hub config.json files are ~100 kB
_HINT = 'Try: gpufit ask "lora 2 days" --model-config ./my-model/config.json'
_PATH_IN_TEXT = re.compile(r"(?<!\S)(\S*config\.json)(?!\S)", re.IGNORECASE)


def add_model_config_argument(parser: argparse.ArgumentParser) -> None:
    """``--model-config PATH`` on ``gpufit ask``, ``estimate`` and ``launch``."""
    parser.add_argument(
        "--model-config",
        metavar="PATH",
        help="a Hugging Face config.json for a model gpufit does not know "
        "(a path ending in config.json in the text works too)",
    )


def parse_question(
    words: Sequence[str], model_config: str | None, now: datetime
) -> tuple[str, Workload]:
    """The question (without a config.json path) and its workload; the model from
    ``model_config`` or a config.json path in the text when one is given (a WorkloadError,
    exit 2, when both are, or the file cannot be read)."""
    text, path = split_config_path(" ".join(words))
    if path is not None and model_config is not None:
        raise WorkloadError(
            "Give the model's config.json once: --model-config or a path in the text.",
            not_understood=(path,),
            hint=_HINT,
        )
    path = path or model_config
    model = read_model_config(path) if path is not None else None
    return text, parse_workload(text, now=now, model=model)


def split_config_path(text: str) -> tuple[str, str | None]:
    """The question without a ``…config.json`` path in it, and the path (or ``None``)."""
    found = _PATH_IN_TEXT.findall(text)
    if len(found) > 1:
        raise WorkloadError(
            "The question names more than one config.json; give one.",
            not_understood=tuple(found),
            hint=_HINT,
        )
    if not found:
        return text, None
    return " ".join(_PATH_IN_TEXT.sub(" ", text).split()), found[0]


def read_model_config(path: str) -> Architecture:
    """The architecture in the ``config.json`` at ``path``, named after its folder (or its
    ``_name_or_path``).

    Raises:
        WorkloadError: the file is missing, unreadable, too large, not JSON, or not a model
            config gpufit can size.
    """
    file = Path(path).expanduser()
    try:
        size = file.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise WorkloadError(f"{path} is {size:,} bytes; a config.json is a few kB.", hint=_HINT)
        config = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkloadError(f"There is no file at {path}.", hint=_HINT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(
            f"I could not read {path}: {exc.__class__.__name__}.", hint=_HINT
        ) from None
    except json.JSONDecodeError as exc:
        raise WorkloadError(
            f"{path} is not JSON (line {exc.lineno}: {exc.msg}).", hint=_HINT
        ) from None
    if not isinstance(config, dict):
        raise WorkloadError(f"{path} is not a model config (a JSON object).", hint=_HINT)
    named = config.get("_name_or_path")
    name = named if isinstance(named, str) and named.strip() else file.resolve().parent.name
    return architecture_from_config(config, name.strip()[:80] or "the model in config.json")
