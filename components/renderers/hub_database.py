"""Where a lab's hub keeps its state, as plain data: its SQLite database on a block volume, never on NFS.

JupyterHub's docs say SQLite must not be used on NFS (jupyterhub/jupyterhub docs/source/explanation/database.md;
"database is locked": jupyterhub/zero-to-jupyterhub-k8s#872). So the chart's `hub.db` (type `sqlite-pvc`, the
chart's jupyterhub_config.py @ 4.4.0 then sets `db_url sqlite:///jupyterhub.sqlite` in the PVC's mount) asks for an
encrypted gp3 EBS volume from the EBS CSI driver (kubernetes-sigs/aws-ebs-csi-driver docs/parameters.md @ v1.64.0:
`type`, `encrypted`, `csi.storage.k8s.io/fstype`). EBS volumes live in one zone: `WaitForFirstConsumer` creates
the volume where the hub pod is first scheduled, and the scheduler keeps the hub in that zone afterwards.
`sqlite-memory` only when the operator sets `hub.database: sqliteMemory`.

The learners' own SQLite files stay off the EFS homes too: see `notebook_sqlite_env`.

Pure: settings in, dicts out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from components.facts.constants import EBS_CSI_PROVISIONER, PROJECT
from components.settings import HubSettings, LabSettings

Manifest = dict[str, Any]

# One StorageClass for every hub's database (cluster-scoped); each hub's PVC is its own volume.
HUB_DB_STORAGE_CLASS: Final = "hub-db"
# The notebook container's own writable layer (node-local disk, gone with the pod): not the EFS home.
NOTEBOOK_LOCAL_DIR: Final = "/tmp"


def on_volume(hub: HubSettings) -> bool:
    return hub.database == "sqliteVolume"


def needs_block_volumes(labs: Sequence[LabSettings]) -> bool:
    """Whether any hub keeps its database on a volume (then the EBS CSI add-on and the StorageClass exist)."""
    return any(lab.hub is not None and on_volume(lab.hub) for lab in labs)


def db_values(hub: HubSettings) -> Manifest:
    """The chart's `hub.db`."""
    if not on_volume(hub):
        return {"type": "sqlite-memory"}
    return {"type": "sqlite-pvc", "pvc": {"storageClassName": HUB_DB_STORAGE_CLASS}}


def database_storage_class() -> Manifest:
    """Encrypted gp3 EBS volumes, created in the zone the hub pod lands in, kept when the PVC goes."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": HUB_DB_STORAGE_CLASS, "labels": {"app.kubernetes.io/part-of": PROJECT}},
        "provisioner": EBS_CSI_PROVISIONER,
        "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
