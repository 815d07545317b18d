"""The README stays true: its two commands are the ones CI and make run; every config key is in docs/configuration.md."""

from __future__ import annotations

import re
from typing import Any, get_args, get_origin

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
