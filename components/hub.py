"""The labs' JupyterHubs: shared EFS home storage, the EFS CSI add-on, and one zero-to-jupyterhub chart per lab.

Data comes from `components.renderers.hub.hub_values` (chart values, built from `hub_profiles` and `hub_access`)
and `components.renderers.hub.hub_storage` (StorageClass); this component only creates resources. Each chart goes
into its hub's namespace `<lab>-hub` (`renderers.hub_namespace`), where lab members have no rights, and spawns
notebooks into the lab's namespace, after the lab's quota, LimitRange and NetworkPolicies, so every notebook is
admitted under them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from components.facts import jupyterhub_chart
from components.facts.constants import (
    EBS_CSI_ADDON,
    EBS_CSI_ADDON_VERSION,
    EBS_CSI_CONTROLLER_SERVICE_ACCOUNT,
    EBS_CSI_DRIVER_POLICY,
    EFS_CSI_ADDON,
    EFS_CSI_ADDON_VERSION,
    EFS_CSI_CONTROLLER_SERVICE_ACCOUNT,
    EFS_CSI_DRIVER_POLICY,
    JUPYTERHUB_CHART,
    JUPYTERHUB_CHART_REPO,
    JUPYTERHUB_CHART_VERSION,
    NFS_PORT,
    SYSTEM_NAMESPACE,
)
from components.renderers.hub import hub_database, hub_gpu_idle, hub_namespace, hub_storage, hub_values
from components.resources.hub_gpu_idle import create_objects, metrics_role
from components.resources.hub_namespace import create_hub_namespace
from components.resources.pod_identity_role import pod_identity_role
from components.settings import HubGpuIdleSettings, HubSettings, LabSettings, StackSettings

# The authenticator traits holding settings' secrets (HUB_SECRET_FIELDS: password, adminPassword, clientSecret).
SECRET_TRAITS = frozenset({"user_password", "admin_password", "client_secret"})


def gpu_idle_for(settings: StackSettings, hub: HubSettings) -> HubGpuIdleSettings:
    """A hub's GPU idle reaper settings; off without the platform's dcgm-exporter, its only per-pod GPU signal."""
    return hub.gpu_idle if settings.observability.gpu_metrics else hub.gpu_idle.model_copy(update={"enabled": False})


def reaper_values(settings: StackSettings, lab: LabSettings) -> dict[str, Any]:
    """What the lab's GPU idle reaper adds to its chart values, with the stack's CloudWatch target."""
    assert lab.hub is not None
    metrics = hub_gpu_idle.ReaperMetrics(settings.cluster_name, settings.region, lab.name, lab.hub.max_hours)
    return hub_gpu_idle.lab_values(gpu_idle_for(settings, lab.hub), lab, metrics, settings.resolved.hub_pools(lab.hub))


def any_reaper(settings: StackSettings) -> bool:
    """Whether some lab's hub runs the GPU idle reaper (then the dashboard and alarms show it)."""
    return any(lab.hub is not None and gpu_idle_for(settings, lab.hub).enabled for lab in settings.labs)


@dataclass(frozen=True)
class LabHubsArgs:
    settings: StackSettings
    k8s_provider: k8s.Provider
    eks_cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Output[list[str]]
    node_security_group_id: pulumi.Input[str]
    # The add-on's controller needs a node and its Pod Identity credentials when it starts.
    system_node_group: eks.ManagedNodeGroup
    pod_identity_agent: aws.eks.Addon
    lab_namespaces: dict[str, k8s.core.v1.Namespace]
    lab_objects: dict[str, list[pulumi.CustomResource]]


class LabHubs(pulumi.ComponentResource):
    file_system: aws.efs.FileSystem
    charts: dict[str, k8s.helm.v4.Chart]

    def __init__(self, name: str, args: LabHubsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:hub:LabHubs", name, None, opts)
        settings = args.settings
        self.file_system = aws.efs.FileSystem(
            f"{name}-home",
            encrypted=True,
            throughput_mode="elastic",
            tags={**settings.tags, "Name": f"{settings.cluster_name}-hub-home"},
            opts=pulumi.ResourceOptions(parent=self, protect=settings.protect_resources),
        )
        mount_targets = self._mount_targets(name, args)
        efs_csi = self._efs_csi_driver(name, args, mount_targets)
        database_storage = self._database_storage(name, args)
        self.charts = {}
        for lab in hub_storage.hub_labs(settings.labs):
            self.charts[lab.name] = self._lab_hub(name, args, lab, efs_csi, database_storage)
        self.register_outputs({"fileSystemId": self.file_system.id, "hubs": list(self.charts)})

    def _subnet_count(self, settings: StackSettings) -> int:
        existing = settings.network.existing
        return len(existing.private_subnet_ids) if existing is not None else settings.network.availability_zones

    def _mount_targets(self, name: str, args: LabHubsArgs) -> list[aws.efs.MountTarget]:
        """One mount target per private subnet, reachable on NFS from the node security group only."""
        settings = args.settings
        group = aws.ec2.SecurityGroup(
            f"{name}-efs",
            vpc_id=args.vpc_id,
            description="EFS mount targets of the hub home directories: NFS from cluster nodes only",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description="NFS from the node security group of the cluster",
                    protocol="tcp",
                    from_port=NFS_PORT,
                    to_port=NFS_PORT,
                    security_groups=[args.node_security_group_id],
                )
            ],
            egress=[],
            tags={**settings.tags, "Name": f"{settings.cluster_name}-hub-efs"},
            opts=pulumi.ResourceOptions(parent=self),
        )
        return [
            aws.efs.MountTarget(
                f"{name}-home-{index}",
                file_system_id=self.file_system.id,
                subnet_id=args.private_subnet_ids[index],
                security_groups=[group.id],
                opts=pulumi.ResourceOptions(parent=self),
            )
            for index in range(self._subnet_count(settings))
        ]

    def _efs_csi_driver(self, name: str, args: LabHubsArgs, mount_targets: list[aws.efs.MountTarget]) -> aws.eks.Addon:
        """The EFS CSI driver add-on; its controller creates access points with a role handed out by Pod Identity."""
        return self._csi_addon(
            f"{name}-efs-csi", "efs-csi", args, (EFS_CSI_ADDON, EFS_CSI_ADDON_VERSION), EFS_CSI_CONTROLLER_SERVICE_ACCOUNT,
            EFS_CSI_DRIVER_POLICY, after=mount_targets,
        )  # fmt: skip

    def _database_storage(self, name: str, args: LabHubsArgs) -> list[pulumi.Resource]:
        """The EBS CSI driver add-on and the hubs' database StorageClass, when some hub keeps its database on a
        volume; what each such hub's chart must wait for."""
        if not hub_database.needs_block_volumes(args.settings.labs):
            return []
        addon = self._csi_addon(
            f"{name}-ebs-csi", "ebs-csi", args, (EBS_CSI_ADDON, EBS_CSI_ADDON_VERSION), EBS_CSI_CONTROLLER_SERVICE_ACCOUNT,
            EBS_CSI_DRIVER_POLICY, after=[],
        )  # fmt: skip
        manifest = hub_database.database_storage_class()
        return [self._storage_class(f"{name}-db", manifest, args.k8s_provider, addon)]

    def _storage_class(
        self, name: str, manifest: Any, provider: k8s.Provider, driver: pulumi.Resource
    ) -> k8s.storage.v1.StorageClass:
        """A StorageClass from its rendered manifest (a dict, or an Output of one), after its CSI driver's add-on."""
        return k8s.storage.v1.StorageClass(
            name,
            metadata=manifest["metadata"],
            provisioner=manifest["provisioner"],
            parameters=manifest["parameters"],
            reclaim_policy=manifest["reclaimPolicy"],
            volume_binding_mode=manifest["volumeBindingMode"],
            allow_volume_expansion=manifest["allowVolumeExpansion"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[driver]),
        )

    def _csi_addon(
        self,
        name: str,
        role_suffix: str,
        args: LabHubsArgs,
        addon: tuple[str, str],
        service_account: str,
        managed_policy: str,
        after: Sequence[pulumi.Resource],
    ) -> aws.eks.Addon:
        """A CSI driver EKS add-on whose controller gets its AWS role `<cluster>-<role_suffix>` through Pod Identity
        (logical names: `<name>` for the role, `<name>-driver` for the add-on)."""
        settings = args.settings
        controller = pod_identity_role(
            name,
            role_suffix=role_suffix,
            cluster_name=settings.cluster_name,
            eks_cluster_name=args.eks_cluster_name,
            service_account=(SYSTEM_NAMESPACE, service_account),
            managed_policy=managed_policy,
            tags=settings.tags,
            parent=self,
        )
        addon_name, version = addon
        return aws.eks.Addon(
            f"{name}-driver",
            cluster_name=args.eks_cluster_name,
            addon_name=addon_name,
            addon_version=version,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=settings.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[args.system_node_group, args.pod_identity_agent, *controller.ready, *after],
            ),
        )

    def _lab_hub(
        self,
        name: str,
        args: LabHubsArgs,
        lab: LabSettings,
        efs_csi: aws.eks.Addon,
        database_storage: list[pulumi.Resource],
    ) -> k8s.helm.v4.Chart:
        settings = args.settings
        provider = args.k8s_provider
        manifest = self.file_system.id.apply(lambda fs_id: hub_storage.home_storage_class(lab, fs_id))
        storage_class = self._storage_class(f"{name}-{lab.name}-home", manifest, provider, efs_csi)
        assert lab.hub is not None
        pools = settings.resolved.hub_pools(lab.hub)
        gpu_idle = gpu_idle_for(settings, lab.hub)
        values = _with_secrets(
            hub_gpu_idle.with_reaper(
                hub_values.chart_values(lab, hub_storage.storage_class_name(lab), pools), reaper_values(settings, lab)
            )
        )
        hub_ns = hub_namespace.hub_namespace(lab.name)
        lab_namespace = args.lab_namespaces[lab.name]
        namespace_ready = create_hub_namespace(
            name, lab, settings.kubernetes_version, provider=provider, parent=self, lab_namespace=lab_namespace
        )
        reaper_ready = []
        if gpu_idle.enabled:
            reaper_ready = metrics_role(
                f"{name}-{lab.name}-gpu-idle-metrics",
                cluster_name=settings.cluster_name,
                eks_cluster_name=args.eks_cluster_name,
                service_account=(hub_ns, jupyterhub_chart.HUB_SERVICE_ACCOUNT),
                tags=settings.tags,
                parent=self,
            )
        # The reaper's objects in the hub's and the lab's namespace; its Role in the add-on's comes with the add-on.
        objects = hub_gpu_idle.reaper_objects(gpu_idle, hub_ns, lab.name)
        mine = [obj for obj in objects if obj["metadata"]["namespace"] in (hub_ns, lab.name)]
        create_objects(f"{name}-gpu-idle", mine, provider=provider, parent=self, depends_on=namespace_ready[:1])
        return k8s.helm.v4.Chart(
            f"{name}-{lab.name}",
            name=jupyterhub_chart.HUB_RELEASE,
            chart=JUPYTERHUB_CHART,
            version=JUPYTERHUB_CHART_VERSION,
            repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=JUPYTERHUB_CHART_REPO),
            namespace=hub_ns,
            values=values,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # The hub's namespace and the lab's fences first: every notebook is admitted under the lab's quota,
                # LimitRange and policies; the StorageClasses before the learners' and the hub's database PVCs ask
                # for them; the reaper's credentials (Pod Identity) before the hub pod starts.
                depends_on=[
                    lab_namespace,
                    *namespace_ready,
                    *args.lab_objects[lab.name],
                    storage_class,
                    *reaper_ready,
                    *(database_storage if hub_database.on_volume(lab.hub) else []),
                ],
            ),
        )


def _with_secrets(values: dict[str, Any]) -> dict[str, Any]:
    """The chart values with the authenticator's passwords and client secret as Pulumi secrets (encrypted in state)."""
    config = values["hub"]["config"]
    for section in config.values():
        for trait in SECRET_TRAITS & set(section):
            section[trait] = pulumi.Output.secret(section[trait])
    return values
