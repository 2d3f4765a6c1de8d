"""Indexer and key functions, with cases ported from client-go's ``store_test.go``,
``index_test.go`` and ``thread_safe_store_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.errors import IndexFuncError, KeyFuncError
from aioinformer.indexer import (
    NAMESPACE_INDEX,
    Indexer,
    meta_namespace_key,
    namespace_index_func,
    split_meta_namespace_key,
)
from aioinformer.models import DeletedFinalStateUnknown, KubeObject, ObjectMeta


def pod(name: str, namespace: str | None = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def with_users(name: str, users: str) -> dict[str, Any]:
    obj = pod(name, None)
    obj["metadata"]["annotations"] = {"users": users}
    return obj


def users_index(obj: dict[str, Any]) -> list[str]:
    return str(obj["metadata"]["annotations"]["users"]).split(",")


def label_foo_index(obj: dict[str, Any]) -> list[str]:
    return [obj["metadata"].get("labels", {}).get("foo", "")]


# Objects as (id, val) pairs keyed by id and indexed by val, like client-go's store tests.
def pair_key(obj: tuple[str, str]) -> str:
    return obj[0]


def pair_val_index(obj: tuple[str, str]) -> list[str]:
    return [obj[1]]


def comma_index(obj: tuple[str, str]) -> list[str]:
    return obj[1].split(",")


def indices_of(indexer: Indexer[Any], name: str) -> dict[str, set[str]]:
    """The index as value -> set of keys, read through the public API only."""
    return {
        value: set(indexer.index_keys(name, value))
        for value in indexer.list_index_func_values(name)
    }


# -- keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param(pod("web", "prod"), "prod/web", id="namespaced-dict"),
        pytest.param(pod("node-1", None), "node-1", id="cluster-scoped-dict"),
        pytest.param(pod("node-1", ""), "node-1", id="empty-namespace-dict"),
        pytest.param(
            KubeObject(metadata=ObjectMeta(name="web", namespace="prod")),
            "prod/web",
            id="typed-object",
        ),
        pytest.param(KubeObject(metadata=ObjectMeta(name="n1")), "n1", id="typed-cluster-scoped"),
        pytest.param(DeletedFinalStateUnknown("ns/gone", None), "ns/gone", id="tombstone"),
    ],
)
def test_meta_namespace_key_gives_namespace_slash_name(obj: Any, key: str) -> None:
    assert meta_namespace_key(obj) == key


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="no-metadata"),
        pytest.param({"metadata": {}}, id="no-name"),
        pytest.param({"metadata": {"name": ""}}, id="empty-name"),
        pytest.param({"metadata": {"name": 7}}, id="name-not-a-string"),
        pytest.param({"metadata": None}, id="metadata-null"),
        pytest.param(KubeObject(), id="typed-without-name"),
        pytest.param(42, id="not-an-object"),
    ],
)
def test_meta_namespace_key_rejects_objects_without_usable_metadata(obj: Any) -> None:
    with pytest.raises(KeyFuncError):
        meta_namespace_key(obj)


def test_key_func_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="metadata"):
        meta_namespace_key({})


@pytest.mark.parametrize(
    ("key", "parts"),
    [
        pytest.param("ns/name", ("ns", "name"), id="namespaced"),
        pytest.param("name", ("", "name"), id="cluster-scoped"),
        pytest.param("/name", ("", "name"), id="empty-namespace"),
    ],
)
def test_split_meta_namespace_key_inverts_the_key(key: str, parts: tuple[str, str]) -> None:
    assert split_meta_namespace_key(key) == parts


def test_split_meta_namespace_key_rejects_more_than_one_slash() -> None:
    with pytest.raises(KeyFuncError, match="unexpected key format"):
        split_meta_namespace_key("a/b/c")


@pytest.mark.parametrize(
    ("obj", "values"),
    [
        pytest.param(pod("a", "prod"), ["prod"], id="namespaced"),
        pytest.param(pod("a", None), [""], id="cluster-scoped"),
        pytest.param(KubeObject(metadata=ObjectMeta(name="a", namespace="x")), ["x"], id="typed"),
    ],
)
def test_namespace_index_func_gives_the_namespace(obj: Any, values: list[str]) -> None:
    assert namespace_index_func(obj) == values


def test_namespace_index_func_rejects_an_object_without_metadata() -> None:
    with pytest.raises(KeyFuncError):
        namespace_index_func(DeletedFinalStateUnknown("k", None))


# -- store behaviour (store_test.go doTestStore / doTestIndex) --------------------------


def test_store_adds_updates_deletes_lists_and_replaces() -> None:
    store: Indexer[tuple[str, str]] = Indexer(pair_key)
    store.add(("foo", "bar"))
    assert store.get(("foo", "")) == ("foo", "bar")
    store.update(("foo", "baz"))
    assert store.get(("foo", "")) == ("foo", "baz")
    store.delete(("foo", ""))
    assert store.get(("foo", "")) is None

    for obj in [("a", "b"), ("c", "d"), ("e", "e")]:
        store.add(obj)
    assert sorted(val for _, val in store.list()) == ["b", "d", "e"]

    store.replace([("foo", "foo"), ("bar", "bar")], "0")
    assert sorted(val for _, val in store.list()) == ["bar", "foo"]
    assert sorted(store.list_keys()) == ["bar", "foo"]
    assert len(store) == 2


def test_index_finds_objects_sharing_a_value() -> None:
    indexer: Indexer[tuple[str, str]] = Indexer(pair_key, indexers={"by_val": pair_val_index})
    for obj in [("a", "b"), ("c", "b"), ("e", "f"), ("g", "h")]:
        indexer.add(obj)
    expected = {"b": {"a", "c"}, "f": {"e"}, "h": {"g"}}
    for value, ids in expected.items():
        found = {obj_id for obj_id, _ in indexer.index("by_val", ("", value))}
        assert found == ids


def test_get_by_key_returns_none_for_an_absent_key() -> None:
    store: Indexer[dict[str, Any]] = Indexer()
    store.add(pod("a"))
    assert store.get_by_key("default/a") == pod("a")
    assert store.get_by_key("default/b") is None


def test_delete_of_an_absent_object_is_a_no_op() -> None:
    store: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    store.delete(pod("ghost"))
    assert len(store) == 0
    assert store.list_index_func_values(NAMESPACE_INDEX) == []


def test_delete_accepts_a_tombstone() -> None:
    store: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    store.add(pod("a", "ns1"))
    store.delete(DeletedFinalStateUnknown("ns1/a", None))
    assert store.list_keys() == []
    assert store.list_index_func_values(NAMESPACE_INDEX) == []


def test_put_by_key_and_delete_by_key_keep_the_indexes() -> None:
    store: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    store.put_by_key("ns1/a", pod("a", "ns1"))
    assert store.get_by_key("ns1/a") == pod("a", "ns1")
    assert store.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    store.delete_by_key("ns1/a")
    store.delete_by_key("ns1/ghost")
    assert store.list_keys() == []
    assert store.list_index_func_values(NAMESPACE_INDEX) == []


# -- index_test.go ------------------------------------------------------------------


def test_list_index_func_values_gives_each_value_once() -> None:
    index: Indexer[dict[str, Any]] = Indexer(indexers={"testmodes": label_foo_index})
    index.add(pod("one", None, foo="bar"))
    index.add(pod("two", None, foo="bar"))
    index.add(pod("tre", None, foo="biz"))
    assert sorted(index.list_index_func_values("testmodes")) == ["bar", "biz"]


def test_multi_valued_index_follows_adds_deletes_and_updates() -> None:
    index: Indexer[dict[str, Any]] = Indexer(indexers={"byUser": users_index})
    pod1 = with_users("one", "ernie,bert")
    pod2 = with_users("two", "bert,oscar")
    pod3 = with_users("tre", "ernie,elmo")
    for obj in (pod1, pod2, pod3):
        index.add(obj)

    def names(user: str) -> set[str]:
        return {obj["metadata"]["name"] for obj in index.by_index("byUser", user)}

    assert names("ernie") == {"one", "tre"}
    assert names("bert") == {"one", "two"}
    assert names("elmo") == {"tre"}
    assert names("oscar") == {"two"}
    assert names("elmo1") == set()

    index.delete(pod3)
    assert names("ernie") == {"one"}
    assert names("elmo") == set()

    index.update(with_users("two", "oscar"))
    assert names("bert") == {"one"}


# -- thread_safe_store_test.go --------------------------------------------------------


def test_delete_removes_an_emptied_set_from_the_index() -> None:
    store: Indexer[tuple[str, str]] = Indexer(pair_key, indexers={"idx": pair_val_index})
    store.add(("testKey", "testKey"))
    assert indices_of(store, "idx") == {"testKey": {"testKey"}}
    store.delete(("testKey", ""))
    assert indices_of(store, "idx") == {}


def test_delete_keeps_a_set_that_still_has_keys() -> None:
    store: Indexer[tuple[str, str]] = Indexer(pair_key, indexers={"idx": lambda obj: ["shared"]})
    store.add(("retain", "retain"))
    store.add(("delete", "delete"))
    assert store.index_keys("idx", "shared") == ["delete", "retain"]
    store.delete(("delete", ""))
    assert store.index_keys("idx", "shared") == ["retain"]


def test_index_functions_with_multiple_values_are_maintained_on_every_write() -> None:
    store: Indexer[tuple[str, str]] = Indexer(pair_key, indexers={"idx": comma_index})
    steps: list[tuple[str, tuple[str, str], dict[str, list[str]]]] = [
        ("add", ("key1", "foo"), {"foo": ["key1"]}),
        ("add", ("key2", "bar"), {"foo": ["key1"], "bar": ["key2"]}),
        ("update", ("key2", "foo,bar"), {"foo": ["key1", "key2"], "bar": ["key2"]}),
        ("update", ("key1", "foo,bar"), {"foo": ["key1", "key2"], "bar": ["key1", "key2"]}),
        (
            "add",
            ("key3", "foo,bar,baz"),
            {"foo": ["key1", "key2", "key3"], "bar": ["key1", "key2", "key3"], "baz": ["key3"]},
        ),
        (
            "update",
            ("key1", "foo"),
            {"foo": ["key1", "key2", "key3"], "bar": ["key2", "key3"], "baz": ["key3"]},
        ),
        (
            "update",
            ("key2", "bar"),
            {"foo": ["key1", "key3"], "bar": ["key2", "key3"], "baz": ["key3"]},
        ),
        ("delete", ("key1", ""), {"foo": ["key3"], "bar": ["key2", "key3"], "baz": ["key3"]}),
        ("delete", ("key3", ""), {"bar": ["key2"]}),
    ]
    for op, obj, expected in steps:
        getattr(store, op)(obj)
        assert {v: store.index_keys("idx", v) for v in store.list_index_func_values("idx")} == (
            expected
        ), (op, obj)


# -- contract details -----------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda ix: ix.index("nope", pod("a")), id="index"),
        pytest.param(lambda ix: ix.index_keys("nope", "v"), id="index_keys"),
        pytest.param(lambda ix: ix.by_index("nope", "v"), id="by_index"),
    ],
)
def test_unknown_index_name_raises_key_error(call: Any) -> None:
    indexer: Indexer[dict[str, Any]] = Indexer()
    with pytest.raises(KeyError):
        call(indexer)


def test_list_index_func_values_of_unknown_index_is_empty() -> None:
    assert Indexer().list_index_func_values("nope") == []


def test_index_keys_are_sorted() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    for name in ["c", "a", "b"]:
        indexer.add(pod(name, "ns"))
    assert indexer.index_keys(NAMESPACE_INDEX, "ns") == ["ns/a", "ns/b", "ns/c"]


def test_add_indexers_indexes_existing_objects() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer()
    indexer.add(pod("a", "ns1"))
    indexer.add(pod("b", "ns2"))
    indexer.add_indexers({NAMESPACE_INDEX: namespace_index_func})
    assert indexer.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    indexer.add(pod("c", "ns1"))
    assert indexer.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a", "ns1/c"]
    assert set(indexer.get_indexers()) == {NAMESPACE_INDEX}


def test_add_indexers_rejects_a_duplicate_name_and_adds_nothing() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    with pytest.raises(ValueError, match="conflict"):
        indexer.add_indexers({"other": namespace_index_func, NAMESPACE_INDEX: namespace_index_func})
    assert set(indexer.get_indexers()) == {NAMESPACE_INDEX}
    assert indexer.list_index_func_values("other") == []


def test_get_indexers_returns_a_copy() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    indexer.get_indexers().clear()
    assert set(indexer.get_indexers()) == {NAMESPACE_INDEX}


def test_has_index_names_the_maintained_indexes() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    assert indexer.has_index(NAMESPACE_INDEX)
    assert not indexer.has_index("other")
    indexer.add_indexers({"other": namespace_index_func})
    assert indexer.has_index("other")


def test_replace_updates_indexes_and_drops_emptied_values() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    indexer.add(pod("a", "old"))
    indexer.add(pod("b", "kept"))
    indexer.replace([pod("b", "kept"), pod("c", "new")], "7")
    assert indices_of(indexer, NAMESPACE_INDEX) == {"kept": {"kept/b"}, "new": {"new/c"}}
    assert sorted(indexer.list_keys()) == ["kept/b", "new/c"]


def test_update_that_changes_a_value_moves_the_key() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={"app": label_foo_index})
    indexer.add(pod("a", "ns", foo="x"))
    indexer.update(pod("a", "ns", foo="y"))
    assert indices_of(indexer, "app") == {"y": {"ns/a"}}


def test_a_strict_indexer_refuses_a_write_its_index_function_fails_on() -> None:
    def picky(obj: dict[str, Any]) -> list[str]:
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("cannot index")
        return [obj["metadata"]["name"]]

    indexer: Indexer[dict[str, Any]] = Indexer(
        indexers={NAMESPACE_INDEX: namespace_index_func, "picky": picky}, strict=True
    )
    indexer.add(pod("good"))
    with pytest.raises(IndexFuncError, match="index 'picky' failed on default/bad") as caught:
        indexer.add(pod("bad"))
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert indexer.list_keys() == ["default/good"]
    assert indices_of(indexer, NAMESPACE_INDEX) == {"default": {"default/good"}}


def test_index_with_several_values_returns_the_union() -> None:
    store: Indexer[tuple[str, str]] = Indexer(pair_key, indexers={"idx": comma_index})
    store.add(("k1", "a"))
    store.add(("k2", "b"))
    store.add(("k3", "c"))
    assert sorted(k for k, _ in store.index("idx", ("probe", "a,b"))) == ["k1", "k2"]


def test_repr_names_size_and_indexes() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    indexer.add(pod("a"))
    assert repr(indexer) == "<Indexer items=1 indexes=['namespace']>"


def test_delete_of_a_tombstone_uses_its_key_whatever_the_key_function() -> None:
    store: Indexer[tuple[str, str]] = Indexer(pair_key, indexers={"idx": pair_val_index})
    store.add(("k", "v"))
    store.delete(DeletedFinalStateUnknown("k", ("k", "v")))
    assert len(store) == 0
    assert store.list_index_func_values("idx") == []


def test_indexers_may_be_passed_positionally() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer(
        meta_namespace_key, {NAMESPACE_INDEX: namespace_index_func}
    )
    indexer.add(pod("a", "ns"))
    assert indexer.by_index(NAMESPACE_INDEX, "ns") == [pod("a", "ns")]


SECRET_VALUE = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"


@pytest.mark.parametrize(
    ("obj", "names"),
    [
        pytest.param(
            {
                "kind": "Secret",
                "metadata": {"namespace": "prod", "uid": "u-1"},
                "data": {"password": SECRET_VALUE},
            },
            ["dict", "kind='Secret'", "namespace='prod'", "uid='u-1'"],
            id="dict-without-name",
        ),
        pytest.param(
            {"kind": "Secret", "data": {"password": SECRET_VALUE}},
            ["dict", "kind='Secret'"],
            id="dict-without-metadata",
        ),
        pytest.param(
            KubeObject.model_validate(
                {"kind": "Secret", "metadata": {"namespace": "prod"}, "data": SECRET_VALUE}
            ),
            ["KubeObject", "kind='Secret'", "namespace='prod'"],
            id="model-without-name",
        ),
    ],
)
def test_a_key_error_names_the_object_without_quoting_its_content(
    obj: Any, names: list[str]
) -> None:
    with pytest.raises(KeyFuncError) as caught:
        meta_namespace_key(obj)
    message = str(caught.value)
    assert SECRET_VALUE not in message
    for name in names:
        assert name in message, message
