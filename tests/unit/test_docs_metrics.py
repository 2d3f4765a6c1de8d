"""The metrics reference (docs/reference/metrics.md) lists exactly what the Prometheus
provider registers: every series with its type and labels, nothing more, nothing less."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from aioinformer.contrib.prometheus import PrometheusMetricsProvider

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "metrics.md"

Series = tuple[str, str, tuple[str, ...]]


def registered() -> set[Series]:
    """(name, type, labels) of every metric a provider registers on a registry of its own."""
    provider = PrometheusMetricsProvider(registry=CollectorRegistry())
    found: set[Series] = set()
    for metric in vars(provider).values():
        if isinstance(metric, MetricWrapperBase):
            # prometheus_client keeps a counter's name without its "_total" suffix.
            name = metric._name + ("_total" if metric._type == "counter" else "")
            found.add((name, str(metric._type), tuple(metric._labelnames)))
    return found


def documented() -> set[Series]:
    """(name, type, labels) of every row of the page's metric table."""
    rows: set[Series] = set()
    for line in PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`\w+`", cells[0]):
            labels = tuple(re.findall(r"`(\w+)`", cells[2]))
            rows.add((cells[0].strip("`"), cells[1], labels))
    return rows


def test_the_page_lists_every_registered_series_with_its_type_and_labels() -> None:
    assert documented() == registered()


def test_the_table_is_read_from_the_page() -> None:
    # Guards the reader above: an empty parse would compare two empty sets on a broken page.
    assert len(documented()) >= 40
    assert ("workqueue_depth", "gauge", ("name", "priority")) in documented()
