"""One place per fact: what Pulumi.yaml tells a user about the Kubernetes version is what components/settings/ accepts."""

from __future__ import annotations

import re

import pytest
import yaml

from components.settings import SUPPORTED_KUBERNETES_VERSIONS, SettingsError, load_settings
from offline.config_files import read_stack_config
from tests.conftest import PROJECT_DIR


def _declared_kubernetes_version() -> dict[str, str]:
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text(encoding="utf-8"))
    declared: dict[str, str] = project["config"]["kubernetesVersion"]
    return declared


def test_pulumi_yaml_lists_exactly_the_supported_kubernetes_versions() -> None:
    description = _declared_kubernetes_version()["description"]
    listed = re.search(r"\(one of ([0-9., ]+)\)", description)
    assert listed, f"Pulumi.yaml kubernetesVersion description must say '(one of ...)': {description!r}"
    assert tuple(v.strip() for v in listed[1].split(",")) == SUPPORTED_KUBERNETES_VERSIONS


def test_pulumi_yaml_default_kubernetes_version_is_supported() -> None:
    assert _declared_kubernetes_version()["default"] in SUPPORTED_KUBERNETES_VERSIONS


@pytest.mark.parametrize("version", ["1.33", "1.37"])
def test_a_version_outside_the_list_is_rejected(version: str) -> None:
    values = {**read_stack_config(PROJECT_DIR, "staging").values, "gpu-platform:kubernetesVersion": version}
    with pytest.raises(SettingsError, match="kubernetesVersion"):
        load_settings(values)
