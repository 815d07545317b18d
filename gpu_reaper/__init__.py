"""The GPU idle reaper: frees the GPU slots of learners who hold one and do not use it (docs/jupyterhub.md).

A JupyterHub managed service that runs beside each lab's hub, shipped as plain files through the chart's
`hub.extraFiles` (no image of its own): the hub image's Python 3 and its `kubespawner` are all it needs.
`classify` holds the pure decisions, `replay` the operators' dry run, `hubapi` / `kube` the two APIs it talks
to and `service` the loop. Nothing here imports the Pulumi program, and the program never imports this package
(the renderer ships its files as text).
"""
