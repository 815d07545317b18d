"""The README stays true: its two commands are the ones CI and make run; every config key is in docs/configuration.md;
it stays a front door (at most 200 lines) and every relative link in it and in docs/ leads to an existing file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from pydantic import BaseModel

from components.settings import StackSettings
from tests.conftest import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text(encoding="utf-8")


def _readme_commands() -> list[str]:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block, "README has a shell block with the two commands"
    return [line for line in first_block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_synth_then_test_commands() -> None:
    synth, test = _readme_commands()[:2]
    assert "synth.py --stack staging" in synth and "requirements.txt" in synth
    assert "pytest" in test and "requirements-dev.txt" in test


def test_ci_runs_the_readme_commands() -> None:
    ci = (PROJECT_DIR / ".ci" / "run").read_text(encoding="utf-8")
    synth, test = _readme_commands()[:2]
    assert test in ci
    assert synth in ci


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        model = _model_of(arg)
        if model is not None:
            return model
    return None


def _leaf_keys(model: type[BaseModel]) -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        nested = _model_of(field.annotation)
        if nested is not None and get_origin(field.annotation) is not dict:
            keys += [f"{alias}.{leaf}" for leaf in _leaf_keys(nested)] if nested is not StackSettings else []
            keys.append(alias)
        else:
            keys.append(alias)
    return keys


def test_every_config_key_is_documented() -> None:
    reference = (PROJECT_DIR / "docs" / "configuration.md").read_text(encoding="utf-8")
    for key in _leaf_keys(StackSettings):
        last = key.split(".")[-1]
        if key == "region":
            assert "`aws:region`" in reference
            continue
        assert re.search(rf"`[^`]*\b{re.escape(last)}\b", reference), f"{key} is not in the configuration reference"


# --- The README is a front door: short, and every link in it and in docs/ leads somewhere ---------------------

README_MAX_LINES = 200
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def _prose(markdown: str) -> str:
    """The text outside fenced code blocks (a link or heading inside a code block is not one)."""
    return FENCE.sub("", markdown)


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens, repeats -1, -2."""
    anchors: set[str] = set()
    for heading in HEADING.findall(_prose(markdown)):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def broken_links(page: Path) -> list[str]:
    """Relative links of a page whose file, or whose #anchor in that file, does not exist."""
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not a file in the repository
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.is_file() or (anchor and linked.suffix == ".md" and anchor not in _anchors_of(linked)):
            broken.append(target)
    return broken


def _anchors_of(page: Path) -> set[str]:
    return heading_anchors(page.read_text(encoding="utf-8"))


def test_readme_is_a_front_door_of_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES, "move reference material to docs/ and link it"


@pytest.mark.parametrize(
    "page", [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_every_relative_link_leads_to_an_existing_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


def test_the_readme_links_every_doc() -> None:
    linked = {(PROJECT_DIR / target.partition("#")[0]).resolve() for target in LINK.findall(_prose(README))}
    assert sorted(p.name for p in (PROJECT_DIR / "docs").glob("*.md") if p.resolve() not in linked) == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("## Runner: where `preview`/`up` run from", "runner-where-previewup-run-from"),
        ("## 4. Changing people's access", "4-changing-peoples-access"),
        ("## Time to GPU: a model, not a measurement", "time-to-gpu-a-model-not-a-measurement"),
        ("## GPU_health & repair", "gpu_health--repair"),
    ],
)
def test_heading_anchors_follow_github(heading: str, anchor: str) -> None:
    assert heading_anchors(f"{heading}\n```sh\n# not a heading\n```\n") == {anchor}


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# Here\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#here) [web](https://example.com/x) [self](#top)\n"
        "[gone](missing.md) [no heading](there.md#nowhere)\n```sh\n[in code](also-missing.md)\n```\n# Top\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["missing.md", "there.md#nowhere"]
