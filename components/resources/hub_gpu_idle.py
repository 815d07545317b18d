"""The GPU idle reaper's Kubernetes objects (renderers/hub/hub_gpu_idle.reaper_objects) as typed resources.

Two owners call it: the lab's hub for the objects in the hub's namespace (after the namespace), and the
observability component for the Role in the add-on's namespace (after the add-on creates it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.renderers.access.pod_identity import pod_identity_trust_policy
from components.renderers.hub.hub_gpu_idle_metrics import blind_nodes_alarm, metrics_policy

_KINDS: dict[str, Any] = {
    "Role": k8s.rbac.v1.Role,
    "RoleBinding": k8s.rbac.v1.RoleBinding,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
}
_FIELDS = {"metadata": "metadata", "rules": "rules", "roleRef": "role_ref", "subjects": "subjects", "spec": "spec"}


def create_objects(
    name: str,
    objects: Sequence[dict[str, Any]],
    *,
    provider: k8s.Provider,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource],
) -> list[pulumi.CustomResource]:
    """One typed resource per object, named `<name>-<namespace>-<kind>-<object name>`."""
    created = []
    for obj in objects:
        metadata = obj["metadata"]
        fields = {_FIELDS[key]: value for key, value in obj.items() if key in _FIELDS}
        created.append(
            _KINDS[obj["kind"]](
                f"{name}-{metadata['namespace']}-{obj['kind'].lower()}-{metadata['name']}",
                **fields,
                opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
            )
        )
    return created


def metrics_role(
    name: str, *, cluster_name: str, eks_cluster_name: pulumi.Input[str], service_account: tuple[str, str],
    tags: dict[str, str], parent: pulumi.Resource,
) -> list[pulumi.Resource]:  # fmt: skip
    """The hub ServiceAccount's Pod Identity role: PutMetricData into the reaper's namespace, nothing else.
    Returns what the hub pod needs before it starts (the policy and the association)."""
    namespace, account = service_account
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        name,
        assume_role_policy=json.dumps(pod_identity_trust_policy(cluster_name, namespace, account)),
        tags=tags,
        opts=child,
    )
    policy = aws.iam.RolePolicy(name, role=role.id, policy=json.dumps(metrics_policy()), opts=child)
    association = aws.eks.PodIdentityAssociation(
        name, cluster_name=eks_cluster_name, namespace=namespace, service_account=account, role_arn=role.arn,
        tags=tags, opts=child,
    )  # fmt: skip
    return [policy, association]


def blind_nodes_alarm_resource(
    name: str, cluster_name: str, topic: aws.sns.Topic, *, tags: dict[str, str], opts: pulumi.ResourceOptions
) -> aws.cloudwatch.MetricAlarm:
    """The alarm on GPU nodes without per-process samples, to the GPU alarm topic."""
    return aws.cloudwatch.MetricAlarm(
        name, **blind_nodes_alarm(cluster_name), alarm_actions=[topic.arn], ok_actions=[topic.arn], tags=tags, opts=opts
    )
