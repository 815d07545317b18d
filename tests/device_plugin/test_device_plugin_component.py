"""DevicePlugin and DemoWorkload components under Pulumi mocks: children, provider, ordering, exact objects."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.demo import DemoWorkload, DemoWorkloadArgs, demo_placement
from components.device_plugin import DevicePlugin, DevicePluginArgs
from components.renderers.device_plugin.device_plugin_manifests import device_plugin_objects
from components.renderers.labs.demo_manifests import (
    demo_deployment,
    demo_namespace,
    demo_network_policy,
    place_demo_deployment,
)
from components.settings import StackSettings
from offline.mocks import Registration
from offline.runner import install_mocks
from tests.support.settings import settings_for

PLUGIN_TYPE = "gpu-platform:gpu:DevicePlugin"
DEMO_TYPE = "gpu-platform:demo:DemoWorkload"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NAMESPACE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def record(settings: StackSettings, *, in_lab: bool = False) -> list[Registration]:
    """The plugin and the demo; `in_lab`: the demo gets a lab's namespace instead of creating its own."""
    monitor = install_mocks("gpu-platform", "test", settings.region, {}, [])

    @pulumi.runtime.test
    def run() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        plugin = DevicePlugin("nvidia-device-plugin", DevicePluginArgs(settings=settings, k8s_provider=provider))
        lab = k8s.core.v1.Namespace("lab", metadata={"name": settings.demo.namespace}) if in_lab else None
        args = DemoWorkloadArgs(settings=settings, k8s_provider=provider, device_plugin=plugin, lab_namespace=lab)
        DemoWorkload("demo", args)

    run()
    return list(monitor.registrations)


@pytest.fixture(scope="module")
def settings() -> StackSettings:
    """Staging with its Karpenter pool switched to MPS and the managed group (time-slicing-3) on: two profiles,
    one of them with a control daemon."""
    return settings_for(
        "staging", merge={"gpuNodeGroup": {"enabled": True}}, pool={"gpuSharing": {"strategy": "mps", "replicas": 4}}
    )


@pytest.fixture(scope="module")
def registrations(settings: StackSettings) -> list[Registration]:
    return record(settings)


def of_type(registrations: list[Registration], type_: str) -> list[Registration]:
    return [r for r in registrations if r.type == type_]


def test_one_config_map_and_daemon_set_per_profile_plus_the_mps_daemon(
    settings: StackSettings, registrations: list[Registration]
) -> None:
    profiles = [device_plugin_objects(s) for s in settings.sharing_profiles]
    assert [p.profile for p in profiles] == ["mps-4", "time-slicing-3"]
    expected_maps = [p.config_map for p in profiles]
    expected_sets = [ds for p in profiles for ds in p.daemon_sets]
    expected_policies = [*(np for p in profiles for np in p.network_policies), demo_network_policy(settings.demo)]
    assert len(expected_sets) == 3

    def as_object(r: Registration) -> dict[str, object]:
        return {k: v for k, v in r.inputs.items() if k != "skipAwait"}

    maps = sorted((as_object(r) for r in of_type(registrations, CONFIG_MAP)), key=lambda o: str(o["metadata"]))
    sets = sorted((as_object(r) for r in of_type(registrations, DAEMON_SET)), key=lambda o: str(o["metadata"]))
    policies = sorted((r.inputs for r in of_type(registrations, NETWORK_POLICY)), key=lambda o: o["metadata"]["name"])
    # The objects sent to the provider are exactly the rendered ones (apiVersion/kind added by the SDK).
    assert maps == sorted(expected_maps, key=lambda o: str(o["metadata"]))
    assert sets == sorted(expected_sets, key=lambda o: str(o["metadata"]))
    assert policies == sorted(expected_policies, key=lambda o: o["metadata"]["name"])


def test_children_are_parented_and_use_the_cluster_provider(
    settings: StackSettings, registrations: list[Registration]
) -> None:
    (plugin,) = of_type(registrations, PLUGIN_TYPE)
    (demo,) = of_type(registrations, DEMO_TYPE)
    (provider,) = of_type(registrations, "pulumi:providers:kubernetes")
    policies = of_type(registrations, NETWORK_POLICY)
    plugin_policies = [r for r in policies if r.inputs["metadata"]["namespace"] != settings.demo.namespace]
    demo_policies = [r for r in policies if r.inputs["metadata"]["namespace"] == settings.demo.namespace]
    assert len(plugin_policies) == len(of_type(registrations, DAEMON_SET)) and len(demo_policies) == 1
    for r in [*of_type(registrations, CONFIG_MAP), *of_type(registrations, DAEMON_SET), *plugin_policies]:
        assert r.parent == plugin.urn
        assert r.provider is not None and r.provider.startswith(provider.urn + "::")
    for r in [*of_type(registrations, NAMESPACE), *of_type(registrations, DEPLOYMENT), *demo_policies]:
        assert r.parent == demo.urn
        assert r.provider is not None and r.provider.startswith(provider.urn + "::")
    urns = [r.urn for r in registrations]
    assert len(urns) == len(set(urns))


def test_each_daemon_set_waits_for_its_own_config_map(registrations: list[Registration]) -> None:
    maps = {r.inputs["metadata"]["name"]: r.urn for r in of_type(registrations, CONFIG_MAP)}
    for daemon_set in of_type(registrations, DAEMON_SET):
        volumes = daemon_set.inputs["spec"]["template"]["spec"]["volumes"]
        (config_map_name,) = [v["configMap"]["name"] for v in volumes if "configMap" in v]
        assert maps[config_map_name] in daemon_set.dependencies
        assert set(daemon_set.dependencies) & set(maps.values()) == {maps[config_map_name]}


def test_the_demo_comes_after_its_namespace_and_every_device_plugin(
    settings: StackSettings, registrations: list[Registration]
) -> None:
    (deployment,) = of_type(registrations, DEPLOYMENT)
    (namespace,) = of_type(registrations, NAMESPACE)
    assert {r.urn for r in of_type(registrations, DAEMON_SET)} | {namespace.urn} <= set(deployment.dependencies)
    assert {k: v for k, v in deployment.inputs.items() if k != "skipAwait"} == place_demo_deployment(
        demo_deployment(settings.demo), demo_placement(settings)
    )
    assert namespace.inputs == demo_namespace(settings.demo, settings.kubernetes_version)


def test_the_demo_in_a_lab_namespace_adds_no_deny_all(settings: StackSettings) -> None:
    """NetworkPolicies are additive: next to the lab's policies (podSelector {}) a deny-all would deny nothing."""
    registrations = record(settings, in_lab=True)
    (demo,) = of_type(registrations, DEMO_TYPE)
    assert [r for r in of_type(registrations, NETWORK_POLICY) if r.parent == demo.urn] == []
    assert [r for r in of_type(registrations, NAMESPACE) if r.parent == demo.urn] == []
    (deployment,) = of_type(registrations, DEPLOYMENT)
    (lab,) = of_type(registrations, NAMESPACE)
    assert lab.urn in deployment.dependencies
