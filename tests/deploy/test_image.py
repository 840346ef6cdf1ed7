"""The container image recipe and its lock file, checked statically (no Docker engine needed)."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
LOCK = (ROOT / "requirements.lock").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

#: The server stack the lock carries beyond pyproject's dependencies (see the lock's header).
SERVER_STACK = ("uvicorn", "starlette", "aiohttp", "prometheus-client", "setuptools", "wheel")


@dataclass(frozen=True, slots=True)
class Instruction:
    keyword: str
    args: str


def _instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip()))
    return out


def _stages(text: str) -> list[list[Instruction]]:
    stages: list[list[Instruction]] = []
    for instruction in _instructions(text):
        if instruction.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def _final_stage() -> list[Instruction]:
    return _stages(DOCKERFILE)[-1]


def _args_of(keyword: str, stage: list[Instruction]) -> list[str]:
    return [i.args for i in stage if i.keyword == keyword]


def _lock_pins() -> dict[str, tuple[Version, int]]:
    """{canonical name: (pinned version, number of hashes)} from requirements.lock."""
    pins: dict[str, tuple[Version, int]] = {}
    for block in re.split(r"\n(?=\S)", LOCK):
        first = block.splitlines()[0]
        if first.startswith("#") or not first.strip():
            continue
        match = re.match(r"([A-Za-z0-9_.-]+)==([^\s\\;]+)", first)
        assert match, f"not an exact pin: {first!r}"
        pins[canonicalize_name(match[1])] = (
            Version(match[2]),
            len(re.findall(r"--hash=sha256:[0-9a-f]{64}", block)),
        )
    return pins


class TestDockerfile:
    def test_it_is_multi_stage_with_a_named_build_stage(self) -> None:
        """Building happens in its own stage; the runtime stage copies only the venv from it."""
        stages = _stages(DOCKERFILE)
        assert len(stages) >= 2
        assert re.search(r"\bAS build\b", stages[0][0].args)
        copies = _args_of("COPY", _final_stage())
        assert any(c.startswith("--from=build /opt/gpufit") for c in copies)

    def test_base_images_are_slim_and_pinned_to_a_python_minor(self) -> None:
        """Every stage starts from a slim Python 3.11 image, never an unversioned tag."""
        default = re.search(r"ARG PYTHON_IMAGE=(\S+)", DOCKERFILE)
        assert default is not None
        assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?", default[1])
        for stage in _stages(DOCKERFILE):
            assert stage[0].args.split()[0] in {"${PYTHON_IMAGE}", default[1]}

    def test_the_runtime_runs_as_a_numeric_non_root_user(self) -> None:
        """The last USER is a numeric uid other than 0, so runAsNonRoot can verify it."""
        users = _args_of("USER", _final_stage())
        assert users, "the runtime stage sets no USER"
        uid = users[-1].split(":")[0]
        assert uid.isdigit()
        assert int(uid) != 0

    def test_dependencies_come_only_from_the_hashed_lock(self) -> None:
        """pip installs the lock with --require-hashes, and gpufit itself with --no-deps."""
        installs = [
            cmd
            for run in _args_of("RUN", _stages(DOCKERFILE)[0])
            for cmd in run.split("&&")
            if "pip install" in cmd
        ]
        assert installs, "the build stage installs nothing"
        for cmd in installs:
            words = shlex.split(cmd)
            if "-r" in words:
                assert words[words.index("-r") + 1] == "requirements.lock"
                assert "--require-hashes" in words
            else:
                assert "--no-deps" in words, f"unpinned install: {cmd.strip()}"
                assert "--upgrade" not in words

    def test_there_is_a_health_check(self) -> None:
        """The runtime stage declares a HEALTHCHECK with an interval and a timeout."""
        (check,) = _args_of("HEALTHCHECK", _final_stage())
        assert "--interval=" in check
        assert "--timeout=" in check
        assert "CMD" in check

    def test_the_entrypoint_is_gpufit_and_serve_is_the_default(self) -> None:
        """One image: `docker run IMAGE` serves, `docker run IMAGE worker` runs the worker."""
        assert _args_of("ENTRYPOINT", _final_stage()) == ['["gpufit"]']
        assert _args_of("CMD", _final_stage()) == ['["serve"]']

    def test_no_secret_is_baked_into_the_image(self) -> None:
        """No ENV/ARG names a secret, nothing token-shaped appears, no .env file is copied."""
        for stage in _stages(DOCKERFILE):
            for instruction in stage:
                if instruction.keyword in {"ENV", "ARG"}:
                    assert not re.search(
                        r"TOKEN|SECRET|PASSWORD|REDIS_URL", instruction.args, re.I
                    ), instruction
                if instruction.keyword in {"COPY", "ADD"}:
                    assert ".env" not in instruction.args
        assert not re.search(r"xox[abprse]-|xapp-|hooks\.slack\.com", DOCKERFILE)

    def test_only_named_paths_are_copied_from_the_context(self) -> None:
        """No `COPY . .`: the venv, .git or a local .env can never end up in the image."""
        for stage in _stages(DOCKERFILE):
            for args in _args_of("COPY", stage):
                if args.startswith("--from="):
                    continue
                sources = args.split()[:-1]
                assert "." not in sources
                for source in sources:
                    assert (ROOT / source).exists(), f"COPY of a missing path {source}"


class TestLockFile:
    def test_every_requirement_is_an_exact_pin_with_hashes(self) -> None:
        """Each entry is name==version with at least one sha256, so --require-hashes holds."""
        pins = _lock_pins()
        assert pins
        for name, (_, hashes) in pins.items():
            assert hashes >= 1, f"{name} has no hash"

    def test_it_covers_and_satisfies_every_declared_dependency(self) -> None:
        """Each pyproject dependency is locked at a version its specifier allows."""
        pins = _lock_pins()
        for spec in PYPROJECT["project"]["dependencies"]:
            requirement = Requirement(spec)
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{name} is declared but not locked"
            assert requirement.specifier.contains(pins[name][0], prereleases=True), (
                f"lock pins {name}=={pins[name][0]}, pyproject wants {requirement.specifier}"
            )

    @pytest.mark.parametrize("name", SERVER_STACK)
    def test_it_carries_the_server_stack(self, name: str) -> None:
        """The HTTP server, metrics and build backend the image needs are locked too."""
        assert canonicalize_name(name) in _lock_pins()

    def test_it_says_how_to_regenerate_it_and_names_no_local_index(self) -> None:
        """The header documents the pip-compile command; no index URL or local path leaks."""
        header = "\n".join(line for line in LOCK.splitlines() if line.startswith("#"))
        assert re.search(r"pip-compile\"? --generate-hashes", header)
        assert "pyproject.toml" in header
        assert not re.search(r"^\s*--(index-url|extra-index-url|find-links)", LOCK, re.M)
