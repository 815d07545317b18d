"""Comments and docs cite what is in the repository (docs/, README) or upstream repo + path + tag, never notes
that live outside it (../shared/DESIGN.md, the shared reference notes)."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

OUTSIDE_NOTE = re.compile(
    r"\bDESIGN\.md\b|\b(?:validation-tools|karpenter|device-plugin|pulumi)\.md\b|shared/reference", re.IGNORECASE
)
DOCS_LINK = re.compile(r"\bdocs/[A-Za-z0-9_-]+\.md\b")
SKIPPED_DIRS = {".git", ".venv", ".venv-checkov", "build", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


@functools.cache
def _repository_text_files() -> tuple[Path, ...]:
    files = []
    for folder, subfolders, names in os.walk(PROJECT_DIR):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_DIRS)  # never walk a venv
        for name in sorted(names):
            path = Path(folder, name)
            if path.suffix in {".py", ".md", ".yaml", ".yml", ".toml", ".txt"} or name in {"Makefile", "run"}:
                files.append(path)
    return tuple(files)


def outside_citations(text: str) -> list[str]:
    return [match.group(0) for match in OUTSIDE_NOTE.finditer(text)]


def test_no_file_cites_notes_outside_the_repository() -> None:
    offenders = {
        str(path.relative_to(PROJECT_DIR)): found
        for path in _repository_text_files()
        if path != Path(__file__) and (found := outside_citations(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "comment",
    ["# see DESIGN.md", "(validation-tools.md §2)", "karpenter.md §3.2", "../shared/reference/pulumi.md"],
)
def test_an_outside_citation_is_caught(comment: str) -> None:
    assert outside_citations(comment)


def test_every_cited_doc_exists() -> None:
    cited = {
        link
        for path in _repository_text_files()
        for link in DOCS_LINK.findall(path.read_text(encoding="utf-8", errors="replace"))
    }
    assert cited, "comments cite docs/*.md"
    assert sorted(link for link in cited if not (PROJECT_DIR / link).is_file()) == []
