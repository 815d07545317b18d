"""The Prometheus text format, as far as dcgm-exporter writes it: `name{k="v",...} value` lines.

NVIDIA/dcgm-exporter internal/pkg/rendermetrics/render_metrics.go @ 4.5.3-4.8.2 (`gpuMetricsFormat`): every
GPU sample line is `FIELD{gpu=..,UUID=..,pci_bus_id=..,device=..,modelName=..[,Hostname=..],<labels>,<attrs>}
VALUE`, with no timestamp; `# HELP` / `# TYPE` lines come before each field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def _labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    position = 0
    while position < len(text):
        match = _LABEL.match(text, position)
        if match is None:
            raise ValueError(f"bad label set: {text!r}")
        value = re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], match.group(2))
        labels[match.group(1)] = value
        position = match.end()
    return labels


def parse(text: str, names: frozenset[str] | None = None) -> list[Sample]:
    """The samples of an exposition, only those named in `names` when given; NaN and bad values are skipped."""
    samples: list[Sample] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        name, label_text, value_text = match.groups()
        if names is not None and name not in names:
            continue
        try:
            value = float(value_text)
        except ValueError:
            continue
        if value != value:  # NaN
            continue
        samples.append(Sample(name, _labels(label_text or ""), value))
    return samples
