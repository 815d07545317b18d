"""The configuration reference is generated from the settings models and never drifts from them.

docs/configuration.md is the output of `python -m offline.config_reference`; every settings field carries an
attribute docstring (its description); Field bounds and Literal choices reach the reference as the models say.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Literal, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from components.settings import StackSettings
from offline import config_reference
from offline.config_reference import Row, render, sections, undescribed_fields
from tests.conftest import PROJECT_DIR

REFERENCE = PROJECT_DIR / "docs" / "configuration.md"
REGENERATE = ".venv/bin/python -m offline.config_reference > docs/configuration.md"


def _rows() -> dict[str, Row]:
    return {row.key: row for section in sections() for row in section.rows}


def test_docs_configuration_is_what_the_models_generate() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == render(), f"docs/configuration.md is stale: run {REGENERATE}"


def test_every_settings_field_has_a_description() -> None:
    assert undescribed_fields() == [], 'add an attribute docstring under each field: """what it is; allowed values"""'


def test_a_field_without_a_docstring_is_reported() -> None:
    class Probe(BaseModel):
        model_config = ConfigDict(alias_generator=to_camel)
        described: int = 1
        """Something."""
        bare_field: int = 2

    assert undescribed_fields(Probe, "probe.") == ["gpu-platform:probe.bareField"]


def test_the_upper_bounds_the_hand_written_table_missed_are_shown() -> None:
    rows = _rows()
    assert rows["gpu-platform:karpenter.nodePools[].warmGpuSlots"].allowed == "whole number; 0 to 10000"
    assert rows["gpu-platform:labs[].gpuSlots"].allowed == "whole number; 1 to 10000"


def test_every_bound_and_choice_of_the_models_reaches_the_reference() -> None:
    """Walks the models independently of the generator: each Field bound and Literal choice is in its key's row."""
    rows, checked = _rows(), 0

    def walk(model: type[BaseModel], prefix: str) -> None:
        nonlocal checked
        for field in model.model_fields.values():
            key = f"{prefix}{field.alias}"
            row = rows.get(key if prefix else config_reference._qualified(key))
            if row is None:  # a model listed once, at its shallowest key (pools' gpuSharing)
                continue
            for bound in field.metadata:
                for attribute in ("ge", "le", "min_length", "max_length"):
                    if isinstance(bound, annotated_types.BaseMetadata) and hasattr(bound, attribute):
                        assert str(getattr(bound, attribute)) in row.allowed, (key, bound)
                        checked += 1
            literal = field.annotation
            while get_origin(literal) is list:
                literal = get_args(literal)[0]
            if get_origin(literal) is Literal:
                assert all(f"`{choice}`" in row.allowed for choice in get_args(literal)), key
                checked += 1
            nested = config_reference._model_of(field.annotation)
            if nested is not None:
                walk(nested, f"{row.key}{'[]' if get_origin(field.annotation) is list else ''}.")

    walk(StackSettings, "")
    assert checked > 40


def test_keys_are_written_as_stack_files_and_errors_write_them() -> None:
    keys = list(_rows())
    assert keys[0] == "aws:region"
    assert all(key == "aws:region" or key.startswith("gpu-platform:") for key in keys)
    assert "gpu-platform:karpenter.nodePools[].disruptionBudgets[].schedule" in keys
    # A model used at two keys is listed once, at its shallowest key; the other points there.
    assert "gpu-platform:karpenter.nodePools[].gpuSharing.replicas" not in keys
    assert "`gpu-platform:gpuSharing`" in _rows()["gpu-platform:karpenter.nodePools[].gpuSharing"].allowed


def test_defaults_come_from_the_models_and_pulumi_yaml() -> None:
    rows = _rows()
    assert rows["gpu-platform:kubernetesVersion"].default == '`"1.35"` (Pulumi.yaml)'
    assert rows["gpu-platform:clusterName"].default == "required"
    assert rows["gpu-platform:karpenter.nodePools[].disruptionBudgets"].default == '`[{nodes: "1"}]`'
    assert rows["gpu-platform:cluster.logTypes"].default == "`[api, audit, authenticator]`"
    assert rows["gpu-platform:network.existing"].default == "unset"


def test_the_module_prints_the_reference() -> None:
    """The documented command, in a fresh interpreter, twice: the same bytes as docs/configuration.md."""
    outputs = [
        subprocess.run(
            [sys.executable, "-m", "offline.config_reference"],
            cwd=PROJECT_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout
        for seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1] == REFERENCE.read_text(encoding="utf-8")


def test_readme_points_to_the_generated_reference() -> None:
    readme = (PROJECT_DIR / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration reference\n", 1)[1].split("\n## ", 1)[0]
    assert "(docs/configuration.md)" in section and "python -m offline.config_reference" in section
    assert "| key |" not in section, "the reference lives in docs/configuration.md only"
