"""Home directories of the labs' hubs on Amazon EFS, as plain data. Pure: no Pulumi import.

One encrypted file system for the cluster, mount targets in the private subnets, NFS allowed only from the node
security group. Each lab gets a StorageClass of the EFS CSI driver that provisions an access point per PVC (one per
learner; the hub's database is on EBS, `hub_database`) under the lab's own base path, owned by the notebook image's user
(kubernetes-sigs/aws-efs-csi-driver v3.4.1, parameters.md in its docs folder: provisioningMode efs-ap, fileSystemId,
directoryPerms, uid, gid, basePath). EFS enforces that identity on every NFS operation through the access point.

A file system holds at most 10,000 access points (the EFS API reference, CreateAccessPoint: "A file system can have
a maximum of 10,000 access points unless you request an increase"; the EFS CSI driver follows it since v2.3.1,
kubernetes-sigs/aws-efs-csi-driver#1806): one home each, so that many learners across all hubs.
"""

from __future__ import annotations

from typing import Any, Final

from components.facts.constants import EFS_CSI_PROVISIONER, PROJECT
from components.renderers.hub.hub_values import NOTEBOOK_FS_GID, NOTEBOOK_UID
from components.settings import LabSettings

Manifest = dict[str, Any]

ACCESS_POINTS_PER_FILE_SYSTEM: Final = 10_000
# Owner-only home directories: learners of one lab never read each other's files.
HOME_DIRECTORY_PERMS: Final = "700"


def storage_class_name(lab: LabSettings) -> str:
    return f"{lab.name}-home"


def home_storage_class(lab: LabSettings, file_system_id: str) -> Manifest:
    """The lab's StorageClass: an EFS access point per PVC under /<lab>, kept when the PVC goes (homes survive)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": storage_class_name(lab),
            "labels": {"app.kubernetes.io/part-of": PROJECT, "gpu-platform.io/lab": lab.name},
        },
        "provisioner": EFS_CSI_PROVISIONER,
        "parameters": {
            "provisioningMode": "efs-ap",
            "fileSystemId": file_system_id,
            "directoryPerms": HOME_DIRECTORY_PERMS,
            "uid": str(NOTEBOOK_UID),
            "gid": str(NOTEBOOK_FS_GID),
            "basePath": f"/{lab.name}",
        },
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": False,
    }
