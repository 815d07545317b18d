"""The GPU fleet CloudWatch dashboard body, as a plain dict (`json.dumps` it for `dashboard_body`).

Pure: the cluster, its labs and its pools' slot ceilings in, dict out. Structure: the CloudWatch dashboard body
(`widgets[]` with `type`, `x`, `y`, `width`, `height`, `properties`; metric widgets with `metrics`,
`region`, `view`, `period`, `stat`, `title`). Every metric is a Container Insights one AWS documents
(see `components/renderers/observability/container_insights_metrics.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from components.renderers.observability.container_insights_metrics import (
    COLLECTION_INTERVAL_SECONDS,
    METRIC_NAMESPACE,
    NODE_GPU_LIMIT,
    NODE_GPU_MEMORY_UTILIZATION,
    NODE_GPU_USAGE,
    NODE_GPU_UTILIZATION,
    POD_GPU_MEMORY_UTILIZATION,
    POD_GPU_REQUEST,
    POD_GPU_UTILIZATION,
)
from components.settings import DemoSettings, LabSettings

GRID_WIDTH: Final = 24  # CloudWatch dashboards are 24 columns wide
WIDGET_HEIGHT: Final = 6
NODE_PERIOD_SECONDS: Final = 300
IDLE_LIST_PERIOD_SECONDS: Final = 3600
DCGM_EXPORTER_PR: Final = "https://github.com/NVIDIA/dcgm-exporter/pull/594"
# The node metrics' own dimension set. The agent also publishes them per GPU device
# ({ClusterName, NodeName, InstanceId, InstanceType, GpuDevice}); a SEARCH on `NodeName` alone matched both.
NODE_SCHEMA: Final = ("ClusterName", "InstanceId", "NodeName")
LAB_SCHEMA: Final = ("ClusterName", "Namespace")
POD_SCHEMA: Final = ("ClusterName", "Namespace", "PodName")


def _intro(cluster_name: str) -> str:
    return (
        f"# GPU fleet of {cluster_name}\n"
        "Utilisation and memory **per GPU node**, and **per lab (namespace) and per pod**: the platform's "
        "dcgm-exporter reports each process of a shared (time-sliced) GPU and maps it to its pod "
        f"(`KUBERNETES_VIRTUAL_GPUS`, [dcgm-exporter#594]({DCGM_EXPORTER_PR})); a pod's figure is its own "
        "share of the GPU. Labs also show the **GPU slots they request** (`nvidia.com/gpu` requests per "
        "namespace), set against the slots the GPU nodes advertise. Container Insights carries no "
        "NodePool dimension: node counts are for the whole GPU fleet, and each pool's slot ceiling "
        "(its `nvidia.com/gpu` limit) is drawn as a line. "
        "**Follow-up:** GPU nodes per pool need Karpenter's own metrics (`karpenter_nodes_allocatable` by `nodepool`), "
        "which this dashboard does not collect yet."
    )


def _search(metric: str, schema: tuple[str, ...], cluster: str, stat: str, period: int) -> str:
    """SEARCH within exactly one dimension set: `{Namespace,dims}` matches no series with more dimensions."""
    return (
        f'SEARCH(\'{{{METRIC_NAMESPACE},{",".join(schema)}}} MetricName="{metric}" '
        f"ClusterName=\"{cluster}\"', '{stat}', {period})"
    )


def _insights(
    select: str, schema: str, cluster: str, group_by: str | None = None, where: str = "", tail: str = ""
) -> str:
    query = f"SELECT {select} FROM SCHEMA(\"{METRIC_NAMESPACE}\", {schema}) WHERE ClusterName = '{cluster}'{where}"
    query = f"{query} GROUP BY {group_by}" if group_by else query
    return f"{query} {tail}" if tail else query


def lab_namespaces(labs: Sequence[LabSettings], demo: DemoSettings) -> list[str]:
    """Namespaces whose pods use GPU slots: every lab, and the demo's."""
    names = [lab.name for lab in labs]
    if demo.enabled:
        names.append(demo.namespace)
    return sorted(set(names))


def _metric_widget(
    x: int, y: int, title: str, expressions: list[tuple[str, str]], period: int, region: str, **extra: Any
) -> dict[str, Any]:
    metrics = [
        [{"expression": expression, "id": f"q{index}", "label": label}]
        for index, (label, expression) in enumerate(expressions)
    ]
    properties: dict[str, Any] = {
        "title": title,
        "view": "timeSeries",
        "region": region,
        "period": period,
        "stat": "Average",
        "metrics": metrics,
        **extra,
    }
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": GRID_WIDTH // 2,
        "height": WIDGET_HEIGHT,
        "properties": properties,
    }


def render_dashboard(
    cluster: str, region: str, namespaces: Sequence[str], slot_ceilings: Mapping[str, int]
) -> dict[str, Any]:
    """The dashboard of one cluster: a widget per namespace (`lab_namespaces`), a line per pool's max slots."""
    node_schema = ", ".join(NODE_SCHEMA)
    lab_schema, pod_schema = ", ".join(LAB_SCHEMA), ", ".join(POD_SCHEMA)
    ceilings = [{"label": f"{pool} max slots", "value": slots} for pool, slots in slot_ceilings.items()]
    half = GRID_WIDTH // 2
    widgets = [
        {"type": "text", "x": 0, "y": 0, "width": GRID_WIDTH, "height": 3, "properties": {"markdown": _intro(cluster)}},
        _metric_widget(
            0, 3, "GPU utilisation per node (%)",
            [("", _search(NODE_GPU_UTILIZATION, NODE_SCHEMA, cluster, "Average", NODE_PERIOD_SECONDS))],
            NODE_PERIOD_SECONDS, region, yAxis={"left": {"min": 0, "max": 100}},
        ),
        _metric_widget(
            half, 3, "GPU memory utilisation per node (%)",
            [("", _search(NODE_GPU_MEMORY_UTILIZATION, NODE_SCHEMA, cluster, "Average", NODE_PERIOD_SECONDS))],
            NODE_PERIOD_SECONDS, region, yAxis={"left": {"min": 0, "max": 100}},
        ),
        _metric_widget(
            0, 3 + WIDGET_HEIGHT, "GPU slots requested per lab (namespace)",
            [("", _insights(f"SUM({POD_GPU_REQUEST})", "ClusterName, Namespace, PodName", cluster, "Namespace"))],
            COLLECTION_INTERVAL_SECONDS, region, stacked=True,
        ),
        _metric_widget(
            half, 3 + WIDGET_HEIGHT, "GPU slots: advertised vs in use (all pools)",
            [
                ("advertised (allocatable)", _insights(f"SUM({NODE_GPU_LIMIT})", node_schema, cluster)),
                ("requested by running pods", _insights(f"SUM({NODE_GPU_USAGE})", node_schema, cluster)),
            ],
            COLLECTION_INTERVAL_SECONDS, region, annotations={"horizontal": ceilings},
        ),
        _metric_widget(
            0, 3 + 2 * WIDGET_HEIGHT, "GPU nodes advertising GPUs",
            [("GPU nodes", _insights(f"COUNT({NODE_GPU_LIMIT})", node_schema, cluster))],
            COLLECTION_INTERVAL_SECONDS, region,
        ),
        _metric_widget(
            half, 3 + 2 * WIDGET_HEIGHT, "GPU utilisation per lab (namespace, %)",
            [("", _insights(f"AVG({POD_GPU_UTILIZATION})", lab_schema, cluster, "Namespace"))],
            COLLECTION_INTERVAL_SECONDS, region,
        ),
        _metric_widget(
            0, 3 + 3 * WIDGET_HEIGHT, "Least busy GPU pods (idle first, %)",
            [("", _insights(
                f"MAX({POD_GPU_UTILIZATION})", pod_schema, cluster, "Namespace, PodName", tail="ORDER BY MAX() ASC LIMIT 20"
            ))],
            IDLE_LIST_PERIOD_SECONDS, region,
        ),
    ]  # fmt: skip
    for index, namespace in enumerate(namespaces):
        where = f" AND Namespace = '{namespace}'"
        widgets.append(
            _metric_widget(
                (index % 2) * half, 3 + (4 + index // 2) * WIDGET_HEIGHT, f"GPU use per pod in lab {namespace} (%)",
                [
                    ("", _insights(f"AVG({POD_GPU_UTILIZATION})", pod_schema, cluster, "PodName", where=where)),
                    ("", _insights(f"AVG({POD_GPU_MEMORY_UTILIZATION})", pod_schema, cluster, "PodName", where=where)),
                ],
                COLLECTION_INTERVAL_SECONDS, region,
            )
        )  # fmt: skip
    return {"start": "-PT24H", "periodOverride": "inherit", "widgets": widgets}
