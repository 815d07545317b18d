"""GPU node bootstrap for Amazon Linux 2023: settings in, nodeadm MIME multi-part userData out.

One renderer feeds both ways a GPU node is launched: the managed GPU node group's launch template
and the Karpenter GPU EC2NodeClass (`spec.userData`). Pure: no Pulumi import, deterministic output
(fixed MIME boundary, sorted labels) so the golden files under tests/golden/ are stable.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Final, Literal

import yaml

from components.settings import GpuNodeSettings

LaunchedBy = Literal["managed-node-group", "karpenter"]

NODECONFIG_API_VERSION: Final = "node.eks.aws/v1alpha1"
NODECONFIG_KIND: Final = "NodeConfig"
NODECONFIG_CONTENT_TYPE: Final = "application/node.eks.aws"
SHELL_CONTENT_TYPE: Final = "text/x-shellscript"
MIME_BOUNDARY: Final = "GPU-PLATFORM-USERDATA-BOUNDARY"
FAST_IMAGE_PULL_GATE: Final = "FastImagePull"

# The transient systemd unit that pulls the images (`journalctl -u gpu-platform-image-prepull`).
PREPULL_UNIT: Final = "gpu-platform-image-prepull"
# containerd namespace of the kubelet's CRI plugin: images pulled elsewhere are invisible to pods.
CRI_NAMESPACE: Final = "k8s.io"
PREPULL_ATTEMPTS: Final = 5
# A stalled registry connection must not keep the unit around forever.
PREPULL_MAX_SECONDS: Final = 3600

_LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# The kubelet refuses to start with --node-labels in these domains (NodeRestriction), except the
# node.kubernetes.io / kubelet.kubernetes.io subdomains reserved for node self-labelling.
_RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io")
_SELF_LABEL_DOMAINS = ("node.kubernetes.io", "kubelet.kubernetes.io")


def render_gpu_user_data(nodes: GpuNodeSettings, *, launched_by: LaunchedBy, node_labels: Mapping[str, str]) -> str:
    """AL2023 userData (plain MIME text, not base64) for GPU nodes.

    Parts: a NodeConfig (`application/node.eks.aws`) with the kubelet limits and the node labels
    (`--node-labels`, sorted), then - when `nodes.pre_pull_images` is set - a shell part that
    pre-pulls those images in the background. No cluster name/endpoint/CA: EKS (managed node
    group) and Karpenter inject them in their own NodeConfig, appended after ours; nodeadm
    merges the documents in order, later `spec.kubelet.config` keys win, flags are appended.
    The GPU taint is not here either: the launcher registers it (node group `taints`, NodePool
    `taints`), where schedulers and the EKS API can see it.

    `launched_by` changes one thing, `maxPods`:
    - "managed-node-group": the NodeConfig carries `maxPods` and `podPidsLimit`. Where EKS's appended
      NodeConfig sets a maxPods of its own (computed from the instance type and VPC CNI mode: 110
      below 30 vCPUs with prefix delegation) that value wins; settings keep ours network-safe too.
    - "karpenter": only `podPidsLimit`. Karpenter's generated NodeConfig sets `maxPods` itself and
      wins, so it belongs in `EC2NodeClass.spec.kubelet.maxPods` (set from `nodes.max_pods`);
      `podPidsLimit` has no EC2NodeClass field and must come from here.
    """
    if launched_by not in ("managed-node-group", "karpenter"):
        raise ValueError(f"launched_by must be 'managed-node-group' or 'karpenter', not {launched_by!r}")
    kubelet_config: dict[str, int] = {}
    if launched_by == "managed-node-group":
        kubelet_config["maxPods"] = nodes.max_pods
    kubelet_config["podPidsLimit"] = nodes.pod_pids_limit
    node_config = render_node_config(kubelet_config, node_labels, fast_image_pull=nodes.fast_image_pull)
    parts = [(NODECONFIG_CONTENT_TYPE, node_config)]
    if nodes.pre_pull_images:
        parts.append((f'{SHELL_CONTENT_TYPE}; charset="us-ascii"', render_prepull_script(nodes.pre_pull_images)))
    return _mime_multipart(parts)


def render_node_config(
    kubelet_config: Mapping[str, int], node_labels: Mapping[str, str], *, fast_image_pull: bool = False
) -> str:
    """The NodeConfig YAML document of the GPU nodes (no cluster details; see render_gpu_user_data).

    `fast_image_pull` sets nodeadm's `FastImagePull` feature gate: containerd pulls and unpacks layers in
    parallel through the SOCI snapshotter (awslabs/amazon-eks-ami v20260724 nodeadm/doc/examples.md,
    nodeadm/api/v1alpha1/nodeconfig_types.go `Feature` enum); settings require the root-volume throughput.
    """
    kubelet: dict[str, object] = {"config": dict(kubelet_config)}
    if node_labels:
        kubelet["flags"] = [node_labels_flag(node_labels)]
    spec: dict[str, object] = {"kubelet": kubelet}
    if fast_image_pull:
        spec["featureGates"] = {FAST_IMAGE_PULL_GATE: True}
    document = {"apiVersion": NODECONFIG_API_VERSION, "kind": NODECONFIG_KIND, "spec": spec}
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def node_labels_flag(node_labels: Mapping[str, str]) -> str:
    """`--node-labels=k1=v1,k2=v2` sorted by key; rejects labels the kubelet would refuse."""
    for key, value in node_labels.items():
        _check_label(key, value)
    return "--node-labels=" + ",".join(f"{key}={node_labels[key]}" for key in sorted(node_labels))


def _check_label(key: str, value: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix))) or not _LABEL_NAME.match(name):
        raise ValueError(f"node label key {key!r} is not a Kubernetes qualified name ([prefix/]name)")
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError(f"node label {key}: value {value!r} is not a valid label value (<= 63 characters)")
    restricted = any(prefix == d or prefix.endswith(f".{d}") for d in _RESTRICTED_DOMAINS)
    self_label = any(prefix == d or prefix.endswith(f".{d}") for d in _SELF_LABEL_DOMAINS)
    if restricted and not self_label:
        raise ValueError(
            f"node label {key!r}: the kubelet refuses --node-labels in the kubernetes.io/k8s.io domains "
            "(except node.kubernetes.io and kubelet.kubernetes.io); use your own domain"
        )


def render_prepull_script(images: Sequence[str]) -> str:
    """Shell part that pre-pulls `images` into containerd's CRI namespace without delaying the node.

    cloud-init runs user-data scripts before nodeadm starts containerd and the kubelet
    (nodeadm-run.service is ordered after cloud-final.service), so a pull here would hold the node
    out of the cluster for minutes. The script therefore only starts a transient systemd unit
    (running this same file with `--pull`) ordered after nodeadm-run and returns. The unit waits for
    containerd, skips images already present and retries failed pulls with backoff.
    """
    image_lines = "\n".join(f"  {shlex.quote(image)}" for image in dict.fromkeys(images))
    return _PREPULL_TEMPLATE.format(
        unit=PREPULL_UNIT,
        namespace=CRI_NAMESPACE,
        attempts=PREPULL_ATTEMPTS,
        max_seconds=PREPULL_MAX_SECONDS,
        images=image_lines,
    )


_PREPULL_TEMPLATE = """\
#!/bin/bash
# gpu-platform: pre-pull GPU workload images so the first GPU pod on this node starts fast.
# cloud-init runs this before nodeadm starts containerd and the kubelet; the pull runs in a
# transient systemd unit ordered after nodeadm-run.service, so the node joins the cluster at once.
set -euo pipefail

readonly UNIT={unit}
readonly NAMESPACE={namespace}
readonly ATTEMPTS={attempts}
readonly CONTAINERD_WAIT_SECONDS=900
readonly IMAGES=(
{images}
)

log() {{
  echo "${{UNIT}}: $*"
}}

wait_for_containerd() {{
  local waited=0
  until ctr version >/dev/null 2>&1; do
    if ((waited >= CONTAINERD_WAIT_SECONDS)); then
      log "containerd did not answer within ${{CONTAINERD_WAIT_SECONDS}}s"
      return 1
    fi
    sleep 5
    waited=$((waited + 5))
  done
}}

image_present() {{
  local present
  present="$(ctr --namespace "$NAMESPACE" images list --quiet)"
  grep --fixed-strings --line-regexp --quiet -- "$1" <<<"$present"
}}

pull_image() {{
  local image="$1" attempt delay=10
  if image_present "$image"; then
    log "$image already present"
    return 0
  fi
  for ((attempt = 1; ; attempt++)); do
    # stdout is a progress table redrawn several times a second: keep it out of the journal.
    if ctr --namespace "$NAMESPACE" images pull "$image" >/dev/null; then
      log "pulled $image"
      return 0
    fi
    if ((attempt >= ATTEMPTS)); then
      log "giving up on $image after $ATTEMPTS attempts"
      return 1
    fi
    log "pull $attempt/$ATTEMPTS of $image failed; retrying in ${{delay}}s"
    sleep "$delay"
    delay=$((delay * 2))
  done
}}

pull_all() {{
  local image failed=0
  wait_for_containerd
  for image in "${{IMAGES[@]}}"; do
    pull_image "$image" || failed=1
  done
  return "$failed"
}}

if [[ "${{1:-}}" == "--pull" ]]; then
  pull_all
elif systemctl is-active --quiet "$UNIT"; then
  log "already running"
else
  # --no-block: return at once; cloud-final, and nodeadm-run after it, must not wait for the pull.
  systemd-run --unit="$UNIT" --no-block --collect \\
    --description="gpu-platform: pre-pull GPU workload images" \\
    --property=After=nodeadm-run.service \\
    --property=RuntimeMaxSec={max_seconds} \\
    /bin/bash "$(readlink -f "$0")" --pull
fi
"""


def _mime_multipart(parts: Sequence[tuple[str, str]]) -> str:
    """MIME multipart/mixed with a fixed boundary (deterministic); fails if a part contains it."""
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', ""]
    for content_type, body in parts:
        if MIME_BOUNDARY in body:
            raise ValueError(f"a {content_type} part contains the MIME boundary {MIME_BOUNDARY!r}")
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n")]
    lines += [f"--{MIME_BOUNDARY}--", ""]
    return "\n".join(lines)
