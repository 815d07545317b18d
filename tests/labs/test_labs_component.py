"""The Labs component under Pulumi mocks: exact objects, provider, parents, no access entries, demo wiring."""

from __future__ import annotations

import json

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.demo import DemoWorkload, DemoWorkloadArgs
from components.device_plugin import DevicePlugin, DevicePluginArgs
from components.labs import Labs, LabsArgs
from components.renderers.labs.gpu_admission_policy import admission_objects
from components.renderers.labs.lab_manifests import lab_objects
from components.renderers.labs.lab_rbac import member_rbac
from components.settings import StackSettings
from offline.mocks import Registration
from offline.runner import install_mocks
from tests.support.settings import settings_for

LABS_TYPE = "gpu-platform:labs:Labs"
DEMO_TYPE = "gpu-platform:demo:DemoWorkload"
ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"


def _canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)


def record(settings: StackSettings, *, with_demo: bool = False) -> list[Registration]:
    monitor = install_mocks("gpu-platform", "test", settings.region, {}, [])

    @pulumi.runtime.test
    def run() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        labs = Labs("labs", LabsArgs(settings=settings, k8s_provider=provider))
        if with_demo:
            plugin = DevicePlugin("nvidia-device-plugin", DevicePluginArgs(settings=settings, k8s_provider=provider))
            DemoWorkload(
                "demo",
                DemoWorkloadArgs(
                    settings=settings,
                    k8s_provider=provider,
                    device_plugin=plugin,
                    lab_namespace=labs.namespaces[settings.demo.namespace],
                ),
            )

    run()
    return list(monitor.registrations)


@pytest.fixture(scope="module")
def registrations() -> list[Registration]:
    return record(settings_for("prod"))


def test_kubernetes_children_are_exactly_the_rendered_objects(registrations: list[Registration]) -> None:
    settings = settings_for("prod")
    (labs,) = [r for r in registrations if r.type == LABS_TYPE]
    (provider,) = [r for r in registrations if r.type == "pulumi:providers:kubernetes"]
    sent = [r for r in registrations if r.type.startswith("kubernetes:") and r.parent == labs.urn]
    expected = [
        *admission_objects(),
        *(o for lab in settings.labs for o in lab_objects(lab, settings.kubernetes_version)),
    ]
    assert sorted(({k: v for k, v in r.inputs.items() if k != "skipAwait"} for r in sent), key=_canonical) == sorted(
        expected, key=_canonical
    )
    for r in sent:
        assert r.provider is not None and r.provider.startswith(provider.urn + "::")
    # Each lab's members' Role and RoleBinding: one LabMembers child per lab, the binding after the Role.
    # Matched by name, not by position: the mocks record registrations as their RPCs complete, in any order.
    members = {r.name: r for r in registrations if r.type == "gpu-platform:labs:LabMembers" and r.parent == labs.urn}
    assert sorted(members) == sorted(f"{labs.name}-{lab.name}-members" for lab in settings.labs)
    for lab in settings.labs:
        component = members[f"{labs.name}-{lab.name}-members"]
        # By kind, not by position: the mocks record registrations as their RPCs complete, in any order.
        rbac = {r.inputs["kind"]: r for r in registrations if r.parent == component.urn}
        expected_rbac = {obj["kind"]: obj for obj in member_rbac(lab)}
        assert {
            kind: {k: v for k, v in r.inputs.items() if k != "skipAwait"} for kind, r in rbac.items()
        } == expected_rbac
        assert rbac["Role"].urn in rbac["RoleBinding"].dependencies
        rbac_list = list(rbac.values())
        assert all(r.provider is not None and r.provider.startswith(provider.urn + "::") for r in rbac_list)


def test_labs_create_no_access_entries(registrations: list[Registration]) -> None:
    """Members' entries are components/access.py's (one entry per principal, whatever its role)."""
    assert not [r for r in registrations if r.type in (ENTRY, ASSOCIATION)]


def test_the_demo_runs_in_its_lab_namespace() -> None:
    settings = settings_for("staging")
    registrations = record(settings, with_demo=True)
    (demo,) = [r for r in registrations if r.type == DEMO_TYPE]
    namespaces = [r for r in registrations if r.type == "kubernetes:core/v1:Namespace"]
    # One namespace, the lab's: the demo creates none of its own but waits for the lab's.
    (namespace,) = namespaces
    assert namespace.inputs["metadata"]["name"] == settings.demo.namespace
    (deployment,) = [r for r in registrations if r.type == "kubernetes:apps/v1:Deployment"]
    assert deployment.parent == demo.urn and namespace.urn in deployment.dependencies
