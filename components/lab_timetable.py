"""The lab timetable: per pool with sessions, the CronJobs that raise its CapacityBuffer before each class and return it
at the start, with their ServiceAccount and a Role limited to that buffer; the namespace they run in.

Objects come from `components.renderers.timetable.timetable_manifests`; this component only creates them. The NodePool's
budget windows and the terminationGracePeriod rule live with the NodePool (karpenter_manifests, settings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.renderers.timetable import timetable_manifests
from components.settings import StackSettings

_KINDS: dict[str, Any] = {
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "Role": k8s.rbac.v1.Role,
    "RoleBinding": k8s.rbac.v1.RoleBinding,
    "CronJob": k8s.batch.v1.CronJob,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
}


@dataclass(frozen=True)
class LabTimetableArgs:
    settings: StackSettings
    k8s_provider: k8s.Provider
    # Pool name -> its CapacityBuffer (Karpenter.capacity_buffers): a CronJob must find the buffer it patches.
    capacity_buffers: dict[str, pulumi.Resource]


class LabTimetable(pulumi.ComponentResource):
    cronjobs: list[k8s.batch.v1.CronJob]

    def __init__(self, name: str, args: LabTimetableArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:timetable:LabTimetable", name, None, opts)
        settings = args.settings
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        ns_obj = timetable_manifests.namespace(settings.kubernetes_version)
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=ns_obj["metadata"], opts=child)
        in_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        self._create(name, timetable_manifests.network_policy(), in_namespace)
        self.cronjobs = []
        for served in settings.resolved.timetabled:
            pool = served.settings
            created: list[pulumi.Resource] = []
            for obj in timetable_manifests.pool_objects(served):
                # A CronJob runs only with its account and rights in place and the buffer it patches created.
                wait = [namespace] + ([*created, args.capacity_buffers[pool.name]] if obj["kind"] == "CronJob" else [])
                resource = self._create(
                    name, obj, pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=wait))
                )
                if obj["kind"] == "CronJob":
                    self.cronjobs.append(resource)
                else:
                    created.append(resource)
        self.register_outputs({"cronjobs": [job.metadata.name for job in self.cronjobs]})

    def _create(self, name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:
        # Top-level fields as the SDK's keyword arguments (roleRef -> role_ref); nested values stay camelCase.
        body = {
            re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): v for k, v in obj.items() if k not in ("apiVersion", "kind")
        }
        return _KINDS[obj["kind"]](
            f"{name}-{obj['metadata']['namespace']}-{obj['metadata']['name']}", **body, opts=opts
        )
