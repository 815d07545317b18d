"""The NVIDIA device plugin and GPU sharing: its config per sharing profile, its DaemonSets (and the MPS
control daemon), and the slots per node that Karpenter's NodeOverlays advertise.

Pure renderers: settings in, plain dicts and strings out."""
