"""The client's table of built-in resources names them as kube-apiserver's discovery does,
so the informer factory can tell two names of one resource apart without discovery."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from aioinformer.client import GVR
from aioinformer.client._builtin import BUILTIN_RESOURCES, builtin_gvr
from aioinformer.testing._resources import BUILTIN_TYPES as SERVED

if TYPE_CHECKING:
    from aioinformer._apiserver.objects import ResourceType


def _names_of(rt: ResourceType) -> set[str]:
    return {rt.plural, rt.singular, rt.kind, *rt.short_names} - {""}


@pytest.mark.parametrize("served", SERVED, ids=lambda rt: rt.plural)
def test_every_name_the_fake_server_publishes_for_a_built_in_resolves_to_it(
    served: ResourceType,
) -> None:
    # The fake server's table mirrors kube-apiserver's discovery documents.
    expected = GVR(served.group, served.version, served.plural)
    names = _names_of(served)
    for name in names:
        # A bare name two groups publish (events) means the first served, as discovery
        # searches; qualified by its group it means this one.
        first = next(rt for rt in SERVED if name in _names_of(rt))
        bare = GVR(first.group, first.version, first.plural)
        assert builtin_gvr(name) == bare, name
        assert builtin_gvr(name.upper()) == bare, name
        assert builtin_gvr(f"{name}.{served.group}" if served.group else name) == expected
    info = next(i for i in BUILTIN_RESOURCES if i.gvr == expected)
    assert (info.kind, info.namespaced) == (served.kind, served.namespaced)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("deploy", GVR("apps", "v1", "deployments")),
        ("Deployment.apps", GVR("apps", "v1", "deployments")),
        # Two groups serve Events: the core one first, as discovery searches.
        ("ev", GVR("", "v1", "events")),
        ("events", GVR("", "v1", "events")),
        ("events.events.k8s.io", GVR("events.k8s.io", "v1", "events")),
        ("hpa", GVR("autoscaling", "v2", "horizontalpodautoscalers")),
        ("crds", GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")),
        ("leases.coordination.k8s.io", GVR("coordination.k8s.io", "v1", "leases")),
    ],
)
def test_names_resolve_by_discoverys_rules(word: str, expected: GVR) -> None:
    assert builtin_gvr(word) == expected


@pytest.mark.parametrize("word", ["widgets", "widget.example.com", "pods.apps", "", "v1"])
def test_a_name_no_built_in_has_is_left_to_discovery(word: str) -> None:
    assert builtin_gvr(word) is None


def test_the_table_holds_each_resource_once_and_the_core_group_first() -> None:
    gvrs = [info.gvr for info in BUILTIN_RESOURCES]
    assert len(set(gvrs)) == len(gvrs)
    groups = [gvr.group for gvr in gvrs]
    assert groups == [""] * groups.count("") + [g for g in groups if g]
