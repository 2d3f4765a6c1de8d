"""Lister: reads of an informer's cache by name, namespace, label selector and index,
raw or typed."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.errors import SelectorError
from aioinformer.indexer import NAMESPACE_INDEX, Indexer, namespace_index_func
from aioinformer.informer import Lister
from aioinformer.labels import parse_label_selector
from aioinformer.models import KubeObject


def obj(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def by_node(item: Any) -> list[str]:
    node = item["metadata"]["labels"].get("node")
    return [node] if node else []


def make_indexer(*, with_namespace_index: bool) -> Indexer[Any]:
    indexers: dict[str, Any] = {"node": by_node}
    if with_namespace_index:
        indexers[NAMESPACE_INDEX] = namespace_index_func
    indexer: Indexer[Any] = Indexer(indexers=indexers)
    for item in (
        obj("web-0", "prod", app="web", node="n1"),
        obj("web-1", "prod", app="web", node="n2"),
        obj("db-0", "prod", app="db", node="n1"),
        obj("web-0", "dev", app="web"),
        obj("node-a", None, role="worker"),
    ):
        indexer.add(item)
    return indexer


def names(items: list[Any]) -> list[str]:
    return sorted(f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}" for i in items)


@pytest.fixture(params=[True, False], ids=["namespace-index", "scan"])
def lister(request: pytest.FixtureRequest) -> Lister[Any]:
    return Lister(make_indexer(with_namespace_index=request.param))


def test_get_by_name_and_namespace(lister: Lister[Any]) -> None:
    prod = lister.get("web-0", "prod")
    assert prod is not None
    assert prod["metadata"]["labels"]["node"] == "n1"
    dev = lister.get("web-0", namespace="dev")
    assert dev is not None
    assert dev["metadata"]["namespace"] == "dev"
    assert lister.get("web-0") is None  # namespaced objects need their namespace
    assert lister.get("missing", "prod") is None


def test_get_cluster_scoped_object_without_namespace(lister: Lister[Any]) -> None:
    node = lister.get("node-a")
    assert node is not None
    assert node["metadata"]["labels"] == {"role": "worker"}


@pytest.mark.parametrize(
    ("namespace", "selector", "expected"),
    [
        pytest.param(
            None,
            None,
            ["/node-a", "dev/web-0", "prod/db-0", "prod/web-0", "prod/web-1"],
            id="everything",
        ),
        pytest.param("prod", None, ["prod/db-0", "prod/web-0", "prod/web-1"], id="namespace"),
        pytest.param(
            "",
            None,
            ["/node-a", "dev/web-0", "prod/db-0", "prod/web-0", "prod/web-1"],
            id="empty-namespace-means-all",
        ),
        pytest.param("nowhere", None, [], id="empty-namespace"),
        pytest.param(None, "app=web", ["dev/web-0", "prod/web-0", "prod/web-1"], id="selector"),
        pytest.param("prod", "app=web,node=n1", ["prod/web-0"], id="namespace-and-selector"),
        pytest.param(
            "prod", "app in (web, db),node!=n2", ["prod/db-0", "prod/web-0"], id="set-selector"
        ),
        pytest.param(None, "!app", ["/node-a"], id="does-not-exist"),
        pytest.param("dev", "", ["dev/web-0"], id="empty-selector-matches-all"),
    ],
)
def test_list_filters_by_namespace_and_label_selector(
    lister: Lister[Any], namespace: str | None, selector: str | None, expected: list[str]
) -> None:
    assert names(lister.list(namespace=namespace, label_selector=selector)) == expected


def test_list_accepts_a_parsed_selector(lister: Lister[Any]) -> None:
    selector = parse_label_selector("app=db")
    assert names(lister.list(label_selector=selector)) == ["prod/db-0"]


def test_list_rejects_an_invalid_selector(lister: Lister[Any]) -> None:
    with pytest.raises(SelectorError):
        lister.list(label_selector="app in (")


def test_by_index_and_unknown_index(lister: Lister[Any]) -> None:
    assert names(lister.by_index("node", "n1")) == ["prod/db-0", "prod/web-0"]
    assert lister.by_index("node", "n9") == []
    with pytest.raises(KeyError):
        lister.by_index("no-such-index", "x")


def test_lister_is_a_live_view_of_the_cache() -> None:
    indexer = make_indexer(with_namespace_index=True)
    lister: Lister[Any] = Lister(indexer)
    indexer.add(obj("web-2", "prod", app="web"))
    indexer.delete(obj("db-0", "prod"))
    assert names(lister.list(namespace="prod")) == ["prod/web-0", "prod/web-1", "prod/web-2"]


class Pod(KubeObject):
    pass


def test_typed_lister_returns_models_and_leaves_the_cache_raw() -> None:
    indexer = make_indexer(with_namespace_index=True)
    lister = Lister(indexer, model=Pod)
    got = lister.get("web-0", "prod")
    assert isinstance(got, Pod)
    assert got.metadata.labels == {"app": "web", "node": "n1"}
    assert lister.get("missing", "prod") is None
    listed = lister.list(namespace="prod", label_selector="app=web")
    assert all(isinstance(item, Pod) for item in listed)
    # str() because a model's name may be None (generateName); a None would fail the match.
    assert sorted(str(item.metadata.name) for item in listed) == ["web-0", "web-1"]
    assert all(isinstance(item, Pod) for item in lister.by_index("node", "n1"))
    assert all(type(item) is dict for item in indexer.list())


def test_a_lister_scoped_to_a_namespace_gets_by_name_alone_there() -> None:
    lister: Lister[Any] = Lister(make_indexer(with_namespace_index=False), namespace="dev")
    found = lister.get("web-0")
    assert found is not None
    assert found["metadata"]["namespace"] == "dev"
    prod = lister.get("web-0", "prod")  # an explicit namespace still wins
    assert prod is not None
    assert prod["metadata"]["namespace"] == "prod"
    assert lister.get("db-0") is None  # only in prod
    assert lister.get("web-0", "") is None  # "" asks for a cluster-scoped object
    assert "namespace='dev'" in repr(lister)


def test_a_lister_scoped_to_a_namespace_still_finds_cluster_scoped_objects() -> None:
    lister: Lister[Any] = Lister(make_indexer(with_namespace_index=False), namespace="dev")
    node = lister.get("node-a")
    assert node is not None
    assert "namespace" not in node["metadata"]
