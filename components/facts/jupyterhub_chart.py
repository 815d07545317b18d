"""What the zero-to-jupyterhub chart 4.4.0 and KubeSpawner 7.0.0 name and open, as the hub renderers need it.

Upstream facts, each cited at its pinned tag (jupyterhub/zero-to-jupyterhub-k8s @ 4.4.0, jupyterhub/kubespawner @
7.0.0); the platform's own names for the hub's objects stay with the renderers in `components/renderers/hub/`.
"""

from __future__ import annotations

from typing import Final

# The Helm release name the platform gives each hub (the chart names its objects after it: `hub`, `proxy`,
# `proxy-public`, ...).
HUB_RELEASE: Final = "jupyterhub"
# The chart's hub ServiceAccount (templates/_helpers-names.tpl, `jupyterhub.hub-serviceaccount.fullname`).
HUB_SERVICE_ACCOUNT: Final = "hub"
# The hub's API and the notebook server's port (jupyterhub_config.py: `hub_container_port = 8081`; kubespawner's
# default `port` 8888, the chart's templates/hub/netpol.yaml "hub --> singleuser-server").
HUB_API_PORT: Final = 8081
NOTEBOOK_PORT: Final = 8888
# The proxy's HTTP container port (configurable-http-proxy `--port=8000`, templates/proxy/deployment.yaml); the
# proxy-public Service maps its 80 (or, with TLS offloaded at the load balancer, its 443) to it.
PROXY_HTTP_PORT: Final = 8000
# The hub's own API from inside its pod (the chart binds the hub to `http://:8081`, jupyterhub_config.py).
# JupyterHub hands a managed service `hub_connect_url`, the cross-namespace Service name the notebooks need.
HUB_API_URL: Final = f"http://127.0.0.1:{HUB_API_PORT}/hub/api"
# Pod labels the chart and kubespawner set: `component` (templates/_helpers.tpl `jupyterhub.matchLabels`;
# kubespawner `component_label` "singleuser-server"), `release` (the Helm release), `app` (the chart's name,
# templates/hub/deployment.yaml).
HUB_POD: Final = {"component": "hub", "release": HUB_RELEASE}
PROXY_POD: Final = {"component": "proxy", "release": HUB_RELEASE}
NOTEBOOK_POD: Final = {"component": "singleuser-server", "release": HUB_RELEASE}
HUB_POD_LABELS: Final = {"app": "jupyterhub", "component": "hub"}
# What KubeSpawner 7.0.0 asks of the API in its namespace (kubespawner/spawner.py: `_make_create_pod_request`,
# `_make_create_pvc_request` (create, then read on conflict), `_make_delete_pod_request`,
# `_make_delete_pvc_request`, the pod and event reflectors (list + watch), `_check_pvc_exists` (get)). Its secrets
# and services are only made with `internal_ssl` or `services_enabled`, both off here. The same verbs as the chart's
# own hub Role (templates/hub/rbac.yaml), less `secrets` and `services`.
SPAWNER_RULES: Final = (
    (("",), ("pods", "persistentvolumeclaims"), ("get", "watch", "list", "create", "delete")),
    (("",), ("events",), ("get", "watch", "list")),
)
