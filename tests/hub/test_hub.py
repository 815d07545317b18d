"""A lab's JupyterHub: chart values, generated profiles, the notebook Pods kubespawner spawns, EFS homes, IMDS.

The chart values merged over the chart's defaults validate against its values schema; the notebook Pod files equal
what kubespawner 7.0.0 itself builds from those values; the Pods pass strict Kubernetes validation, Pod Security
`restricted` and the GPU guard; the lab's quota admits exactly `gpuSlots` GPU notebooks.
"""

from __future__ import annotations

import ipaddress
import json
from decimal import Decimal
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml

from components.facts import gpu_catalog, jupyterhub_chart, quantity
from components.facts.constants import (
    DO_NOT_DISRUPT_ANNOTATION,
    EBS_CSI_ADDON,
    EBS_CSI_CONTROLLER_SERVICE_ACCOUNT,
    EBS_CSI_PROVISIONER,
    EFS_CSI_ADDON,
    EFS_CSI_CONTROLLER_SERVICE_ACCOUNT,
    EFS_CSI_PROVISIONER,
    GPU_RESOURCE,
    GPU_TAINT,
    IMDS_HOP_LIMIT,
    INSTANCE_METADATA_IP,
    NFS_PORT,
    NODEPOOL_LABEL,
    SYSTEM_NAMESPACE,
)
from components.hub import SECRET_TRAITS
from components.renderers.hub import (
    hub_database,
    hub_namespace,
    hub_notebook_pod,
    hub_profiles,
    hub_storage,
    hub_values,
)
from components.renderers.karpenter import cpu_user_pool_manifests
from components.renderers.labs.gpu_admission_policy import admission_objects, admission_policy
from components.renderers.labs.lab_manifests import CONTAINER_DEFAULT_REQUESTS, lab_objects, lab_resource_quota
from components.settings import LabSettings, StackSettings
from offline.plan import Plan
from tests.conftest import STACKS, shared_path
from tests.support import apiserver_model
from tests.support.hub_app import OIDC_AUTH
from tests.support.k8s_validation import pod_can_land_on, tolerates, validate_core_object
from tests.support.kubespawner_pods import helm_merge, spawned_pod, without_nulls
from tests.support.pod_security import restricted_problems
from tests.support.settings import settings_for

CHART_DIR = ("schemas", "jupyterhub", "4.4.0")
DIGEST = "sha256:" + "0" * 64
IMAGE = f"quay.io/jupyter/pytorch-notebook:cuda12-python-3.12@{DIGEST}"


@cache
def chart_defaults() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(shared_path(*CHART_DIR, "values.yaml").read_text(encoding="utf-8"))
    return loaded


@cache
def values_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(shared_path(*CHART_DIR, "values.schema.json").read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def settings() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


def hub_labs(settings: StackSettings) -> list[LabSettings]:
    return [lab for lab in settings.labs if lab.hub is not None]


def variant(settings: StackSettings, **hub: Any) -> tuple[StackSettings, LabSettings]:
    """The stack with its first hub's keys changed (auth, internal, ...), validated again as a whole."""
    dumped = settings.model_dump(by_alias=True, exclude_none=True)
    lab = next(x for x in dumped["labs"] if "hub" in x)
    lab["hub"] = {key: value for key, value in {**lab["hub"], **hub}.items() if value is not None}
    changed = StackSettings.model_validate(dumped)
    return changed, next(x for x in changed.labs if x.name == lab["name"])


def every_hub(settings: dict[str, StackSettings]) -> list[tuple[str, StackSettings, LabSettings]]:
    """Each shipped hub, plus variants covering the other logins and an internal load balancer."""
    cases = [(f"{stack}-{lab.name}", s, lab) for stack, s in settings.items() for lab in hub_labs(s)]
    staging = settings["staging"]
    cases.append(("staging-oidc-internal", *variant(staging, auth=OIDC_AUTH, internal=True, certificateArn=None)))
    return cases


def merged_values(settings: StackSettings, lab: LabSettings) -> dict[str, Any]:
    assert lab.hub is not None
    values = hub_values.chart_values(lab, hub_storage.storage_class_name(lab), settings.resolved.hub_pools(lab.hub))
    merged: dict[str, Any] = helm_merge(chart_defaults(), values)
    return merged


# --- the chart values ----------------------------------------------------------------------------------


def test_both_stacks_run_hubs(settings: dict[str, StackSettings]) -> None:
    assert [lab.name for lab in hub_labs(settings["staging"])] == ["learning-lab"]
    assert [lab.name for lab in hub_labs(settings["prod"])] == ["vision-lab"]
    staging_hub, prod_hub = hub_labs(settings["staging"])[0].hub, hub_labs(settings["prod"])[0].hub
    assert staging_hub is not None and staging_hub.auth.type == "sharedPassword"
    assert prod_hub is not None and prod_hub.auth.type == "github"


def test_merged_values_validate_against_the_chart_schema(settings: dict[str, StackSettings]) -> None:
    validator = jsonschema.Draft7Validator(values_schema())
    for case, stack_settings, lab in every_hub(settings):
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(
            merged_values(stack_settings, lab))]  # fmt: skip
        assert errors == [], case


def test_the_schema_check_is_not_vacuous(settings: dict[str, StackSettings]) -> None:
    lab = hub_labs(settings["staging"])[0]
    values = merged_values(settings["staging"], lab)
    values["singleuser"]["cloudMetadata"]["blockWithIptable"] = False  # misspelled key
    values["cull"]["timeout"] = "30m"
    assert len(list(jsonschema.Draft7Validator(values_schema()).iter_errors(values))) == 2


def test_values_turn_off_what_restricted_or_the_guard_refuses(settings: dict[str, StackSettings]) -> None:
    for case, stack_settings, lab in every_hub(settings):
        values = without_nulls(merged_values(stack_settings, lab))
        assert values["singleuser"]["cloudMetadata"]["blockWithIptables"] is False, case
        assert values["prePuller"]["hook"]["enabled"] is False and values["prePuller"]["continuous"]["enabled"] is False
        assert values["scheduling"]["userScheduler"]["enabled"] is False
        assert values["scheduling"]["userPlaceholder"]["enabled"] is False
        for component in (values["hub"], values["proxy"]["chp"]):
            rules = component["networkPolicy"]["egressAllowRules"]
            assert not (rules["cloudMetadataServer"] or rules["dnsPortsCloudMetadataServer"]), case
            assert not (rules["nonPrivateIPs"] or rules["privateIPs"] or rules["dnsPortsPrivateIPs"]), case
        # The chart's singleuser policy would land in `<lab>-hub`, where no notebook runs: off; the lab's own apply.
        assert values["singleuser"]["networkPolicy"]["enabled"] is False, case
        assert values["singleuser"]["extraAnnotations"][DO_NOT_DISRUPT_ANNOTATION] == "true"


def test_hub_and_proxy_containers_meet_restricted(settings: dict[str, StackSettings]) -> None:
    """The chart's hub and proxy pod specs take their security contexts from these merged values."""
    values = without_nulls(merged_values(*variant(settings["staging"])))
    hub_spec = {
        "securityContext": values["hub"]["podSecurityContext"],
        "containers": [{"name": "hub", "securityContext": values["hub"]["containerSecurityContext"]}],
    }
    proxy_spec = {
        "containers": [{"name": "chp", "securityContext": values["proxy"]["chp"]["containerSecurityContext"]}]
    }
    assert restricted_problems(hub_spec) == []
    assert restricted_problems(proxy_spec) == []


def test_idle_culling_and_maximum_age(settings: dict[str, StackSettings]) -> None:
    for case, stack_settings, lab in every_hub(settings):
        assert lab.hub is not None
        cull = merged_values(stack_settings, lab)["cull"]
        assert cull["enabled"] is True, case
        assert cull["timeout"] == lab.hub.idle_minutes * 60 and cull["maxAge"] == lab.hub.max_hours * 3600
        assert cull["every"] <= cull["timeout"]


def test_the_proxy_is_an_nlb_with_tls_from_acm_and_no_clear_text_port(settings: dict[str, StackSettings]) -> None:
    lab = hub_labs(settings["staging"])[0]
    assert lab.hub is not None
    service = merged_values(settings["staging"], lab)["proxy"]["service"]
    annotations = service["annotations"]
    assert service["type"] == "LoadBalancer" and service["disableHttpPort"] is True
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-type"] == "nlb"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == lab.hub.certificate_arn
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "https"
    assert "service.beta.kubernetes.io/aws-load-balancer-internal" not in annotations
    https = merged_values(settings["staging"], lab)["proxy"]["https"]
    assert https["enabled"] is True and https["type"] == "offload"
    internal = merged_values(*variant(settings["staging"], internal=True))["proxy"]["service"]["annotations"]
    assert internal["service.beta.kubernetes.io/aws-load-balancer-internal"] == "true"


def test_logins(settings: dict[str, StackSettings]) -> None:
    staging_lab, prod_lab = hub_labs(settings["staging"])[0], hub_labs(settings["prod"])[0]
    shared = merged_values(settings["staging"], staging_lab)["hub"]["config"]
    assert shared["JupyterHub"]["authenticator_class"] == "shared-password"
    assert shared["Authenticator"]["admin_users"] == ["instructor"]
    assert set(shared["SharedPasswordAuthenticator"]) == {"user_password", "admin_password"}
    github = merged_values(settings["prod"], prod_lab)["hub"]["config"]
    assert github["JupyterHub"]["authenticator_class"] == "github"
    assert github["GitHubOAuthenticator"]["allowed_organizations"] == ["example-org:vision-lab"]
    assert (
        github["GitHubOAuthenticator"]["oauth_callback_url"] == "https://vision-lab.hub.example.org/hub/oauth_callback"
    )
    oidc = merged_values(*variant(settings["staging"], auth=OIDC_AUTH, hostname="hub.example.org"))["hub"]["config"]
    assert oidc["JupyterHub"]["authenticator_class"] == "generic-oauth"
    assert oidc["GenericOAuthenticator"]["allowed_groups"] == ["learners"]
    # Never an authenticator that takes any password (the chart's default is `dummy`).
    for _, stack_settings, lab in every_hub(settings):
        config = merged_values(stack_settings, lab)["hub"]["config"]
        assert config["JupyterHub"]["authenticator_class"] in ("shared-password", "github", "generic-oauth")


# --- profiles ------------------------------------------------------------------------------------------


def test_one_gpu_profile_per_reachable_pool_and_a_cpu_profile(settings: dict[str, StackSettings]) -> None:
    prod = settings["prod"]
    lab = hub_labs(prod)[0]
    assert lab.hub is not None
    # prod's vision-lab hub names its pools (its 3h notebooks fit only t4-shared's and l4-slice's drain time).
    slugs = [p.slug for p in hub_profiles.profiles(prod.resolved.hub_pools(lab.hub))]
    assert slugs == ["gpu-t4-shared", "gpu-l4-slice", "cpu"]
    # Without `pools`: every pool (a 1h notebook fits both pools' terminationGracePeriod).
    every, every_lab = variant(prod, pools=None, maxHours=1)
    assert every_lab.hub is not None
    slugs = [p.slug for p in hub_profiles.profiles(every.resolved.hub_pools(every_lab.hub))]
    assert slugs == [*(f"gpu-{pool.name}" for pool in prod.karpenter.node_pools), "cpu"]


def test_profile_names_say_what_a_slot_is(settings: dict[str, StackSettings]) -> None:
    lab = hub_labs(settings["staging"])[0]
    assert lab.hub is not None
    gpu = hub_profiles.profiles(settings["staging"].resolved.hub_pools(lab.hub))[0]
    # g4dn: one T4 (16 GiB) shared by 3 time-slicing replicas: a fair share of 5461 MiB, which nothing enforces.
    assert gpu.display_name == "Shared T4, time-sliced — about 5.3 GB GPU memory, not fenced: shared with 2 others"


def test_a_gpu_profile_fits_one_slot_of_the_pools_smallest_node(settings: dict[str, StackSettings]) -> None:
    for stack_settings in settings.values():
        for lab in hub_labs(stack_settings):
            assert lab.hub is not None
            offered = stack_settings.resolved.hub_pools(lab.hub)
            wanted = lab.hub.pools
            assert [o.name for o in offered] == [
                p.name for p in stack_settings.karpenter.node_pools if wanted is None or p.name in wanted
            ]
            for pool_offer in offered:
                pool = pool_offer.settings
                profile = hub_profiles.gpu_profile(pool_offer)
                assert profile.shape == pool_offer.warm_slot_shape  # the warm headroom's slot
                for instance_type in pool.selected_instance_types:
                    room = pool_offer.node(instance_type).allocatable
                    slots = pool_offer.node(instance_type).slots
                    assert slots * profile.shape.cpu_millicores <= room.cpu_millicores, instance_type
                    assert slots * profile.shape.memory_mib <= room.memory_mib, instance_type
                    assert gpu_catalog.gpu_count(instance_type) >= 1


def guard(
    pod: dict[str, Any], namespace: dict[str, Any], limit_ranges: list[dict[str, Any]]
) -> apiserver_model.Outcome:
    """The GPU guard's verdict on creating `pod`, as the API server sees it after defaulting and LimitRanger."""
    policy = admission_policy()
    binding = next(o for o in admission_objects() if o["spec"].get("policyName") == policy["metadata"]["name"])
    request = apiserver_model.Request(pod, namespace, "CREATE", "", None, limit_ranges)
    return apiserver_model.admit(request, policy, binding)


# --- the notebook Pods ----------------------------------------------------------------------------------


def notebook_cases(settings: dict[str, StackSettings]) -> list[tuple[str, StackSettings, LabSettings, Any]]:
    cases = []
    for case, stack_settings, lab in every_hub(settings):
        assert lab.hub is not None
        cases += [
            (f"{case}-{p.slug}", stack_settings, lab, p)
            for p in hub_profiles.profiles(stack_settings.resolved.hub_pools(lab.hub))
        ]
    return cases


def test_notebook_pods_equal_what_kubespawner_builds(settings: dict[str, StackSettings]) -> None:
    cases = notebook_cases(settings)
    assert len(cases) >= 6
    for case, stack_settings, lab, profile in cases:
        values = without_nulls(merged_values(stack_settings, lab))
        pod, spawn_time = spawned_pod(
            values, namespace=hub_namespace.hub_namespace(lab.name), release=jupyterhub_chart.HUB_RELEASE, profile=profile.slug,
            username=hub_notebook_pod.EXAMPLE_LEARNER,
        )  # fmt: skip
        container = pod["spec"]["containers"][0]
        assert {"JUPYTERHUB_API_TOKEN", "JUPYTERHUB_USER"} <= set(spawn_time)
        container["env"] = [e for e in container["env"] if e["name"] not in spawn_time]
        rendered = hub_notebook_pod.notebook_pod(lab, profile)
        assert rendered["metadata"].pop("namespace") == lab.name  # the API path carries it, not make_pod
        assert rendered == pod, case


def test_the_kubespawner_comparison_is_not_vacuous(settings: dict[str, StackSettings]) -> None:
    """A value the renderer ignores shows up: kubespawner builds another pod."""
    staging = settings["staging"]
    lab = hub_labs(staging)[0]
    values = without_nulls(merged_values(staging, lab))
    values["singleuser"]["extraLabels"]["course"] = "intro"
    release_namespace = hub_namespace.hub_namespace(lab.name)
    pod, _ = spawned_pod(
        values, namespace=release_namespace, release=jupyterhub_chart.HUB_RELEASE, profile="cpu", username="learner"
    )
    assert pod["metadata"]["labels"]["course"] == "intro"


def test_synth_writes_every_notebook_pod(plans: dict[str, Plan], settings: dict[str, StackSettings]) -> None:
    for stack in STACKS:
        written = {name: obj for name, obj in plans[stack].manifests.items() if "-notebook-" in name}
        assert written == hub_notebook_pod.notebook_pods(settings[stack].labs, settings[stack].resolved), stack
        for lab in hub_labs(settings[stack]):
            assert lab.hub is not None
            for profile in hub_profiles.profiles(settings[stack].resolved.hub_pools(lab.hub)):
                assert f"pod-{lab.name}-notebook-{profile.slug}.yaml" in written


def test_notebook_pods_are_valid_restricted_and_admitted_by_the_gpu_guard(settings: dict[str, StackSettings]) -> None:
    for case, stack_settings, lab, profile in notebook_cases(settings):
        pod = hub_notebook_pod.notebook_pod(lab, profile)
        assert validate_core_object(pod, stack_settings.kubernetes_version) == [], case
        assert restricted_problems(pod["spec"]) == [], case
        namespace, *objects = lab_objects(lab, stack_settings.kubernetes_version)
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        outcome = guard(pod, namespace, [o for o in objects if o["kind"] == "LimitRange"])
        assert (outcome.invalid, outcome.denied) == ([], []), case


def test_the_pod_checks_are_not_vacuous(settings: dict[str, StackSettings]) -> None:
    """What the chart's cloud-metadata blocker would add is refused by restricted; a GPU pod elsewhere by the guard."""
    staging = settings["staging"]
    lab = hub_labs(staging)[0]
    assert lab.hub is not None
    pod = hub_notebook_pod.notebook_pod(lab, hub_profiles.profiles(staging.resolved.hub_pools(lab.hub))[0])
    blocker = {"name": "block-cloud-metadata", "securityContext": {"privileged": True, "runAsUser": 0,
               "capabilities": {"add": ["NET_ADMIN"]}}}  # fmt: skip
    assert restricted_problems({**pod["spec"], "initContainers": [blocker]})
    other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-apps", "labels": {}}}
    assert guard(pod, other, []).denied


def test_gpu_notebooks_take_one_slot_on_their_pool_and_cpu_notebooks_none(settings: dict[str, StackSettings]) -> None:
    for case, stack_settings, lab, profile in notebook_cases(settings):
        pod = hub_notebook_pod.notebook_pod(lab, profile)
        spec = pod["spec"]
        (container,) = spec["containers"]
        resources = container["resources"]
        assert pod["metadata"]["annotations"][DO_NOT_DISRUPT_ANNOTATION] == "true"
        assert resources["requests"] == resources["limits"], case
        if profile.gpu:
            assert resources["limits"][GPU_RESOURCE] == "1"
            assert spec["nodeSelector"] == {NODEPOOL_LABEL: profile.pool}
            assert any(tolerates(t, GPU_TAINT) for t in spec["tolerations"])
            sharing = stack_settings.resolved.pool(profile.pool).sharing
            assert pod_can_land_on(spec, {NODEPOOL_LABEL: profile.pool, "gpu-platform.io/gpu-sharing": sharing.profile})
        else:
            # The CPU user pool's nodes: their label passes the selector, their taint is tolerated, a GPU's is not.
            user_pool = cpu_user_pool_manifests.node_pool(stack_settings.karpenter.cpu_user_pool)
            template = user_pool["spec"]["template"]
            assert GPU_RESOURCE not in resources["limits"], case
            assert pod_can_land_on(spec, template["metadata"]["labels"]), case
            assert all(any(tolerates(t, taint) for t in spec["tolerations"]) for taint in template["spec"]["taints"])
            assert not any(tolerates(t, GPU_TAINT) for t in spec["tolerations"]), case


# --- the quota: gpuSlots notebooks, not one more ------------------------------------------------------


def quota_admits(quota: dict[str, Any], pods: list[dict[str, Any]]) -> int:
    """How many of `pods`, created in order, the ResourceQuota admits (requests summed per resource)."""
    hard = {key.removeprefix("requests."): quantity.parse(value) for key, value in quota["spec"]["hard"].items()}
    used = dict.fromkeys(hard, Decimal(0))
    admitted = 0
    for pod in pods:
        requests: dict[str, Decimal] = {}
        for container in pod["spec"]["containers"]:
            for resource, amount in container["resources"]["requests"].items():
                requests[resource] = requests.get(resource, Decimal(0)) + quantity.parse(str(amount))
        if any(used[r] + requests.get(r, Decimal(0)) > hard[r] for r in hard):
            break
        for r in hard:
            used[r] += requests.get(r, Decimal(0))
        admitted += 1
    return admitted


def test_the_quota_admits_gpu_slots_gpu_notebooks_and_refuses_one_more(settings: dict[str, StackSettings]) -> None:
    for stack_settings in settings.values():
        for lab in hub_labs(stack_settings):
            assert lab.hub is not None
            quota = lab_resource_quota(lab)
            # The hub and the proxy run first, at the LimitRange's default requests (the chart sets none).
            core = {"spec": {"containers": [{"resources": {"requests": dict(CONTAINER_DEFAULT_REQUESTS)}}]}}
            for profile in hub_profiles.profiles(stack_settings.resolved.hub_pools(lab.hub)):
                if profile.gpu:
                    pod = hub_notebook_pod.notebook_pod(lab, profile)
                    pods = [core, core, *[pod] * (lab.gpu_slots + 1)]
                    assert quota_admits(quota, pods) == 2 + lab.gpu_slots, profile.slug


# --- GPU nodes: image pre-pulled, metadata out of reach ---------------------------------------------------


def test_gpu_nodes_pre_pull_the_notebook_image(plans: dict[str, Plan], settings: dict[str, StackSettings]) -> None:
    for stack in STACKS:
        images = settings[stack].hub_images
        assert images
        gpu_pools = {pool.name for pool in settings[stack].karpenter.node_pools}
        node_classes = [n for n in plans[stack].objects("EC2NodeClass") if n["metadata"]["name"] in gpu_pools]
        assert node_classes
        for node_class in node_classes:
            assert all(image in node_class["spec"]["userData"] for image in images), stack


def test_every_gpu_node_keeps_imds_one_hop_away(plans: dict[str, Plan], managed_group_plan: Plan) -> None:
    for plan in (*plans.values(), managed_group_plan):
        for node_class in plan.objects("EC2NodeClass"):
            options = node_class["spec"]["metadataOptions"]
            assert options["httpTokens"] == "required" and options["httpPutResponseHopLimit"] == IMDS_HOP_LIMIT == 1
        for template in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
            options = template["inputs"]["metadataOptions"]
            assert options["httpTokens"] == "required" and options["httpPutResponseHopLimit"] == 1


def _egress_reaches_metadata(rule: dict[str, Any]) -> bool:
    """Whether one egress rule lets a pod open TCP 80 on 169.254.169.254 (the metadata service's port)."""
    ports = rule.get("ports")
    if ports and not any(p.get("port") in (None, 80) and p.get("protocol", "TCP") == "TCP" for p in ports):
        return False
    peers = rule.get("to")
    if not peers:
        return True
    for peer in peers:
        block = peer.get("ipBlock")
        excepted = any(INSTANCE_METADATA_IP in e or e == "169.254.0.0/16" for e in (block or {}).get("except", []))
        if block and not excepted and ipaddress.ip_address(INSTANCE_METADATA_IP) in ipaddress.ip_network(block["cidr"]):
            return True
    return False  # pod/namespace selectors select pods, never the node's link-local metadata service


def test_no_lab_egress_reaches_the_metadata_service(settings: dict[str, StackSettings]) -> None:
    for stack_settings in settings.values():
        for lab in stack_settings.labs:
            policies = [o for o in lab_objects(lab, stack_settings.kubernetes_version) if o["kind"] == "NetworkPolicy"]
            egress = [rule for p in policies if "Egress" in p["spec"]["policyTypes"] for rule in p["spec"]["egress"]]
            assert egress and not any(_egress_reaches_metadata(rule) for rule in egress), lab.name
    assert _egress_reaches_metadata({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]})
    assert _egress_reaches_metadata({"ports": [{"port": 80, "protocol": "TCP"}]})


# --- EFS home directories ----------------------------------------------------------------------------------


def test_home_directories_on_encrypted_efs_reachable_from_nodes_only(plans: dict[str, Plan]) -> None:
    for stack, plan in plans.items():
        (file_system,) = plan.of_type("aws:efs/fileSystem:FileSystem")
        assert file_system["inputs"]["encrypted"] is True
        targets = plan.of_type("aws:efs/mountTarget:MountTarget")
        assert len(targets) == len(plan.of_type("aws:ec2/subnet:Subnet")) // 2, stack  # one per private subnet
        (group,) = [g for g in plan.of_type("aws:ec2/securityGroup:SecurityGroup") if g["name"].endswith("-efs")]
        (rule,) = group["inputs"]["ingress"]
        assert (rule["fromPort"], rule["toPort"], rule["protocol"]) == (NFS_PORT, NFS_PORT, "tcp")
        assert "cidrBlocks" not in rule and len(rule["securityGroups"]) == 1
        assert all(t["inputs"]["securityGroups"] for t in targets)


def test_efs_csi_add_on_gets_its_role_through_pod_identity(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        (addon,) = [a for a in plan.of_type("aws:eks/addon:Addon") if a["inputs"]["addonName"] == EFS_CSI_ADDON]
        associations = plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        (association,) = [
            a for a in associations if a["inputs"]["serviceAccount"] == EFS_CSI_CONTROLLER_SERVICE_ACCOUNT
        ]
        assert association["inputs"]["namespace"] == SYSTEM_NAMESPACE
        assert association["urn"] in addon["dependencies"]


def test_one_home_storage_class_per_hub_lab(plans: dict[str, Plan], settings: dict[str, StackSettings]) -> None:
    for stack, plan in plans.items():
        classes = [c for c in plan.objects("StorageClass") if c["provisioner"] == EFS_CSI_PROVISIONER]
        assert sorted(c["metadata"]["name"] for c in classes) == sorted(
            hub_storage.storage_class_name(lab) for lab in hub_labs(settings[stack])
        )
        for storage_class in classes:
            assert validate_core_object(storage_class, settings[stack].kubernetes_version) == []
            parameters = storage_class["parameters"]
            assert parameters["provisioningMode"] == "efs-ap"
            assert (parameters["uid"], parameters["gid"]) == (
                str(hub_values.NOTEBOOK_UID),
                str(hub_values.NOTEBOOK_FS_GID),
            )
            assert parameters["basePath"] == "/" + storage_class["metadata"]["labels"]["gpu-platform.io/lab"]


def test_each_hub_chart_goes_to_its_hub_namespace_after_the_labs_fences(
    plans: dict[str, Plan], settings: dict[str, StackSettings]
) -> None:
    for stack, plan in plans.items():
        charts = [c for c in plan.helm if c["chart"] == "jupyterhub"]
        labs = {hub_namespace.hub_namespace(lab.name): lab.name for lab in hub_labs(settings[stack])}
        assert sorted(c["namespace"] for c in charts) == sorted(labs)
        for chart in charts:
            assert chart["version"] == "4.4.0" and chart["repository"] == "https://hub.jupyter.org/helm-chart/"
            resource = next(r for r in plan.resources if r["urn"] == chart["urn"])
            lab = labs[chart["namespace"]]
            fences = [r["urn"] for r in plan.resources if "gpu-platform:labs:Labs$kubernetes:" in r["urn"]
                      and lab in (r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])]  # fmt: skip
            assert len(fences) == 5  # namespace, quota, LimitRange, two NetworkPolicies
            assert fences and set(fences) <= set(resource["dependencies"]), stack
            # The hub's namespace, and in the lab's the spawner's Role, the notebooks' Secret and the hub policies.
            metadata = {r["urn"]: r["inputs"].get("metadata") or {} for r in plan.resources
                        if "gpu-platform:hub:LabHubs$kubernetes:" in r["urn"] and "gpu-idle" not in r["urn"]}  # fmt: skip
            hub_side = [urn for urn, m in metadata.items()
                        if m.get("name") == chart["namespace"] or m.get("namespace") in (lab, chart["namespace"])]  # fmt: skip
            assert len(hub_side) == 7, hub_side  # namespace, LimitRange, Secret, Role, RoleBinding, 2 NetworkPolicies
            assert set(hub_side) <= set(resource["dependencies"]), stack
            assert chart["values"]["hub"]["config"]["KubeSpawner"]["namespace"] == lab
            config = chart["values"]["hub"]["config"]
            secrets = [value for section in config.values() for key, value in section.items() if key in SECRET_TRAITS]
            assert secrets and set(secrets) == {"[secret]"}


# --- the hub's database: a block volume, never NFS ---------------------------------------------------------------


def test_hub_databases_sit_on_encrypted_gp3_ebs_not_on_efs(
    plans: dict[str, Plan], settings: dict[str, StackSettings]
) -> None:
    for stack, plan in plans.items():
        (storage_class,) = [c for c in plan.objects("StorageClass") if c["provisioner"] == EBS_CSI_PROVISIONER]
        assert validate_core_object(storage_class, settings[stack].kubernetes_version) == []
        assert storage_class["parameters"]["type"] == "gp3" and storage_class["parameters"]["encrypted"] == "true"
        assert storage_class["volumeBindingMode"] == "WaitForFirstConsumer"  # EBS is zonal: where the hub lands
        for chart in [c for c in plan.helm if c["chart"] == "jupyterhub"]:
            db = chart["values"]["hub"]["db"]
            assert db == {"type": "sqlite-pvc", "pvc": {"storageClassName": storage_class["metadata"]["name"]}}
            resource = next(r for r in plan.resources if r["urn"] == chart["urn"])
            (class_urn,) = [r["urn"] for r in plan.resources if r["urn"].endswith("StorageClass::hubs-db")]
            assert class_urn in resource["dependencies"], stack


def test_ebs_csi_add_on_gets_its_role_through_pod_identity(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        (addon,) = [a for a in plan.of_type("aws:eks/addon:Addon") if a["inputs"]["addonName"] == EBS_CSI_ADDON]
        associations = plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        (association,) = [
            a for a in associations if a["inputs"]["serviceAccount"] == EBS_CSI_CONTROLLER_SERVICE_ACCOUNT
        ]
        assert association["inputs"]["namespace"] == SYSTEM_NAMESPACE
        assert association["urn"] in addon["dependencies"]
        (attachment,) = [
            a for a in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if "ebs-csi" in a["urn"]
        ]
        assert attachment["inputs"]["policyArn"].endswith(":iam::aws:policy/service-role/AmazonEBSCSIDriverPolicyV2")


def test_sqlite_memory_only_when_the_operator_asks(settings: dict[str, StackSettings]) -> None:
    staging = settings["staging"]
    assert all(lab.hub is None or lab.hub.database == "sqliteVolume" for lab in staging.labs)  # the default
    memory, lab = variant(staging, database="sqliteMemory")
    assert lab.hub is not None
    assert merged_values(memory, lab)["hub"]["db"]["type"] == "sqlite-memory"
    assert not hub_database.needs_block_volumes(memory.labs)  # no EBS add-on, no StorageClass
    assert hub_database.needs_block_volumes(staging.labs)


def test_learners_sqlite_files_stay_off_the_efs_home(settings: dict[str, StackSettings]) -> None:
    """IPython's history, the file-id database and the signatures database: configured onto the container's disk."""
    for case, stack_settings, lab, profile in notebook_cases(settings):
        files = merged_values(stack_settings, lab)["singleuser"]["extraFiles"]
        paths = [
            files["ipython-sqlite"]["data"]["HistoryManager"]["hist_file"],
            files["jupyter-server-sqlite"]["data"]["BaseFileIdManager"]["db_path"],
            files["jupyter-server-sqlite"]["data"]["NotebookNotary"]["db_file"],
        ]
        assert all(p.startswith(hub_database.NOTEBOOK_LOCAL_DIR + "/") for p in paths), case
        pod = hub_notebook_pod.notebook_pod(lab, profile)
        mounts = {m["mountPath"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
        assert all(not p.startswith(hub_values.HOME_MOUNT_PATH) and p not in mounts for p in paths), case
        # Each config file is where IPython and jupyter_core look (SYSTEM_CONFIG_DIRS / SYSTEM_CONFIG_PATH).
        assert mounts["/usr/local/etc/ipython/ipython_config.json"]["name"] == "files"
        assert mounts["/usr/local/etc/jupyter/jupyter_server_config.json"]["name"] == "files"
