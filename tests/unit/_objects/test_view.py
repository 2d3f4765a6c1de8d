"""A view of a compact cache's entry reads as the decoded object reads, refuses every
change, and hands out plain copies; its head fields cost no decode.

Input: entries made from dicts (as a source of dicts or a transform gives them) and from
LIST bodies and watch lines (as the client reads them). Output: assertions only.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from aioinformer import ObjectView, ReadOnlyObjectError, json_default
from aioinformer._objects.raw import CompactEntry, decode_list, decode_watch_line
from aioinformer._objects.view import ReadOnlyDict, ReadOnlyList, thaw
from aioinformer.models import KubeObject
from tests._support_cache import Decodes


def pod(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "resourceVersion": "42",
            "labels": {"app": "web"},
            "annotations": {"note": "kept"},
            "uid": "u-1",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "shop-rs", "uid": "u-0"}
            ],
            **meta,
        },
        "spec": {"containers": [{"name": "main", "image": "nginx", "ports": [{"port": 80}]}]},
        "status": {"phase": "Running"},
    }


def view(obj: dict[str, Any]) -> ObjectView:
    return ObjectView(CompactEntry.from_dict(obj))


def test_a_view_reads_as_the_decoded_object() -> None:
    obj = pod()
    got = view(obj)
    assert isinstance(got, Mapping)
    assert not isinstance(got, dict)
    assert got == obj
    assert obj == got
    assert dict(got) == obj
    assert sorted(got) == sorted(obj)
    assert len(got) == len(obj)
    assert "spec" in got
    assert "missing" not in got
    assert got.get("missing") is None
    assert got.get("missing", 3) == 3
    assert got["metadata"]["annotations"] == {"note": "kept"}
    assert got["metadata"]["uid"] == "u-1"
    assert got["spec"]["containers"][0]["ports"][0]["port"] == 80
    assert got["spec"]["containers"][-1:] == obj["spec"]["containers"]
    assert list(got["spec"]["containers"]) == obj["spec"]["containers"]
    assert dict(got["metadata"]) == obj["metadata"]
    assert isinstance(got["spec"], dict)
    assert isinstance(got["spec"]["containers"], list)
    with pytest.raises(KeyError):
        got["missing"]
    with pytest.raises(KeyError):
        got["metadata"]["missing"]


def test_the_head_fields_cost_no_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    decodes = Decodes(monkeypatch)
    got = view(pod())
    meta = got["metadata"]
    head = (
        meta["name"],
        meta["namespace"],
        meta["resourceVersion"],
        meta["labels"]["app"],
        meta.get("labels", {}).get("app"),
        got["kind"],
        got["apiVersion"],
        "labels" in meta,
        "metadata" in got,
        bool(meta),
        bool(got),
    )
    assert head == ("web-1", "shop", "42", "web", "web", "Pod", "v1", True, True, True, True)
    assert decodes.count == 0
    # The metadata a handler reads most is held apart: a few bytes each, no split.
    held = (
        meta["annotations"]["note"],
        meta["uid"],
        meta.get("generation"),
        "finalizers" in meta,
        meta.get("deletionTimestamp"),
        meta["ownerReferences"][0]["name"],
    )
    assert held == ("kept", "u-1", None, False, None, "shop-rs")
    assert meta["annotations"] is meta["annotations"]
    assert decodes.count == 0
    assert got["spec"]
    assert got["status"]
    assert decodes.count == 1  # one split of the bytes, whatever is read after


def test_the_held_fields_are_views_into_the_entrys_own_bytes() -> None:
    applied = "x" * 10_000  # kubectl's last-applied annotation: a copy of the object
    obj = pod(annotations={"kubectl.kubernetes.io/last-applied-configuration": applied})
    line = orjson.dumps({"type": "MODIFIED", "object": obj})
    body = orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [obj]})
    decoded = decode_watch_line(line)
    assert decoded is not None
    for entry in (decoded[1], decode_list(body).items[0], CompactEntry.from_dict(obj)):
        assert entry.annotations is not None
        assert entry.uid is not None
        assert bytes(entry.uid) == b'"u-1"'
        assert entry.generation is not None
        assert not entry.generation  # held, and absent
        # Each is a slice of the entry's bytes, so nothing is stored twice.
        assert bytes(entry.annotations) in entry.raw
        assert ObjectView(entry)["metadata"]["annotations"] == obj["metadata"]["annotations"]


def test_a_field_is_decoded_once_per_view() -> None:
    got = view(pod())
    assert got["spec"] is got["spec"]
    assert got["metadata"] is got["metadata"]
    assert got["metadata"]["labels"] is got["metadata"]["labels"]
    other = view(pod())
    assert other["spec"] is not got["spec"]


MUTATIONS = [
    pytest.param(lambda v: v.__setitem__("spec", {}), id="set-top"),
    pytest.param(lambda v: v.__delitem__("spec"), id="del-top"),
    pytest.param(lambda v: v.update(spec={}), id="update-top"),
    pytest.param(lambda v: v.pop("spec"), id="pop-top"),
    pytest.param(lambda v: v.setdefault("x", 1), id="setdefault-top"),
    pytest.param(lambda v: v.clear(), id="clear-top"),
    pytest.param(lambda v: v["metadata"].__setitem__("name", "x"), id="set-metadata"),
    pytest.param(lambda v: v["metadata"].pop("uid"), id="pop-metadata"),
    pytest.param(lambda v: v["metadata"]["labels"].__setitem__("a", "b"), id="set-label"),
    pytest.param(lambda v: v["metadata"]["labels"].update(a="b"), id="update-labels"),
    pytest.param(lambda v: v["metadata"]["labels"].__delitem__("app"), id="del-label"),
    pytest.param(lambda v: v["metadata"]["annotations"].pop("note"), id="pop-annotation"),
    pytest.param(lambda v: v["spec"].__setitem__("x", 1), id="set-spec"),
    pytest.param(lambda v: v["spec"].popitem(), id="popitem-spec"),
    pytest.param(lambda v: v["spec"]["containers"].append({}), id="append"),
    pytest.param(lambda v: v["spec"]["containers"].extend([{}]), id="extend"),
    pytest.param(lambda v: v["spec"]["containers"].insert(0, {}), id="insert"),
    pytest.param(lambda v: v["spec"]["containers"].pop(), id="pop-item"),
    pytest.param(lambda v: v["spec"]["containers"].remove({}), id="remove"),
    pytest.param(lambda v: v["spec"]["containers"].sort(), id="sort"),
    pytest.param(lambda v: v["spec"]["containers"].reverse(), id="reverse"),
    pytest.param(lambda v: v["spec"]["containers"].__setitem__(0, {}), id="set-item"),
    pytest.param(lambda v: v["spec"]["containers"].__delitem__(0), id="del-item"),
    pytest.param(lambda v: v["spec"]["containers"][0].__setitem__("image", "x"), id="nested"),
    pytest.param(
        lambda v: next(iter(v["spec"]["containers"]))["ports"].clear(), id="through-iteration"
    ),
    pytest.param(lambda v: next(iter(v["spec"].values())).append(1), id="through-values"),
    pytest.param(lambda v: v["spec"]["containers"][:1][0].clear(), id="through-a-slice"),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_every_change_raises_a_read_only_error_and_changes_nothing(mutate: Any) -> None:
    obj = pod()
    got = view(obj)
    with pytest.raises(ReadOnlyObjectError, match=r"obj\.to_dict\(\) or copy\.deepcopy"):
        mutate(got)
    assert got == obj
    assert isinstance(ReadOnlyObjectError("x"), TypeError)


def test_augmented_assignment_is_refused_too() -> None:
    got = view(pod())
    containers = got["spec"]["containers"]
    with pytest.raises(ReadOnlyObjectError):
        containers += [{}]
    labels = got["metadata"]["labels"]
    with pytest.raises(ReadOnlyObjectError):
        labels |= {"a": "b"}


def test_copies_are_plain_and_mutable_and_reach_no_one() -> None:
    obj = pod()
    got = view(obj)
    for copied in (
        got.to_dict(),
        copy.deepcopy(got),
        copy.copy(got),
        pickle.loads(pickle.dumps(got)),
        thaw(got),
    ):
        assert type(copied) is dict
        assert copied == obj
        copied["spec"]["containers"][0]["image"] = "changed"
        copied["metadata"]["labels"]["app"] = "changed"
    spec = got["spec"].copy()
    spec["containers"].append({})
    labels = got["metadata"]["labels"].copy()
    labels["a"] = "b"
    assert type(copy.deepcopy(got["spec"]["containers"])) is list
    assert got | {"status": None} == {**obj, "status": None}
    assert got == obj


def test_a_view_encodes_as_the_object() -> None:
    obj = pod()
    got = view(obj)
    assert orjson.loads(got.to_json()) == obj
    assert orjson.loads(orjson.dumps(got, default=json_default)) == obj
    assert json.loads(json.dumps(got, default=json_default)) == obj
    # The decoded parts are dicts and lists to every encoder.
    assert orjson.loads(orjson.dumps(got["spec"])) == obj["spec"]
    assert json.loads(json.dumps(got["spec"])) == obj["spec"]
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_default(object())


def test_a_model_validates_from_a_view() -> None:
    model = KubeObject.model_validate(view(pod()))
    assert model.metadata.name == "web-1"


def test_its_repr_names_the_object_never_its_content() -> None:
    secret = {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "s", "namespace": "ns", "resourceVersion": "1"},
        "data": {"password": "aHVudGVyMg=="},
    }
    text = repr(view(secret)) + repr(view(secret)["metadata"])
    assert "aHVudGVyMg" not in text
    assert "'ns/s'" in text


def test_a_list_item_reads_with_the_list_kind_and_api_version() -> None:
    body = orjson.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "9"},
            "items": [{"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "3"}}],
        }
    )
    [entry] = decode_list(body).items
    got = ObjectView(entry)
    expected = {
        "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "3"},
        "apiVersion": "v1",
        "kind": "Pod",
    }
    assert got["kind"] == "Pod"
    assert got["apiVersion"] == "v1"
    assert got == expected
    assert sorted(got) == sorted(expected)
    assert orjson.loads(got.to_json()) == expected


def test_a_watch_line_reads_as_its_object() -> None:
    obj = pod()
    decoded = decode_watch_line(orjson.dumps({"type": "MODIFIED", "object": obj}))
    assert decoded is not None
    got = ObjectView(decoded[1])
    assert got == obj
    assert got.to_json() == orjson.dumps(obj)


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param({"name": "a"}, id="cluster-scoped-no-labels"),
        pytest.param({"name": "a", "labels": {}}, id="empty-labels"),
        pytest.param({"name": "a", "labels": {"n": 1}}, id="labels-not-strings"),
        pytest.param({"name": "a", "resourceVersion": ""}, id="empty-resource-version"),
        pytest.param({"name": "a", "namespace": ""}, id="empty-namespace"),
    ],
)
def test_fields_the_head_does_not_hold_read_from_the_bytes(meta: dict[str, Any]) -> None:
    obj = {"metadata": meta}
    got = view(obj)
    assert got == obj
    assert dict(got["metadata"]) == meta
    for key, value in meta.items():
        assert got["metadata"][key] == value
        assert key in got["metadata"]
    assert ("namespace" in got["metadata"]) == ("namespace" in meta)
    assert ("labels" in got["metadata"]) == ("labels" in meta)
    # Absent kind and apiVersion are absent, not empty strings.
    assert "kind" not in got
    assert got.get("apiVersion") is None


# JSON as orjson encodes it: integers within 64 bits.
_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=50, deadline=None)
@given(
    labels=st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
    namespace=st.sampled_from(["", "ns"]),
    rest=st.dictionaries(st.sampled_from(["spec", "status", "data", "x"]), _json, max_size=3),
    extra_meta=st.dictionaries(
        st.sampled_from(
            [
                "uid",
                "annotations",
                "generation",
                "deletionTimestamp",
                "finalizers",
                "ownerReferences",
                "managedFields",
            ]
        ),
        _json,
    ),
    wire=st.booleans(),
)
def test_any_object_reads_alike_through_a_view(
    labels: dict[str, str] | None,
    namespace: str,
    rest: dict[str, Any],
    extra_meta: dict[str, Any],
    wire: bool,
) -> None:
    meta: dict[str, Any] = {"name": "n", "resourceVersion": "1", **extra_meta}
    if namespace:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    obj = {"kind": "Thing", "apiVersion": "x/v1", "metadata": meta, **rest}
    if wire:
        # As a client reads it: the head decoded from a watch line, or the careful path.
        decoded = decode_watch_line(orjson.dumps({"type": "ADDED", "object": obj}))
        entry = decoded[1] if decoded is not None else None
        got = ObjectView(entry) if type(entry) is CompactEntry else view(obj)
    else:
        got = view(obj)
    for key in ("uid", "generation", "deletionTimestamp", "annotations", "finalizers"):
        assert (key in got["metadata"]) == (key in meta)
        assert thaw(got["metadata"].get(key, "absent")) == meta.get(key, "absent")
    assert got == obj
    assert thaw(got) == obj
    assert orjson.loads(orjson.dumps(got, default=json_default)) == obj
    for key, value in obj.items():
        assert thaw(got[key]) == value
    for key, value in meta.items():
        assert thaw(got["metadata"][key]) == value
    for value in rest.values():
        if isinstance(value, dict) and value:
            with pytest.raises(ReadOnlyObjectError):
                got[next(k for k, v in rest.items() if v is value)].clear()


def test_frozen_containers_read_as_their_plain_selves() -> None:
    frozen = ReadOnlyDict({"a": [1, {"b": 2}], "c": {"d": []}})
    assert frozen == {"a": [1, {"b": 2}], "c": {"d": []}}
    assert type(frozen["a"]) is ReadOnlyList
    assert type(frozen["a"][1]) is ReadOnlyDict
    assert [type(v) for v in frozen.values()] == [ReadOnlyList, ReadOnlyDict]
    assert frozen.get("c") == {"d": []}
    assert frozen.get("z", 0) == 0
    assert sorted(frozen.items()) == [("a", [1, {"b": 2}]), ("c", {"d": []})]
    assert next(reversed(ReadOnlyList([{"x": 1}]))) == {"x": 1}
    assert type(next(reversed(ReadOnlyList([{"x": 1}])))) is ReadOnlyDict


def test_pydantic_serialises_a_view_met_as_any() -> None:
    # What FastAPI does with a response annotated dict[str, Any], Mapping or Any.
    obj = pod()
    for annotation in (Any, dict[str, Any], Mapping[str, Any], list[Any]):
        value: Any = [view(obj)] if annotation == list[Any] else view(obj)
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        # Validated, then serialised, as FastAPI answers with a response annotation.
        dumped = adapter.dump_json(adapter.validate_python(value))
        assert orjson.loads(dumped) == ([obj] if annotation == list[Any] else obj)
    assert TypeAdapter(Any).dump_python(view(obj), mode="json") == obj
