"""The event predicates of ``aioinformer.operator.predicates``, with controller-runtime's
``pkg/predicate`` cases ported: each built-in filter passes adds and deletes, refuses an
update missing its old or new object, and compares one metadata field; the combinators
decide event kind by event kind."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from aioinformer._objects.meta import namespace_of
from aioinformer._objects.raw import CompactEntry
from aioinformer.models import KubeObject
from aioinformer.operator.predicates import (
    Predicate,
    all_of,
    annotations_changed,
    any_of,
    as_predicate,
    generation_changed,
    labels_changed,
    not_,
    object_filter,
    resource_version_changed,
)


def pod(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "baz", "namespace": "biz", **meta}}


BUILT_IN = [
    pytest.param(generation_changed, "generation", 1, 2, id="generation"),
    pytest.param(resource_version_changed, "resourceVersion", "v1", "v2", id="resource-version"),
    pytest.param(labels_changed, "labels", {"a": "1"}, {"a": "2"}, id="labels"),
    pytest.param(annotations_changed, "annotations", {"a": "1"}, {"b": "1"}, id="annotations"),
]


@pytest.mark.parametrize(("predicate", "field", "before", "after"), BUILT_IN)
def test_a_built_in_predicate_passes_every_add_and_delete(
    predicate: Predicate, field: str, before: Any, after: Any
) -> None:
    assert predicate.create(pod(**{field: before}))
    assert predicate.delete(pod(**{field: before}))
    assert predicate.create(None)
    assert predicate.delete(None)


@pytest.mark.parametrize(("predicate", "field", "before", "after"), BUILT_IN)
def test_a_built_in_predicate_refuses_an_update_missing_an_object(
    predicate: Predicate, field: str, before: Any, after: Any
) -> None:
    assert not predicate.update(None, pod(**{field: after}))
    assert not predicate.update(pod(**{field: before}), None)
    assert not predicate.update(None, None)


@pytest.mark.parametrize(("predicate", "field", "before", "after"), BUILT_IN)
def test_a_built_in_predicate_passes_an_update_only_when_its_field_changed(
    predicate: Predicate, field: str, before: Any, after: Any
) -> None:
    assert predicate.update(pod(**{field: before}), pod(**{field: after}))
    assert predicate(pod(**{field: before}), pod(**{field: after}))  # callable as update
    assert not predicate.update(pod(**{field: before}), pod(**{field: before}))
    same = pod(**{field: before})
    assert not predicate.update(same, same)  # a resync hands over one state twice


@pytest.mark.parametrize(("predicate", "field", "before", "after"), BUILT_IN)
def test_a_field_both_objects_lack_has_not_changed(
    predicate: Predicate, field: str, before: Any, after: Any
) -> None:
    assert not predicate.update({"metadata": {}}, {})
    assert predicate.update({}, pod(**{field: after}))


def test_only_a_generation_change_passes_generation_changed() -> None:
    old = pod(generation=1, resourceVersion="1", labels={"a": "1"})
    status_write = pod(generation=1, resourceVersion="2", labels={"a": "1"})
    label_write = pod(generation=1, resourceVersion="3", labels={"a": "2"})
    spec_write = pod(generation=2, resourceVersion="4", labels={"a": "1"})
    assert not generation_changed(old, status_write)
    assert not generation_changed(old, label_write)
    assert generation_changed(old, spec_write)


def test_absent_and_empty_labels_and_annotations_are_the_same() -> None:
    assert not labels_changed(pod(), pod(labels={}))
    assert not annotations_changed(pod(annotations={}), pod())
    assert labels_changed(pod(), pod(labels={"a": "1"}))


OBJECT_SHAPES = [
    pytest.param(lambda meta: {"metadata": meta}, id="raw-dict"),
    pytest.param(lambda meta: KubeObject.model_validate({"metadata": meta}), id="kube-object"),
    pytest.param(
        lambda meta: CompactEntry.from_dict({"kind": "Pod", "metadata": meta}), id="compact-cache"
    ),
    pytest.param(
        lambda meta: SimpleNamespace(metadata=SimpleNamespace(**_snake(meta))),
        id="model-with-model-metadata",
    ),
]


def _snake(meta: dict[str, Any]) -> dict[str, Any]:
    return {"resource_version" if k == "resourceVersion" else k: v for k, v in meta.items()}


@pytest.mark.parametrize("shape", OBJECT_SHAPES)
def test_the_built_in_predicates_read_every_object_shape(shape: Any) -> None:
    base = {"name": "a", "namespace": "ns", "resourceVersion": "1", "generation": 1}
    old = shape({**base, "labels": {"x": "1"}, "annotations": {"n": "1"}})
    new = shape({**base, "resourceVersion": "2", "generation": 2, "labels": {"x": "2"}})
    same = shape({**base, "labels": {"x": "1"}, "annotations": {"n": "1"}})
    for predicate in (
        generation_changed,
        resource_version_changed,
        labels_changed,
        annotations_changed,
    ):
        assert predicate(old, new), predicate
        assert not predicate(old, same), predicate


# -- plain callables and custom predicates ----------------------------------------------------


def test_a_plain_callable_is_consulted_on_updates_only() -> None:
    calls: list[tuple[Any, Any]] = []

    def never(old: Any, new: Any) -> bool:
        calls.append((old, new))
        return False

    predicate = as_predicate(never)
    assert predicate.create("obj")
    assert predicate.delete("obj")
    assert calls == []
    assert not predicate.update("old", "new")
    assert calls == [("old", "new")]
    assert "never" in repr(predicate)


def test_a_predicate_is_its_own_predicate() -> None:
    assert as_predicate(generation_changed) is generation_changed


@pytest.mark.parametrize("bad", [None, 3, "generation"])
def test_something_not_callable_is_no_predicate(bad: Any) -> None:
    with pytest.raises(TypeError, match="must be a Predicate or a callable"):
        as_predicate(bad)


def test_a_subclass_overrides_only_the_kinds_it_filters() -> None:
    class NoDeletes(Predicate):
        def delete(self, obj: Any) -> bool:
            return False

    predicate = NoDeletes()
    assert predicate.create(pod())
    assert predicate.update(pod(), pod())
    assert not predicate.delete(pod())
    assert repr(predicate) == "<NoDeletes>"


class Fixed(Predicate):
    """Answers ``answer`` to every kind of event (controller-runtime's test ``Funcs``)."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer

    def create(self, obj: Any) -> bool:
        return self.answer

    def update(self, old: Any, new: Any) -> bool:
        return self.answer

    def delete(self, obj: Any) -> bool:
        return self.answer


def kinds(predicate: Predicate) -> tuple[bool, bool, bool]:
    return predicate.create(pod()), predicate.update(pod(), pod()), predicate.delete(pod())


# -- combinators ------------------------------------------------------------------------------


def test_all_of_refuses_when_one_predicate_refuses() -> None:
    assert kinds(all_of(Fixed(True), Fixed(False))) == (False, False, False)


def test_all_of_passes_when_every_predicate_passes() -> None:
    assert kinds(all_of(Fixed(True), Fixed(True))) == (True, True, True)
    assert kinds(all_of()) == (True, True, True)


def test_any_of_passes_when_one_predicate_passes() -> None:
    assert kinds(any_of(Fixed(True), Fixed(False))) == (True, True, True)


def test_any_of_refuses_when_every_predicate_refuses() -> None:
    assert kinds(any_of(Fixed(False), Fixed(False))) == (False, False, False)
    assert kinds(any_of()) == (False, False, False)


def test_not_inverts_every_kind_of_event() -> None:
    assert kinds(not_(Fixed(True))) == (False, False, False)
    assert kinds(not_(Fixed(False))) == (True, True, True)
    # A plain callable lets adds and deletes through, so its negation drops them.
    assert kinds(not_(lambda old, new: False)) == (False, True, False)


def test_combinators_mix_per_kind_answers() -> None:
    spec_or_labels = any_of(generation_changed, labels_changed)
    assert spec_or_labels(pod(generation=1), pod(generation=1, labels={"a": "b"}))
    assert not spec_or_labels(pod(generation=1), pod(generation=1, annotations={"a": "b"}))
    assert spec_or_labels.create(pod())
    assert "generation_changed" in repr(spec_or_labels)


def test_all_of_stops_at_the_first_refusal() -> None:
    seen: list[str] = []

    def record(name: str, answer: bool) -> Any:
        def check(old: Any, new: Any) -> bool:
            seen.append(name)
            return answer

        return check

    assert not all_of(record("a", True), record("b", False), record("c", True))(1, 2)
    assert seen == ["a", "b"]


# -- object_filter (controller-runtime's NewPredicateFuncs) -----------------------------------


def test_object_filter_tests_the_object_of_every_kind_of_event() -> None:
    in_biz = object_filter(lambda obj: namespace_of(obj) == "biz")
    here, there = pod(), {"metadata": {"name": "baz", "namespace": "bizz"}}
    assert (in_biz.create(here), in_biz.update(there, here), in_biz.delete(here)) == (
        True,
        True,
        True,
    )
    assert (in_biz.create(there), in_biz.update(here, there), in_biz.delete(there)) == (
        False,
        False,
        False,
    )
