"""A corpus of stack files a new user might write, with what the synth must answer for each.

Each row is ONE case: `Case(id, stack, exit, paths)`.

- `id`: a short stack name (lowercase, digits, '-'); the file is written as `Pulumi.<id>.yaml`.
- `stack`: either a dict of edits to the staging stack file, or the full text of a stack file.
  Edit keys are dotted key paths under `config:` with list indices, exactly as errors print them:
  `{"gpu-platform:karpenter.nodePools[0].gpuLimit": 0}` sets one value; `DELETE` removes a key.
  Full text may start from the staging file's text, `STAGING` (e.g. `STAGING + "..."` to paste a
  block twice, `STAGING.replace(...)` for what only YAML text can show: an unquoted date, `key:`).
- `exit`: 0 for a file that must synth, 2 for a mistake.
- `paths`: for a mistake, exactly the key paths the error must name (each printed as `  <path>: ...`).

Mistakes in the file itself, which never reach the program as config, have ids starting with
`dup-`, `keys-not-under-config` or `config-misspelled`; every other mistake is also run through
`__main__.py` under mocks, as `pulumi up` would run it.

To cover a new key: add a row with a bad value (exit 2, its path) and one with its boundary value
(exit 0) next to the rows of its section; `tests/offline/test_config_corpus.py` picks every row up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.conftest import PROJECT_DIR

STAGING = (PROJECT_DIR / "Pulumi.staging.yaml").read_text(encoding="utf-8")

DELETE = object()
OK, INVALID = 0, 2
POOL = "gpu-platform:karpenter.nodePools[0]"
BUDGET = f"{POOL}.disruptionBudgets[0]"
HUB = "gpu-platform:labs[0].hub"


# A second lab's hub: staging's own (its secrets as `secure:` values), on staging's hostname.
SECOND_HUB = {
    "auth": {"type": "sharedPassword", "password": {"secure": "AAABAJ0y"}},
    "hostname": "hub.learning-lab.example.org",
    "certificateArn": "arn:aws:acm:us-west-1:111122223333:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    "image": "quay.io/jupyter/pytorch-notebook:cuda12-python-3.12@sha256:" + "6" * 64,
    "maxHours": 2,
}


# Staging's session (6 learners, 2h, Pacific) to repeat at another time; a second pool to hold it.
SESSION = {
    "schedule": "0 17 * * tue,thu",
    "timezone": "America/Los_Angeles",
    "duration": "2h",
    "learners": 6,
    "nodePool": "g4-nodepool",
}
EVENING_POOL = {
    "name": "g4-evening",
    "instanceTypes": ["g4dn.xlarge"],
    "gpuLimit": 4,
    "terminationGracePeriod": "2h15m",
}


@dataclass(frozen=True)
class Case:
    id: str
    stack: dict[str, Any] | str
    exit: int
    paths: tuple[str, ...] = ()


CASES: list[Case] = [
    # --- the seed files, and values at their boundaries that must pass --------------------------
    Case("staging-as-is", {}, OK),
    Case("ok-tags-number-date-bool", {"gpu-platform:tags.cost-center": 1234, "gpu-platform:tags.expires": "2027-06-30", "gpu-platform:tags.critical": True}, OK),
    Case("ok-unquoted-date-tag", STAGING.replace("team: ml-platform", "team: ml-platform\n    expires: 2027-06-30"), OK),
    Case("ok-yes-is-a-string", STAGING.replace("team: ml-platform", "team: yes"), OK),
    Case("ok-cluster-name-43-chars", {"gpu-platform:clusterName": "a" * 43}, OK),
    Case("ok-version-1-36", {"gpu-platform:kubernetesVersion": "1.36"}, OK),
    Case("ok-network-20-4-azs", {"gpu-platform:network.vpcCidr": "10.8.0.0/20", "gpu-platform:network.availabilityZones": 4, "gpu-platform:network.natGateways": "one-per-az"}, OK),
    Case("ok-network-existing", {"gpu-platform:network": {"existing": {"vpcId": "vpc-0abc1234", "privateSubnetIds": ["subnet-0abc1234", "subnet-0abc5678"]}}}, OK),
    Case("ok-private-endpoint", {"gpu-platform:cluster.endpointPublicAccess": False, "gpu-platform:cluster.publicAccessCidrs": DELETE}, OK),
    Case("ok-gpu-nodes-bounds", {"gpu-platform:gpuNodes.fastImagePull": False, "gpu-platform:gpuNodes.maxPods": 250, "gpu-platform:gpuNodes.podPidsLimit": 1024, "gpu-platform:gpuNodes.rootVolume": {"sizeGib": 20, "iops": 3000, "throughputMibps": 125}}, OK),
    Case("ok-root-volume-max-ratio", {"gpu-platform:gpuNodes.rootVolume": {"sizeGib": 160, "iops": 80000, "throughputMibps": 2000}}, OK),
    Case("ok-group-disabled", {"gpu-platform:gpuNodeGroup": {"enabled": False}}, OK),
    # Without Karpenter staging has no GPU capacity (its managed group is off): the demo, the lab's hub and its
    # timetable (its sessions need a Karpenter pool to warm) go too.
    Case("ok-karpenter-disabled", {"gpu-platform:karpenter": {"enabled": False}, "gpu-platform:demo": {"enabled": False}, "gpu-platform:labs[0].sessions": DELETE, "gpu-platform:labs[0].hub": DELETE}, OK),
    Case("ok-karpenter-disabled-no-pools", {"gpu-platform:karpenter": {"enabled": False, "nodePools": []}, "gpu-platform:demo": {"enabled": False}, "gpu-platform:labs[0].sessions": DELETE, "gpu-platform:labs[0].hub": DELETE}, OK),
    Case("ok-demo-off-alone", {"gpu-platform:demo": {"enabled": False}}, OK),
    # (no warm slots: one slot of a T4 shared 64 ways is smaller than any usable pod)
    Case("ok-sharing-64", {"gpu-platform:gpuSharing": {"strategy": "time-slicing", "replicas": 64}, f"{POOL}.warmGpuSlots": DELETE}, OK),
    # A T4's 16,384 MiB over 16 MPS clients caps each at 1,024 MiB, the floor (checks/pools.py: sharing_fits_instance_types).
    Case("ok-sharing-mps-16", {"gpu-platform:gpuSharing": {"strategy": "mps", "replicas": 16}, f"{POOL}.warmGpuSlots": DELETE}, OK),
    # A g6f pool of its own, whole (strategy none): one slice a node, the backstops its limits.
    Case("ok-g6f-pool", {f"{POOL}.instanceTypes": ["g6f.xlarge", "g6f.2xlarge"], f"{POOL}.gpuSharing": {"strategy": "none"}, f"{POOL}.warmGpuSlots": 1, "gpu-platform:labs[0].sessions": DELETE}, OK),
    # (exclusive GPUs: 3 warm + 6 learners would need 9 of the pool's 8 GPUs, so without the timetable)
    Case("ok-sharing-none", {"gpu-platform:gpuSharing": {"strategy": "none"}, "gpu-platform:labs[0].sessions": DELETE}, OK),
    Case("ok-budget-cron-forms", {f"{POOL}.disruptionBudgets": [{"nodes": "0", "schedule": "*/15 8-18/2 1,15 jan-jun MON-FRI", "duration": "1h30m"}, {"nodes": "100%", "schedule": "@daily", "duration": "10m"}, {"nodes": "1", "schedule": "0 0 ? * 0", "duration": "24h"}]}, OK),
    # (a 30s grace period would end a 2h class: without the timetable)
    Case("ok-pool-bounds", {f"{POOL}.weight": 100, f"{POOL}.gpuLimit": 1000, f"{POOL}.expireAfter": "Never", f"{POOL}.terminationGracePeriod": "30s", "gpu-platform:labs[0].sessions": DELETE, "gpu-platform:labs[0].hub": DELETE}, OK),
    # --- 1. duplicate keys anywhere ---------------------------------------------------------------
    Case("dup-top-block", STAGING + "  gpu-platform:demo:\n    enabled: false\n", INVALID, ("gpu-platform:demo",)),
    Case("dup-nested-key", STAGING.replace("    maxPods: 110\n", "    maxPods: 110\n    maxPods: 90\n"), INVALID, ("gpu-platform:gpuNodes.maxPods",)),
    Case("dup-in-pool", STAGING.replace("        gpuLimit: 8\n", "        gpuLimit: 8\n        gpuLimit: 16\n"), INVALID, (f"{POOL}.gpuLimit",)),
    Case("dup-config", STAGING + "config:\n  aws:region: us-west-2\n", INVALID, ("config",)),
    # --- 2. misspelled namespaces and keys ----------------------------------------------------------
    Case("typo-namespace", {"gpu-platfrom:demo": {"enabled": True}}, INVALID, ("gpu-platfrom:demo",)),
    Case("typo-namespace-case", {"Gpu-Platform:clusterName": "x"}, INVALID, ("Gpu-Platform:clusterName",)),
    Case("typo-aws-region", {"aws:region": DELETE, "aws:regoin": "us-west-1"}, INVALID, ("aws:region", "aws:regoin")),
    Case("typo-top-key", {"gpu-platform:gpuSharng": {"strategy": "mps"}}, INVALID, ("gpu-platform:gpuSharng",)),
    Case("typo-nested-key", {"gpu-platform:network.vpcCIDR": "10.0.0.0/16"}, INVALID, ("gpu-platform:network.vpcCIDR",)),
    Case("typo-pool-key", {f"{POOL}.gpulimit": 8}, INVALID, (f"{POOL}.gpulimit",)),
    # snake_case spellings of documented keys: unknown keys at every level (read by their camelCase alias only).
    Case("snake-top-key", STAGING.replace("gpu-platform:gpuSharing:", "gpu-platform:gpu_sharing:"), INVALID, ("gpu-platform:gpu_sharing",)),
    Case("snake-block-key", {"gpu-platform:systemNodes.minSize": DELETE, "gpu-platform:systemNodes.min_size": 2}, INVALID, ("gpu-platform:systemNodes.min_size",)),
    Case("snake-nested-block-key", {"gpu-platform:gpuNodes.rootVolume.sizeGib": DELETE, "gpu-platform:gpuNodes.rootVolume.size_gib": 100}, INVALID, ("gpu-platform:gpuNodes.rootVolume.size_gib",)),
    Case("snake-pool-key", {f"{POOL}.gpuLimit": DELETE, f"{POOL}.gpu_limit": 8}, INVALID, (f"{POOL}.gpu_limit",)),
    Case("snake-required-lab-key", {"gpu-platform:labs[0].gpuSlots": DELETE, "gpu-platform:labs[0].gpu_slots": 12}, INVALID, ("gpu-platform:labs[0].gpu_slots",)),
    Case("snake-session-key", {"gpu-platform:labs[0].sessions[0].nodePool": DELETE, "gpu-platform:labs[0].sessions[0].node_pool": "g4-nodepool"}, INVALID, ("gpu-platform:labs[0].sessions[0].node_pool",)),
    Case("snake-hub-key", {f"{HUB}.maxHours": DELETE, f"{HUB}.max_hours": 2}, INVALID, (f"{HUB}.max_hours",)),
    Case("snake-warm-shape-key", {f"{POOL}.warmSlotShape": {"cpu_millicores": 500, "memoryMib": 1024}}, INVALID, (f"{POOL}.warmSlotShape.cpu_millicores",)),
    Case("kebab-observability-key", {"gpu-platform:observability.idle-gpu-hours": 4}, INVALID, ("gpu-platform:observability.idle-gpu-hours",)),
    Case("region-without-namespace", STAGING.replace("aws:region: us-west-1", "region: us-west-1"), INVALID, ("gpu-platform:region", "aws:region")),
    Case("nested-namespace-block", "config:\n  aws:region: us-west-1\n  gpu-platform:\n    clusterName: lab\n", INVALID, ("gpu-platform:gpu-platform", "gpu-platform:clusterName")),
    # One mistake, named once: the respelled key (with its camelCase name), not also the key it left missing.
    Case("wrong-case-key", STAGING.replace("gpu-platform:clusterName", "gpu-platform:ClusterName"), INVALID, ("gpu-platform:ClusterName",)),
    # --- 3. empty values ----------------------------------------------------------------------------
    Case("empty-cluster-name", STAGING.replace("clusterName: nextgen-learninglab", "clusterName:"), INVALID, ("gpu-platform:clusterName",)),
    Case("empty-region", STAGING.replace("aws:region: us-west-1", "aws:region:"), INVALID, ("aws:region",)),
    Case("empty-block", STAGING.replace("  gpu-platform:network:\n    vpcCidr: 10.20.0.0/16\n    availabilityZones: 2\n    natGateways: single\n", "  gpu-platform:network:\n"), INVALID, ("gpu-platform:network",)),
    Case("empty-nested", STAGING.replace("    natGateways: single", "    natGateways:"), INVALID, ("gpu-platform:network.natGateways",)),
    Case("empty-tag", STAGING.replace("team: ml-platform", "team:"), INVALID, ("gpu-platform:tags.team",)),
    Case("empty-budget-schedule", {f"{POOL}.disruptionBudgets": [{"nodes": "1", "schedule": None, "duration": "1h"}]}, INVALID, (f"{BUDGET}.schedule",)),
    Case("missing-cluster-name", {"gpu-platform:clusterName": DELETE}, INVALID, ("gpu-platform:clusterName",)),
    # --- 4. YAML-typed scalars ----------------------------------------------------------------------
    Case("tag-float", {"gpu-platform:tags.version": 1.5}, INVALID, ("gpu-platform:tags.version",)),
    Case("tag-too-long", {"gpu-platform:tags.team": "x" * 257}, INVALID, ("gpu-platform:tags.team",)),
    Case("version-as-number", STAGING.replace("clusterName: nextgen-learninglab", "clusterName: nextgen-learninglab\n  gpu-platform:kubernetesVersion: 1.30"), INVALID, ("gpu-platform:kubernetesVersion",)),
    Case("ok-version-unquoted", STAGING.replace("clusterName: nextgen-learninglab", "clusterName: nextgen-learninglab\n  gpu-platform:kubernetesVersion: 1.35"), OK),
    Case("ok-tag-256", {"gpu-platform:tags.team": "x" * 256}, OK),
    Case("number-for-string", {"gpu-platform:demo.namespace": 1234}, INVALID, ("gpu-platform:demo.namespace",)),
    Case("number-budget-nodes", {f"{BUDGET}.nodes": 1}, INVALID, (f"{BUDGET}.nodes",)),
    Case("number-pool-name", {f"{POOL}.name": 7}, INVALID, (f"{POOL}.name",)),
    Case("list-for-string", {"gpu-platform:demo.image": ["docker.io/a/b:1"]}, INVALID, ("gpu-platform:demo.image",)),
    Case("string-for-list", {"gpu-platform:gpuNodeGroup": {"enabled": True, "instanceTypes": "g4dn.xlarge"}}, INVALID, ("gpu-platform:gpuNodeGroup.instanceTypes",)),
    Case("scalar-for-block", {"gpu-platform:network": "on"}, INVALID, ("gpu-platform:network",)),
    # --- 5. contradictions that would drop config ------------------------------------------------
    # (and staging's demo then has no GPU capacity left: its managed group is off)
    Case("karpenter-off-with-pools", {"gpu-platform:karpenter.enabled": False}, INVALID, ("gpu-platform:karpenter.replicas", "gpu-platform:karpenter.nodePools", "gpu-platform:demo.enabled")),
    Case("group-off-with-sizing", {"gpu-platform:gpuNodeGroup": {"enabled": False, "instanceTypes": ["g4dn.xlarge"], "capacityType": "ON_DEMAND", "minSize": 1, "desiredSize": 1, "maxSize": 1}}, INVALID, tuple(f"gpu-platform:gpuNodeGroup.{k}" for k in ("instanceTypes", "capacityType", "minSize", "desiredSize", "maxSize"))),
    Case("demo-off-with-keys", {"gpu-platform:demo.enabled": False}, INVALID, ("gpu-platform:demo.namespace", "gpu-platform:demo.replicas", "gpu-platform:demo.image")),
    Case("demo-default-off-with-keys", {"gpu-platform:demo": {"replicas": 2}}, INVALID, ("gpu-platform:demo.replicas",)),
    Case("private-endpoint-with-cidrs", {"gpu-platform:cluster.endpointPublicAccess": False}, INVALID, ("gpu-platform:cluster.publicAccessCidrs",)),
    Case("existing-vpc-with-layout", {"gpu-platform:network.existing": {"vpcId": "vpc-0abc1234", "privateSubnetIds": ["subnet-0abc1234", "subnet-0abc5678"]}}, INVALID, ("gpu-platform:network.vpcCidr", "gpu-platform:network.availabilityZones", "gpu-platform:network.natGateways")),
    Case("none-sharing-with-fail-flag", {"gpu-platform:gpuSharing": {"strategy": "none", "failRequestsGreaterThanOne": True}, "gpu-platform:labs[0].sessions": DELETE}, INVALID, ("gpu-platform:gpuSharing.failRequestsGreaterThanOne",)),
    Case("demo-without-gpus", {"gpu-platform:gpuNodeGroup": {"enabled": False}, "gpu-platform:karpenter": {"enabled": False}}, INVALID, ("gpu-platform:demo.enabled",)),
    # --- 6. cron that is not cron -------------------------------------------------------------------
    Case("cron-words", {f"{BUDGET}.schedule": "weekdays from 8am to 6pm", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-minute-60", {f"{BUDGET}.schedule": "60 8 * * *", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-day-7", {f"{BUDGET}.schedule": "0 8 * * 7", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-bad-name", {f"{BUDGET}.schedule": "0 8 * * monday-friday", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-six-fields", {f"{BUDGET}.schedule": "0 0 8 * * *", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-step-zero", {f"{BUDGET}.schedule": "*/0 * * * *", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-backwards-range", {f"{BUDGET}.schedule": "0 18-8 * * *", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-timezone", {f"{BUDGET}.schedule": "TZ=Europe/Berlin 0 8 * * *", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("cron-every-macro", {f"{BUDGET}.schedule": "@every 1h", f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("schedule-without-duration", {f"{BUDGET}.schedule": "0 8 * * mon-fri"}, INVALID, (f"{BUDGET}.duration",)),
    Case("duration-without-schedule", {f"{BUDGET}.duration": "10h"}, INVALID, (f"{BUDGET}.schedule",)),
    Case("duration-seconds", {f"{BUDGET}.schedule": "@daily", f"{BUDGET}.duration": "30s"}, INVALID, (f"{BUDGET}.duration",)),
    # --- 7. messages: secrets, keys outside config: ----------------------------------------------
    Case("secret-cluster-name", {"gpu-platform:clusterName": {"secure": "AAABAJ0y"}}, INVALID, ("gpu-platform:clusterName",)),
    Case("secret-region", {"aws:region": {"secure": "AAABAJ0y"}}, INVALID, ("aws:region",)),
    Case("secret-tag", {"gpu-platform:tags.owner": {"secure": "AAABAJ0y"}}, INVALID, ("gpu-platform:tags.owner",)),
    Case("keys-not-under-config", "aws:region: us-west-1\ngpu-platform:clusterName: lab\n", INVALID, ("aws:region", "gpu-platform:clusterName")),
    Case("config-misspelled", "confg:\n  aws:region: us-west-1\n", INVALID, ("confg",)),
    Case("keys-not-under-config-demo", STAGING + "demo:\n  enabled: false\n", INVALID, ("gpu-platform:demo",)),
    # --- every documented key: a bad value names its path ---------------------------------------
    Case("bad-region", {"aws:region": "mars-east-1"}, INVALID, ("aws:region",)),
    Case("bad-cluster-name", {"gpu-platform:clusterName": "9-lives"}, INVALID, ("gpu-platform:clusterName",)),
    Case("long-cluster-name", {"gpu-platform:clusterName": "a" * 44}, INVALID, ("gpu-platform:clusterName",)),
    Case("bad-version", {"gpu-platform:kubernetesVersion": "1.29"}, INVALID, ("gpu-platform:kubernetesVersion",)),
    Case("bad-protect", {"gpu-platform:protectResources": "maybe"}, INVALID, ("gpu-platform:protectResources",)),
    Case("bad-tags-shape", {"gpu-platform:tags": ["team=ml"]}, INVALID, ("gpu-platform:tags",)),
    Case("bad-tag-key", {"gpu-platform:tags.aws:team": "x"}, INVALID, ('gpu-platform:tags["aws:team"]',)),
    Case("bad-vpc-cidr", {"gpu-platform:network.vpcCidr": "10.0.0.0/24"}, INVALID, ("gpu-platform:network.vpcCidr",)),
    Case("bad-azs", {"gpu-platform:network.availabilityZones": 5}, INVALID, ("gpu-platform:network.availabilityZones",)),
    Case("bad-nat", {"gpu-platform:network.natGateways": "many"}, INVALID, ("gpu-platform:network.natGateways",)),
    Case("bad-existing", {"gpu-platform:network": {"existing": {"vpcId": "vpc-1", "privateSubnetIds": ["subnet-0abc1234"]}}}, INVALID, ("gpu-platform:network.existing.vpcId", "gpu-platform:network.existing.privateSubnetIds")),
    Case("bad-public-access", {"gpu-platform:cluster.endpointPublicAccess": "sure"}, INVALID, ("gpu-platform:cluster.endpointPublicAccess",)),
    Case("open-public-cidr", {"gpu-platform:cluster.publicAccessCidrs": ["0.0.0.0/0"]}, INVALID, ("gpu-platform:cluster.publicAccessCidrs",)),
    Case("bad-admin-arn", {"gpu-platform:cluster.adminPrincipalArns": ["admin"]}, INVALID, ("gpu-platform:cluster.adminPrincipalArns[0]",)),
    Case("bad-log-type", {"gpu-platform:cluster.logTypes": ["api", "everything"]}, INVALID, ("gpu-platform:cluster.logTypes[1]",)),
    Case("bad-prefix-delegation", {"gpu-platform:cluster.vpcCni.prefixDelegation": "sometimes"}, INVALID, ("gpu-platform:cluster.vpcCni.prefixDelegation",)),
    Case("bad-system-type", {"gpu-platform:systemNodes.instanceTypes": ["large"]}, INVALID, ("gpu-platform:systemNodes.instanceTypes[0]",)),
    Case("bad-system-min", {"gpu-platform:systemNodes.minSize": 1, "gpu-platform:systemNodes.desiredSize": 1}, INVALID, ("gpu-platform:systemNodes.minSize", "gpu-platform:systemNodes.desiredSize")),
    Case("bad-system-order", {"gpu-platform:systemNodes.maxSize": 2, "gpu-platform:systemNodes.desiredSize": 3}, INVALID, ("gpu-platform:systemNodes.desiredSize",)),
    Case("bad-system-max-below-min", {"gpu-platform:systemNodes.maxSize": 1}, INVALID, ("gpu-platform:systemNodes.maxSize",)),
    Case("bad-max-pods", {"gpu-platform:gpuNodes.maxPods": 300}, INVALID, ("gpu-platform:gpuNodes.maxPods",)),
    Case("bad-pids", {"gpu-platform:gpuNodes.podPidsLimit": 100}, INVALID, ("gpu-platform:gpuNodes.podPidsLimit",)),
    Case("bad-size-gib", {"gpu-platform:gpuNodes.rootVolume.sizeGib": 19}, INVALID, ("gpu-platform:gpuNodes.rootVolume.sizeGib",)),
    Case("bad-iops", {"gpu-platform:gpuNodes.rootVolume.iops": 2999}, INVALID, ("gpu-platform:gpuNodes.rootVolume.iops",)),
    Case("bad-throughput", {"gpu-platform:gpuNodes.rootVolume.throughputMibps": 2600}, INVALID, ("gpu-platform:gpuNodes.rootVolume.throughputMibps",)),
    Case("unencrypted-root", {"gpu-platform:gpuNodes.rootVolume.encrypted": False}, INVALID, ("gpu-platform:gpuNodes.rootVolume.encrypted",)),
    Case("bad-delete-on-termination", {"gpu-platform:gpuNodes.rootVolume.deleteOnTermination": "never"}, INVALID, ("gpu-platform:gpuNodes.rootVolume.deleteOnTermination",)),
    Case("latest-pre-pull", {"gpu-platform:gpuNodes.prePullImages": ["docker.io/library/busybox:latest"]}, INVALID, ("gpu-platform:gpuNodes.prePullImages[0]",)),
    # Images without a registry host: `ctr images pull` (the nodes' pre-pull) adds no docker.io/, in every image key.
    Case("pre-pull-without-registry", {"gpu-platform:gpuNodes.prePullImages": ["nvidia/cuda:12.4.1-base-ubuntu22.04"]}, INVALID, ("gpu-platform:gpuNodes.prePullImages[0]",)),
    Case("demo-image-without-registry", {"gpu-platform:demo.image": "tensorflow/tensorflow:2.12.0-gpu"}, INVALID, ("gpu-platform:demo.image",)),
    Case("hub-image-without-registry", {f"{HUB}.image": "jupyter/pytorch-notebook@sha256:" + "a" * 64}, INVALID, (f"{HUB}.image",)),
    Case("ok-image-registry-with-port", {"gpu-platform:gpuNodes.prePullImages": ["registry.example.org:5000/lab/cuda:12.4", "localhost/lab/tools:1"]}, OK),
    Case("bad-group-enabled", {"gpu-platform:gpuNodeGroup.enabled": "maybe"}, INVALID, ("gpu-platform:gpuNodeGroup.enabled",)),
    Case("bad-group-type", {"gpu-platform:gpuNodeGroup": {"enabled": True, "instanceTypes": ["m5.large"]}}, INVALID, ("gpu-platform:gpuNodeGroup.instanceTypes[0]",)),
    Case("bad-group-capacity", {"gpu-platform:gpuNodeGroup": {"enabled": True, "capacityType": "spot"}}, INVALID, ("gpu-platform:gpuNodeGroup.capacityType",)),
    Case("bad-group-order", {"gpu-platform:gpuNodeGroup": {"enabled": True, "minSize": 1, "desiredSize": 2, "maxSize": 1}}, INVALID, ("gpu-platform:gpuNodeGroup.desiredSize",)),
    Case("bad-karpenter-enabled", {"gpu-platform:karpenter.enabled": "maybe"}, INVALID, ("gpu-platform:karpenter.enabled",)),
    Case("bad-karpenter-replicas", {"gpu-platform:karpenter.replicas": 0}, INVALID, ("gpu-platform:karpenter.replicas",)),
    Case("karpenter-replicas-vs-system", {"gpu-platform:karpenter.replicas": 3}, INVALID, ("gpu-platform:karpenter.replicas",)),
    Case("ok-cpu-user-pool-spot", {"gpu-platform:karpenter.cpuUserPool": {"capacityType": "spot", "instanceTypes": ["m7i.xlarge"], "cpuLimit": 4, "consolidateAfter": "1m"}}, OK),
    Case("cpu-user-pool-too-small", {"gpu-platform:karpenter.cpuUserPool": {"instanceTypes": ["c6i.large"]}}, INVALID, ("gpu-platform:karpenter.cpuUserPool.instanceTypes",)),
    Case("bad-cpu-user-type", {"gpu-platform:karpenter.cpuUserPool": {"instanceTypes": ["g4dn.xlarge"]}}, INVALID, ("gpu-platform:karpenter.cpuUserPool.instanceTypes[0]",)),
    Case("bad-cpu-user-capacity", {"gpu-platform:karpenter.cpuUserPool": {"capacityType": "reserved"}}, INVALID, ("gpu-platform:karpenter.cpuUserPool.capacityType",)),
    Case("cpu-user-limit-below-a-node", {"gpu-platform:karpenter.cpuUserPool": {"instanceTypes": ["m6i.xlarge"], "cpuLimit": 2}}, INVALID, ("gpu-platform:karpenter.cpuUserPool.cpuLimit",)),
    Case("cpu-user-name-clash", {"gpu-platform:karpenter.cpuUserPool": {"name": "g4-nodepool"}}, INVALID, ("gpu-platform:karpenter.cpuUserPool.name",)),
    Case("cpu-user-grace-below-max-hours", {"gpu-platform:karpenter.cpuUserPool": {"terminationGracePeriod": "1h"}}, INVALID, (f"{HUB}.maxHours",)),
    Case("unknown-system-type", {"gpu-platform:systemNodes.instanceTypes": ["m6i.metal"]}, INVALID, ("gpu-platform:systemNodes.instanceTypes[0]",)),
    Case("duplicate-pool-names", {"gpu-platform:karpenter.nodePools[1]": {"name": "g4-nodepool", "instanceTypes": ["g4dn.xlarge"]}}, INVALID, ("gpu-platform:karpenter.nodePools[1].name",)),
    Case("bad-pool-name", {f"{POOL}.name": "G4_pool"}, INVALID, (f"{POOL}.name",)),
    Case("bad-pool-family", {f"{POOL}.instanceTypes": DELETE, f"{POOL}.instanceFamilies": ["m5"]}, INVALID, (f"{POOL}.instanceFamilies[0]",)),
    Case("bad-pool-type", {f"{POOL}.instanceTypes": ["p3.2xlarge"]}, INVALID, (f"{POOL}.instanceTypes[0]",)),
    Case("pool-both-selectors", {f"{POOL}.instanceFamilies": ["g5"]}, INVALID, (POOL,)),
    # A pool's types hold one GPU count (docs/gpu-health.md "No accidental big nodes"), unless it opts in.
    Case("pool-mixes-gpu-counts", {f"{POOL}.instanceTypes": ["g4dn.xlarge", "g4dn.12xlarge"]}, INVALID, (f"{POOL}.instanceTypes",)),
    Case("pool-family-mixes-gpu-counts", {f"{POOL}.instanceTypes": DELETE, f"{POOL}.instanceFamilies": ["g4dn"]}, INVALID, (f"{POOL}.instanceFamilies",)),
    Case("ok-pool-mixed-gpu-counts-opt-in", {f"{POOL}.instanceTypes": ["g4dn.xlarge", "g4dn.12xlarge"], f"{POOL}.allowMixedGpuCounts": True}, OK),
    Case("pool-opt-in-without-mix", {f"{POOL}.allowMixedGpuCounts": True}, INVALID, (f"{POOL}.allowMixedGpuCounts",)),
    Case("bad-pool-opt-in", {f"{POOL}.allowMixedGpuCounts": "sometimes"}, INVALID, (f"{POOL}.allowMixedGpuCounts",)),
    Case("bad-pool-capacity", {f"{POOL}.capacityTypes": ["reserved"]}, INVALID, (f"{POOL}.capacityTypes[0]",)),
    Case("bad-pool-arch", {f"{POOL}.architectures": ["arm64"]}, INVALID, (f"{POOL}.architectures[0]",)),
    Case("bad-pool-gpu-limit", {f"{POOL}.gpuLimit": 0}, INVALID, (f"{POOL}.gpuLimit",)),
    Case("bad-pool-cpu-limit", {f"{POOL}.cpuLimit": -1}, INVALID, (f"{POOL}.cpuLimit",)),
    Case("bad-expire-after", {f"{POOL}.expireAfter": "30 days"}, INVALID, (f"{POOL}.expireAfter",)),
    Case("bad-grace-period", {f"{POOL}.terminationGracePeriod": "Never"}, INVALID, (f"{POOL}.terminationGracePeriod",)),
    Case("bad-consolidation", {f"{POOL}.consolidationPolicy": "WhenUnderutilized"}, INVALID, (f"{POOL}.consolidationPolicy",)),
    Case("bad-consolidate-after", {f"{POOL}.consolidateAfter": "soon"}, INVALID, (f"{POOL}.consolidateAfter",)),
    Case("bad-budget-nodes", {f"{BUDGET}.nodes": "110%"}, INVALID, (f"{BUDGET}.nodes",)),
    Case("bad-budget-reason", {f"{BUDGET}.reasons": ["Bored"]}, INVALID, (f"{BUDGET}.reasons[0]",)),
    Case("no-budgets", {f"{POOL}.disruptionBudgets": []}, INVALID, (f"{POOL}.disruptionBudgets",)),
    Case("bad-weight", {f"{POOL}.weight": 101}, INVALID, (f"{POOL}.weight",)),
    Case("bad-pool-sharing", {f"{POOL}.gpuSharing": {"strategy": "time-slicing", "replicas": 1}}, INVALID, (f"{POOL}.gpuSharing.replicas",)),
    Case("bad-strategy", {"gpu-platform:gpuSharing.strategy": "mig"}, INVALID, ("gpu-platform:gpuSharing.strategy",)),
    Case("sharing-replicas-0", {"gpu-platform:gpuSharing.replicas": 0}, INVALID, ("gpu-platform:gpuSharing.replicas",)),
    Case("sharing-replicas-65", {"gpu-platform:gpuSharing.replicas": 65}, INVALID, ("gpu-platform:gpuSharing.replicas",)),
    Case("mps-cap-below-1gib", {"gpu-platform:gpuSharing": {"strategy": "mps", "replicas": 17}, f"{POOL}.warmGpuSlots": DELETE}, INVALID, ("gpu-platform:gpuSharing.replicas",)),
    Case("mps-49-replicas", {"gpu-platform:gpuSharing": {"strategy": "mps", "replicas": 49}}, INVALID, ("gpu-platform:gpuSharing.replicas",)),
    Case("g6f-time-slicing", {f"{POOL}.instanceTypes": ["g6f.xlarge"], f"{POOL}.gpuSharing": {"strategy": "time-slicing", "replicas": 2}}, INVALID, (f"{POOL}.gpuSharing.strategy",)),
    Case("g6f-mps", {f"{POOL}.instanceTypes": ["g6f.4xlarge"], f"{POOL}.gpuSharing": {"strategy": "mps", "replicas": 2}}, INVALID, (f"{POOL}.gpuSharing.strategy",)),
    Case("g6f-stack-sharing", {f"{POOL}.instanceTypes": ["g6f.xlarge"]}, INVALID, ("gpu-platform:gpuSharing.strategy",)),
    Case("g6f-managed-group-shared", {"gpu-platform:gpuNodeGroup": {"enabled": True, "instanceTypes": ["g6f.xlarge"]}}, INVALID, ("gpu-platform:gpuSharing.strategy",)),
    Case("g6f-managed-group-mixed", {"gpu-platform:gpuNodeGroup": {"enabled": True, "instanceTypes": ["g6f.xlarge", "g4dn.xlarge"]}}, INVALID, ("gpu-platform:gpuNodeGroup.instanceTypes",)),
    Case("g6f-with-whole-gpus", {f"{POOL}.instanceTypes": ["g6f.xlarge", "g6.xlarge"], f"{POOL}.gpuSharing": {"strategy": "none"}}, INVALID, (f"{POOL}.instanceTypes",)),
    Case("bad-fail-requests", {"gpu-platform:gpuSharing.failRequestsGreaterThanOne": "yes please"}, INVALID, ("gpu-platform:gpuSharing.failRequestsGreaterThanOne",)),
    Case("bad-demo-enabled", {"gpu-platform:demo.enabled": "maybe"}, INVALID, ("gpu-platform:demo.enabled",)),
    Case("bad-demo-namespace", {"gpu-platform:demo.namespace": "kube-system"}, INVALID, ("gpu-platform:demo.namespace",)),
    Case("demo-in-addon-namespace", {"gpu-platform:demo.namespace": "amazon-cloudwatch", "gpu-platform:labs": DELETE}, INVALID, ("gpu-platform:demo.namespace",)),
    Case("demo-in-kube-namespace", {"gpu-platform:demo.namespace": "kube-lab", "gpu-platform:labs": DELETE}, INVALID, ("gpu-platform:demo.namespace",)),
    Case("bad-demo-replicas", {"gpu-platform:demo.replicas": 51}, INVALID, ("gpu-platform:demo.replicas",)),
    Case("bad-demo-image", {"gpu-platform:demo.image": "tensorflow"}, INVALID, ("gpu-platform:demo.image",)),
    Case("bad-fast-image-pull", {"gpu-platform:gpuNodes.fastImagePull": "fast"}, INVALID, ("gpu-platform:gpuNodes.fastImagePull",)),
    Case("fast-pull-slow-volume", {"gpu-platform:gpuNodes.rootVolume.throughputMibps": 599}, INVALID, ("gpu-platform:gpuNodes.rootVolume.throughputMibps",)),
    Case("ok-fast-pull-600", {"gpu-platform:gpuNodes.rootVolume.throughputMibps": 600}, OK),
    # --- deployer, labs, warm headroom, observability ------------------------------------------
    Case("bad-deployer-arn", {"gpu-platform:cluster.deployerPrincipalArn": "github-actions"}, INVALID, ("gpu-platform:cluster.deployerPrincipalArn",)),
    Case("deployer-also-admin", {"gpu-platform:cluster.adminPrincipalArns": ["arn:aws:iam::111122223333:role/github-actions-deploy"]}, INVALID, ("gpu-platform:cluster.adminPrincipalArns",)),
    Case("ok-no-deployer", {"gpu-platform:cluster.deployerPrincipalArn": DELETE}, OK),
    Case("bad-lab-name", {"gpu-platform:labs[0].name": "Learning_Lab"}, INVALID, ("gpu-platform:labs[0].name",)),
    Case("lab-in-system-namespace", {"gpu-platform:labs[0].name": "kube-system", "gpu-platform:demo": {"enabled": False}}, INVALID, ("gpu-platform:labs[0].name",)),
    Case("lab-zero-slots", {"gpu-platform:labs[0].gpuSlots": 0}, INVALID, ("gpu-platform:labs[0].gpuSlots",)),
    Case("lab-missing-slots", {"gpu-platform:labs[0].gpuSlots": DELETE}, INVALID, ("gpu-platform:labs[0].gpuSlots",)),
    Case("lab-bad-member", {"gpu-platform:labs[0].members": ["instructors"]}, INVALID, ("gpu-platform:labs[0].members[0]",)),
    Case("lab-member-is-admin", {"gpu-platform:labs[0].members": ["arn:aws:iam::111122223333:role/platform-admin"]}, INVALID, ("gpu-platform:labs[0].members[0]",)),
    Case("lab-member-is-deployer", {"gpu-platform:labs[0].members": ["arn:aws:iam::111122223333:role/github-actions-deploy"]}, INVALID, ("gpu-platform:labs[0].members[0]",)),
    Case("viewer-is-admin", {"gpu-platform:cluster.viewerPrincipalArns": ["arn:aws:iam::111122223333:role/platform-admin"]}, INVALID, ("gpu-platform:cluster.viewerPrincipalArns[0]",)),
    Case("viewer-is-deployer", {"gpu-platform:cluster.viewerPrincipalArns": ["arn:aws:iam::111122223333:role/github-actions-deploy"]}, INVALID, ("gpu-platform:cluster.viewerPrincipalArns[0]",)),
    Case("viewer-twice", {"gpu-platform:cluster.viewerPrincipalArns": ["arn:aws:iam::111122223333:role/a", "arn:aws:iam::111122223333:role/a"]}, INVALID, ("gpu-platform:cluster.viewerPrincipalArns[1]",)),
    Case("ok-viewer-also-lab-member", {"gpu-platform:labs[0].members": ["arn:aws:iam::111122223333:role/github-actions-preview"]}, OK),
    Case("ok-lab-memory-decimal-suffix", {"gpu-platform:labs[0].memory": "64G"}, OK),
    # Without the lab's hub, whose own quota check (hub-quota-too-small) would name the lab's key first.
    Case("demo-beyond-lab-memory", {"gpu-platform:labs[0].memory": "2Gi", "gpu-platform:labs[0].hub": DELETE}, INVALID, ("gpu-platform:demo.replicas",)),
    Case("demo-beyond-lab-cpu", {"gpu-platform:labs[0].cpu": "500m", "gpu-platform:labs[0].hub": DELETE}, INVALID, ("gpu-platform:demo.replicas",)),
    Case("lab-bad-cpu", {"gpu-platform:labs[0].cpu": "lots"}, INVALID, ("gpu-platform:labs[0].cpu",)),
    Case("lab-bad-memory", {"gpu-platform:labs[0].memory": "64GB"}, INVALID, ("gpu-platform:labs[0].memory",)),
    Case("duplicate-labs", {"gpu-platform:labs[1]": {"name": "learning-lab", "gpuSlots": 1}}, INVALID, ("gpu-platform:labs",)),
    Case("demo-outside-labs", {"gpu-platform:demo.namespace": "other-lab"}, INVALID, ("gpu-platform:demo.namespace",)),
    Case("demo-beyond-lab-slots", {"gpu-platform:labs[0].gpuSlots": 2, "gpu-platform:labs[0].sessions[0].learners": 2}, INVALID, ("gpu-platform:demo.replicas",)),
    Case("ok-two-labs", {"gpu-platform:labs[1]": {"name": "vision-lab", "gpuSlots": 1, "members": [], "cpu": "500m", "memory": "1Gi"}}, OK),
    Case("session-longer-than-grace", {f"{POOL}.terminationGracePeriod": "1h"}, INVALID, (f"{POOL}.terminationGracePeriod",)),
    Case("session-unknown-pool", {"gpu-platform:labs[0].sessions[0].nodePool": "a10g"}, INVALID, ("gpu-platform:labs[0].sessions[0].nodePool",)),
    Case("session-bad-zone", {"gpu-platform:labs[0].sessions[0].timezone": "Pacific Time"}, INVALID, ("gpu-platform:labs[0].sessions[0].timezone",)),
    Case("bad-warm-slots", {f"{POOL}.warmGpuSlots": -1}, INVALID, (f"{POOL}.warmGpuSlots",)),
    Case("warm-slots-beyond-limit", {f"{POOL}.warmGpuSlots": 25}, INVALID, (f"{POOL}.warmGpuSlots",)),
    Case("ok-warm-slots-at-limit", {f"{POOL}.warmGpuSlots": 24, f"{POOL}.cpuLimit": 1000, "gpu-platform:labs[0].sessions": DELETE}, OK),
    Case("warm-shape-too-big", {f"{POOL}.warmSlotShape": {"cpuMillicores": 4000, "memoryMib": 4096}}, INVALID, (f"{POOL}.warmSlotShape",)),
    Case("warm-shape-without-slots", {f"{POOL}.warmGpuSlots": 0, f"{POOL}.warmSlotShape": {"cpuMillicores": 500, "memoryMib": 1024}}, INVALID, (f"{POOL}.warmSlotShape",)),
    Case("ok-warm-shape", {f"{POOL}.warmSlotShape": {"cpuMillicores": 500, "memoryMib": 1024}}, OK),
    Case("bad-gpu-metrics", {"gpu-platform:observability.gpuMetrics": "on please"}, INVALID, ("gpu-platform:observability.gpuMetrics",)),
    Case("bad-node-repair", {"gpu-platform:observability.nodeRepair": "maybe"}, INVALID, ("gpu-platform:observability.nodeRepair",)),
    Case("bad-idle-threshold", {"gpu-platform:observability.idleGpuThresholdPercent": 0}, INVALID, ("gpu-platform:observability.idleGpuThresholdPercent",)),
    Case("bad-idle-hours", {"gpu-platform:observability.idleGpuHours": 73}, INVALID, ("gpu-platform:observability.idleGpuHours",)),
    Case("bad-stuck-minutes", {"gpu-platform:observability.stuckGpuNodeMinutes": 5}, INVALID, ("gpu-platform:observability.stuckGpuNodeMinutes",)),
    Case("bad-subscriber", {"gpu-platform:observability.alarmSubscribers": ["oncall"]}, INVALID, ("gpu-platform:observability.alarmSubscribers[0]",)),
    # Subscribers the standard alarm topic cannot deliver to: a FIFO queue, another partition, no function, no queue name.
    Case("subscriber-fifo-queue", {"gpu-platform:observability.alarmSubscribers": ["ops@example.com", "arn:aws:sqs:us-west-1:111122223333:gpu-alerts.fifo"]}, INVALID, ("gpu-platform:observability.alarmSubscribers[1]",)),
    Case("subscriber-other-partition", {"gpu-platform:observability.alarmSubscribers": ["arn:aws-us-gov:sqs:us-gov-west-1:111122223333:gpu-alerts"]}, INVALID, ("gpu-platform:observability.alarmSubscribers[0]",)),
    Case("subscriber-lambda-layer", {"gpu-platform:observability.alarmSubscribers": ["arn:aws:lambda:us-west-1:111122223333:layer:tools:3"]}, INVALID, ("gpu-platform:observability.alarmSubscribers[0]",)),
    Case("subscriber-bad-queue-name", {"gpu-platform:observability.alarmSubscribers": ["arn:aws:sqs:us-west-1:111122223333:gpu.alerts"]}, INVALID, ("gpu-platform:observability.alarmSubscribers[0]",)),
    Case("ok-subscribers", {"gpu-platform:observability.alarmSubscribers": ["ops@example.com", "arn:aws:sqs:us-east-1:111122223333:gpu-alerts", "arn:aws:lambda:us-west-1:111122223333:function:page-oncall:live"]}, OK),
    Case("alarms-without-metrics", {"gpu-platform:observability.gpuMetrics": False}, INVALID, tuple(f"gpu-platform:observability.{k}" for k in ("idleGpuThresholdPercent", "idleGpuHours", "stuckGpuNodeMinutes", "alarmSubscribers"))),
    Case("ok-repair-only", {"gpu-platform:observability": {"nodeRepair": True}}, OK),
    Case("ok-observability-bounds", {"gpu-platform:observability.idleGpuThresholdPercent": 100, "gpu-platform:observability.idleGpuHours": 72, "gpu-platform:observability.stuckGpuNodeMinutes": 10}, OK),
    Case("ok-group-enabled", {"gpu-platform:gpuNodeGroup": {"enabled": True, "instanceTypes": ["g4dn.xlarge"], "minSize": 1, "desiredSize": 1, "maxSize": 1}}, OK),
    Case("group-never-scales", {"gpu-platform:gpuNodeGroup": {"enabled": True, "minSize": 0, "desiredSize": 0, "maxSize": 1}}, INVALID, ("gpu-platform:gpuNodeGroup",)),
    # --- a lab's JupyterHub ------------------------------------------------------------------------------
    Case("hub-public-without-certificate", {f"{HUB}.certificateArn": DELETE}, INVALID, (f"{HUB}.certificateArn",)),
    Case("ok-hub-internal-without-certificate", {f"{HUB}.certificateArn": DELETE, f"{HUB}.internal": True}, OK),
    Case("hub-image-without-digest", {f"{HUB}.image": "quay.io/jupyter/pytorch-notebook:cuda12-python-3.12"}, INVALID, (f"{HUB}.image",)),
    Case("hub-unreachable-pool", {f"{HUB}.pools": ["a10g-inference"]}, INVALID, (f"{HUB}.pools",)),
    Case("hub-idle-minutes-out-of-range", {f"{HUB}.idleMinutes": 1441}, INVALID, (f"{HUB}.idleMinutes",)),
    # A week-long notebook needs a pool that drains for a week (expiry never ends a notebook).
    Case("ok-hub-idle-minutes-bounds", {f"{HUB}.idleMinutes": 5, f"{HUB}.maxHours": 168, f"{POOL}.terminationGracePeriod": "168h1m", "gpu-platform:karpenter.cpuUserPool": {"terminationGracePeriod": "168h1m"}}, OK),
    # The demo's 3 pods hold 3 of the lab's slots all week: 6 learners need 9 (the quota would refuse the 7th slot).
    Case("bad-session-beside-the-demo", {"gpu-platform:labs[0].gpuSlots": 6}, INVALID, ("gpu-platform:labs[0].sessions[0].learners",)),
    # Sessions of one lab in class at once share its gpuSlots (the weekly step function, demo pods included).
    Case("lab-sessions-overlap", {"gpu-platform:labs[0].sessions[1]": {**SESSION, "schedule": "0 18 * * tue"}}, INVALID, ("gpu-platform:labs[0].sessions[1].learners",)),
    Case("lab-sessions-overlap-across-midnight", {"gpu-platform:labs[0].sessions[0].schedule": "0 23 * * sat", "gpu-platform:labs[0].sessions[1]": {**SESSION, "schedule": "30 0 * * sun", "learners": 1}}, INVALID, ("gpu-platform:labs[0].sessions[1].learners",)),
    Case("lab-sessions-overlap-across-zones", {"gpu-platform:karpenter.nodePools[1]": EVENING_POOL, "gpu-platform:labs[0].sessions[1]": {**SESSION, "schedule": "30 1 * * wed", "timezone": "Europe/Berlin", "nodePool": "g4-evening"}}, INVALID, ("gpu-platform:labs[0].sessions[1].learners",)),
    Case("ok-lab-sessions-back-to-back", {"gpu-platform:labs[0].sessions[1]": {**SESSION, "schedule": "0 19 * * tue"}}, OK),
    Case("ok-lab-sessions-other-zone-apart", {"gpu-platform:karpenter.nodePools[1]": EVENING_POOL, "gpu-platform:labs[0].sessions[1]": {**SESSION, "schedule": "0 9 * * wed", "timezone": "Europe/Berlin", "nodePool": "g4-evening"}}, OK),
    # A hub cap shorter than its lab's 2h class: valid, a WARNING line in the summary (tests/settings/test_settings_errors.py).
    Case("ok-hub-shorter-than-class", {f"{HUB}.maxHours": 1}, OK),
    Case("bad-hub-outlives-pool-drain", {f"{HUB}.maxHours": 3}, INVALID, (f"{HUB}.maxHours",)),
    Case("leaf-secret-hub-password-in-clear-text", {f"{HUB}.auth.password": "workshop-2026"}, INVALID, (f"{HUB}.auth.password",)),
    Case("leaf-secret-in-lab-cpu", {"gpu-platform:labs[0].cpu": {"secure": "AAABAJ0y"}}, INVALID, ("gpu-platform:labs[0].cpu",)),
    Case("hub-quota-too-small", {"gpu-platform:labs[0].memory": "20Gi"}, INVALID, ("gpu-platform:labs[0].memory",)),
    # A tagged union's typo is named at its discriminator (`auth.type`), with the tags allowed and the closest one.
    Case("hub-unknown-login", {f"{HUB}.auth.type": "dummy"}, INVALID, (f"{HUB}.auth.type",)),
    Case("hub-login-typo", {f"{HUB}.auth.type": "shared-password"}, INVALID, (f"{HUB}.auth.type",)),
    Case("hub-login-without-type", {f"{HUB}.auth.type": DELETE}, INVALID, (f"{HUB}.auth.type",)),
    # Two hubs, one hostname: one DNS name cannot point at two load balancers (nor be two OAuth callbacks).
    Case("hubs-share-a-hostname", {"gpu-platform:labs[1]": {"name": "vision-lab", "gpuSlots": 1, "hub": SECOND_HUB}}, INVALID, ("gpu-platform:labs[1].hub.hostname",)),
    Case("hubs-share-a-hostname-any-case", {"gpu-platform:labs[1]": {"name": "vision-lab", "gpuSlots": 1, "hub": {**SECOND_HUB, "hostname": "Hub.Learning-Lab.example.org"}}}, INVALID, ("gpu-platform:labs[1].hub.hostname",)),
    Case("ok-two-hubs", {"gpu-platform:labs[1]": {"name": "vision-lab", "gpuSlots": 1, "hub": {**SECOND_HUB, "hostname": "hub.vision-lab.example.org"}}}, OK),
    # --- several mistakes in one file: every one is named ------------------------------------------
    Case("three-mistakes", {"aws:region": "nowhere", "gpu-platform:kubernetesVersion": "0.1", "gpu-platform:gpuSharing.replicas": 1}, INVALID, ("aws:region", "gpu-platform:kubernetesVersion", "gpu-platform:gpuSharing.replicas")),
]  # fmt: skip
