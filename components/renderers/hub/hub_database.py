"""Where a lab's hub keeps its state, as plain data: its SQLite database on a block volume, never on NFS.

JupyterHub's docs say SQLite must not be used on NFS (jupyterhub/jupyterhub docs/source/explanation/database.md;
"database is locked": jupyterhub/zero-to-jupyterhub-k8s#872). So the chart's `hub.db` (type `sqlite-pvc`, the
chart's jupyterhub_config.py @ 4.4.0 then sets `db_url sqlite:///jupyterhub.sqlite` in the PVC's mount) asks for an
encrypted gp3 EBS volume from the EBS CSI driver (kubernetes-sigs/aws-ebs-csi-driver @ v1.64.0, parameters.md in
its docs folder: `type`, `encrypted`, `csi.storage.k8s.io/fstype`). EBS volumes live in one zone: `WaitForFirstConsumer` creates
the volume where the hub pod is first scheduled, and the scheduler keeps the hub in that zone afterwards.
`sqlite-memory` only when the operator sets `hub.database: sqliteMemory`.

The learners' own SQLite files stay off the EFS homes too (`notebook_sqlite_files`): by default IPython's history,
jupyter_server_fileid's file ids and nbformat's notebook signatures live under the home directory
(2i2c-org/infrastructure#2245), so the chart's `singleuser.extraFiles` mounts two config files that move them to the
container's own disk, in directories both programs read at start (the config search paths at the versions the
pinned quay.io/jupyter/pytorch-notebook:cuda12-python-3.12 image resolves: IPython 9.x
`IPython/core/application.py` SYSTEM_CONFIG_DIRS; jupyter_core 5.x `jupyter_core/paths.py` SYSTEM_CONFIG_PATH).
The history lasts as long as the pod; the file ids and trust signatures are rebuilt on demand.

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


def notebook_sqlite_files() -> Manifest:
    """The chart's `singleuser.extraFiles`: each learner's SQLite files on the container's disk, not the EFS home.

    - `HistoryManager.hist_file` (IPython/core/history.py, IPython 9.x): the history of every kernel and shell,
      read from `ipython_config` in /usr/local/etc/ipython by every IPython application, the kernel included.
    - `BaseFileIdManager.db_path` (jupyter_server_fileid/manager.py, 0.10.0: absolute or `:memory:`) and
      `NotebookNotary.db_file` (nbformat/sign.py, 5.x), read from `jupyter_server_config` in
      /usr/local/etc/jupyter by the single-user server (beside the image's own /etc/jupyter file).
    """
    local = NOTEBOOK_LOCAL_DIR
    return {
        "ipython-sqlite": {
            "mountPath": "/usr/local/etc/ipython/ipython_config.json",
            "data": {"HistoryManager": {"hist_file": f"{local}/ipython_history.sqlite"}},
        },
        "jupyter-server-sqlite": {
            "mountPath": "/usr/local/etc/jupyter/jupyter_server_config.json",
            "data": {
                "BaseFileIdManager": {"db_path": f"{local}/file_id_manager.db"},
                "NotebookNotary": {"db_file": f"{local}/nbsignatures.db"},
            },
        },
    }
