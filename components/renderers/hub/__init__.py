"""Each lab's JupyterHub: chart values, profiles, the notebook pod, storage, database, the hub's namespace and the
GPU idle reaper beside it.

Pure renderers: settings in, plain dicts and strings out."""
