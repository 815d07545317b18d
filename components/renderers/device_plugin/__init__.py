"""The NVIDIA device plugin and GPU sharing: its config per sharing profile and its DaemonSets (and the MPS
control daemon). The slots per node are `slots` in `components/settings/resolved.py`.

Pure renderers: settings in, plain dicts and strings out."""
