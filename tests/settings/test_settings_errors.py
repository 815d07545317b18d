"""The settings' error wording (components/settings/errors.py and the rules' messages): what a user reads for
each class of mistake the config front door refuses, beyond the key path `tests/support/config_corpus.py` proves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from components.settings import SettingsError, StackSettings, load_settings
from components.settings.checks.fit_placement import group_fits
from components.settings.checks.hubs import hub_warnings
from components.settings.errors import problems_from
from components.settings.fields import SettingsModel
from offline.config_files import read_stack_config
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.conftest import PROJECT_DIR

STAGING = read_stack_config(PROJECT_DIR, "staging")


def _edited(key: str, edit: Any) -> dict[str, str]:
    values = dict(STAGING.values)
    document = json.loads(values[key])
    edit(document)
    values[key] = json.dumps(document)
    return values


def _problems(values: dict[str, str]) -> list[tuple[str, str]]:
    with pytest.raises(SettingsError) as caught:
        load_settings(values, STAGING.secret_paths)
    return caught.value.problems


def _renamed(block: dict[str, Any], old: str, new: str) -> None:
    block[new] = block.pop(old)


@pytest.mark.parametrize(
    ("key", "edit", "path", "camel"),
    [
        ("gpu-platform:systemNodes", lambda n: _renamed(n, "minSize", "min_size"), "gpu-platform:systemNodes.min_size", "minSize"),
        ("gpu-platform:karpenter", lambda k: _renamed(k["nodePools"][0], "warmGpuSlots", "warm_gpu_slots"),
         "gpu-platform:karpenter.nodePools[0].warm_gpu_slots", "warmGpuSlots"),
        ("gpu-platform:labs", lambda labs: _renamed(labs[0], "gpuSlots", "gpu_slots"), "gpu-platform:labs[0].gpu_slots", "gpuSlots"),
        ("gpu-platform:labs", lambda labs: _renamed(labs[0]["hub"], "adminUsers", "admin_users"),
         "gpu-platform:labs[0].hub.admin_users", "adminUsers"),
    ],
)  # fmt: skip
def test_a_snake_case_key_is_unknown_and_named_with_its_camel_case(key: str, edit: Any, path: str, camel: str) -> None:
    # Once only: a required key spelled in snake_case is not also reported missing.
    ((named, message),) = _problems(_edited(key, edit))
    assert named == path
    assert message.startswith(f"unknown key; did you mean '{camel}'? (keys are spelled in camelCase")


def test_a_snake_case_top_level_key_names_its_camel_case_once() -> None:
    values = dict(STAGING.values)
    values["gpu-platform:cluster_name"] = values.pop("gpu-platform:clusterName")
    ((named, message),) = _problems(values)
    assert named == "gpu-platform:cluster_name" and "did you mean 'gpu-platform:clusterName'?" in message


def test_the_program_still_builds_models_by_field_name() -> None:
    # `populate_by_name` stays for the program's own models (defaults, copies); only the stack file is alias-only.
    settings = load_settings(STAGING.values, STAGING.secret_paths)
    assert settings.model_copy(update={"cluster_name": "other"}).cluster_name == "other"


@pytest.mark.parametrize(
    ("tag", "words"),
    [
        ("oauth", "(got 'oauth'; did you mean 'github'?)"),
        ("OIDC", "(got 'OIDC'; did you mean 'oidc'?)"),
        ("shared-password", "did you mean 'sharedPassword'?"),
        ("dummy", "(got 'dummy')"),
    ],
)
def test_a_tagged_union_typo_is_named_at_its_discriminator(tag: str, words: str) -> None:
    values = _edited("gpu-platform:labs", lambda labs: labs[0]["hub"]["auth"].update(type=tag))
    ((named, message),) = _problems(values)
    assert named == "gpu-platform:labs[0].hub.auth.type"
    assert message.startswith("must be one of 'github', 'oidc', 'sharedPassword'") and words in message


class _Cat(SettingsModel):
    kind: Literal["cat"]
    lives: int = 9


class _Dog(SettingsModel):
    kind: Literal["dog"]
    good_boy: bool = True


class _Kennel(SettingsModel):
    pet: Annotated[_Cat | _Dog, Field(discriminator="kind")]


class _Shelter(SettingsModel):
    kennels: list[_Kennel]


def _shelter_problems(value: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as caught:
        _Shelter.model_validate(value, by_alias=True, by_name=False)
    return problems_from(caught.value, _Shelter)


def test_any_tagged_union_reports_at_its_discriminator() -> None:
    # Read from the model's JSON schema: a union added later (e.g. a hub database choice) needs no entry.
    assert _shelter_problems({"kennels": [{"pet": {"kind": "dgo"}}]}) == [
        ("gpu-platform:kennels[0].pet.kind", "must be one of 'cat', 'dog' (got 'dgo'; did you mean 'dog'?)")
    ]
    assert _shelter_problems({"kennels": [{"pet": {"lives": 3}}]}) == [
        ("gpu-platform:kennels[0].pet.kind", "required: one of 'cat', 'dog'")
    ]
    # Inside a chosen member, the member's tag is no config key: `pet.good_boy`, not `pet.dog.good_boy`.
    ((path, message),) = _shelter_problems({"kennels": [{"pet": {"kind": "dog", "good_boy": False}}]})
    assert path == "gpu-platform:kennels[0].pet.good_boy" and "did you mean 'goodBoy'?" in message


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _image_fields(model: type[BaseModel], path: str = "") -> list[tuple[str, Any]]:
    """Every string or list-of-strings field whose key names an image, with its full annotation."""
    found = []
    for name, field in model.model_fields.items():
        where = f"{path}.{field.alias or name}"
        if "image" in (field.alias or name).lower() and "str" in str(field.annotation):
            found.append((where, Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation))
        for inner in _models_in(field.annotation):
            found += _image_fields(inner, where)
    return found


def test_every_image_key_needs_a_registry_host() -> None:
    # `ctr images pull` (the GPU nodes' pre-pull) adds no docker.io/: each image key refuses a name without a host.
    fields = _image_fields(StackSettings)
    assert {where for where, _ in fields} >= {".gpuNodes.prePullImages", ".demo.image", ".labs.hub.image"}
    unqualified = "tensorflow/tensorflow:2.12.0-gpu@sha256:" + "a" * 64
    for where, annotation in fields:
        adapter = TypeAdapter(annotation)
        value = [unqualified] if "list" in str(annotation) else unqualified
        with pytest.raises(ValidationError, match="registry host"):
            adapter.validate_python(value)
        qualified = "docker.io/" + unqualified
        assert adapter.validate_python([qualified] if isinstance(value, list) else qualified), where


def test_a_mixed_gpu_pool_says_the_counts_and_the_opt_in() -> None:
    values = _edited(
        "gpu-platform:karpenter", lambda k: k["nodePools"][0].update(instanceTypes=["g4dn.xlarge", "g4dn.metal"])
    )
    ((named, message),) = _problems(values)
    assert named == "gpu-platform:karpenter.nodePools[0].instanceTypes"
    assert "1 GPU(s): g4dn.xlarge; 8 GPU(s): g4dn.metal" in message and "allowMixedGpuCounts: true" in message


def test_overlapping_sessions_name_the_sessions_the_demo_and_the_slots() -> None:
    session = {"schedule": "0 18 * * tue", "timezone": "America/Los_Angeles", "duration": "2h", "learners": 2}
    values = _edited("gpu-platform:labs", lambda labs: labs[0]["sessions"].append(session))
    ((named, message),) = _problems(values)
    assert named == "gpu-platform:labs[0].sessions[1].learners"
    # Staging: 6 learners Tue/Thu 17:00-19:00 Pacific, 3 demo pods all week, gpuSlots 9.
    assert "on tue 18:00 America/Los_Angeles" in message and "6 (sessions[0]) + 2 (sessions[1])" in message
    assert "the demo's 3 pods" in message and "need 11 GPU slots" in message and "gpuSlots is 9" in message


@pytest.mark.parametrize(
    ("subscriber", "words"),
    [
        ("arn:aws:sqs:us-west-1:111122223333:alerts.fifo", "standard SNS topic, which cannot deliver to FIFO queues"),
        ("arn:aws-cn:lambda:cn-north-1:111122223333:function:page", "does not deliver across partitions"),
        ("arn:aws:lambda:us-west-1:111122223333:layer:tools:3", "SNS delivers to functions only"),
        ("arn:aws:sqs:us-west-1:111122223333:" + "q" * 81, "1-80 letters"),
    ],
)
def test_an_undeliverable_subscriber_says_why(subscriber: str, words: str) -> None:
    values = _edited("gpu-platform:observability", lambda o: o.update(alarmSubscribers=[subscriber]))
    ((named, message),) = _problems(values)
    assert named == "gpu-platform:observability.alarmSubscribers[0]" and words in message


def test_two_hubs_on_one_hostname_name_the_first() -> None:
    def add_lab(labs: list[dict[str, Any]]) -> None:
        labs.append(
            {
                "name": "vision-lab",
                "gpuSlots": 1,
                "hub": {**labs[0]["hub"], "adminUsers": [], "auth": {"type": "sharedPassword", "password": "[secret]"}},
            }
        )

    ((named, message),) = _problems(_edited("gpu-platform:labs", add_lab))
    assert named == "gpu-platform:labs[1].hub.hostname"
    assert "already gpu-platform:labs[0].hub.hostname" in message


def test_a_hub_shorter_than_its_class_is_a_warning_naming_both_keys() -> None:
    values = _edited("gpu-platform:labs", lambda labs: labs[0]["sessions"][0].update(duration="3h"))
    values = {
        **values,
        "gpu-platform:karpenter": STAGING.values["gpu-platform:karpenter"].replace('"2h15m"', '"3h15m"'),
    }
    settings = load_settings(values, STAGING.secret_paths)
    ((key, message),) = hub_warnings(settings)
    assert key == "gpu-platform:labs[0].hub.maxHours"
    assert "gpu-platform:labs[0].sessions[0].duration 3h" in message and "at least 3" in message


def test_the_synth_summary_prints_the_hub_warning(staging_plan: Plan) -> None:
    values = _edited("gpu-platform:labs", lambda labs: labs[0]["hub"].update(maxHours=1))
    settings = load_settings(values, STAGING.secret_paths)
    summary = render_summary(
        settings, staging_plan, "staging", Path("out"), stack_forecast(settings), group_fits(settings)
    )
    assert (
        "  WARNING: gpu-platform:labs[0].hub.maxHours: 1h is shorter than gpu-platform:labs[0].sessions[0]" in summary
    )


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_shipped_hubs_outlast_their_classes(stack: str) -> None:
    config = read_stack_config(PROJECT_DIR, stack)
    assert hub_warnings(load_settings(config.values, config.secret_paths)) == []
