"""What kube-apiserver keeps of a conversion webhook's answer, applied beforehand:
apiextensions-apiserver's ``TestRestoreObjectMeta`` table ported (metadata restored but
labels and annotations, which must be valid), its ``validateConvertedObject`` identity
checks, and a property over arbitrary metadata."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.operator._conversion_rules import (
    RuleBroken,
    annotation_problem,
    label_problem,
    settle_metadata,
)
from tests._support_properties import example_settings

SPEC: dict[str, Any] = {"spec": {}}

RESTORED = [
    pytest.param(
        {"spec": {}},
        {"metadata": {}, "spec": {}},
        {"metadata": {}, "spec": {}},
        id="no-original-metadata",
    ),
    pytest.param(
        {
            "metadata": {
                "foo": "bar",
                "labels": {"a": "A", "b": "B"},
                "annotations": {"a": "1", "b": "2"},
            },
            **SPEC,
        },
        {
            "metadata": {
                "foo": "abc",
                "labels": {"a": "AA", "b": "B"},
                "annotations": {"a": "1", "b": "22"},
            },
            **SPEC,
        },
        {
            "metadata": {
                "foo": "bar",
                "labels": {"a": "AA", "b": "B"},
                "annotations": {"a": "1", "b": "22"},
            },
            **SPEC,
        },
        id="changed-labels-annotations-and-another-field",
    ),
    pytest.param(
        {"metadata": {"foo": "bar"}, **SPEC},
        {"metadata": {"foo": "abc", "labels": {"a": "AA"}, "annotations": {"b": "22"}}, **SPEC},
        {"metadata": {"foo": "bar", "labels": {"a": "AA"}, "annotations": {"b": "22"}}, **SPEC},
        id="added-labels-and-annotations",
    ),
    pytest.param(
        {"metadata": {"foo": "bar", "labels": None, "annotations": None}, **SPEC},
        {"metadata": {"foo": "abc", "labels": {"a": "AA"}, "annotations": {"b": "22"}}, **SPEC},
        {"metadata": {"foo": "bar", "labels": {"a": "AA"}, "annotations": {"b": "22"}}, **SPEC},
        id="added-labels-and-annotations-null-before",
    ),
    pytest.param(
        {"metadata": {"foo": "bar", "labels": {"a": "AA"}, "annotations": {"b": "22"}}, **SPEC},
        {"metadata": {"foo": "abc"}, **SPEC},
        {"metadata": {"foo": "bar"}, **SPEC},
        id="removed-labels-and-annotations",
    ),
    pytest.param(
        {"metadata": {"foo": "bar", "labels": {"a": "AA"}, "annotations": {"b": "22"}}, **SPEC},
        {"metadata": {"foo": "abc", "labels": None, "annotations": None}, **SPEC},
        {"metadata": {"foo": "bar"}, **SPEC},
        id="nulled-labels-and-annotations",
    ),
]


@pytest.mark.parametrize(("original", "converted", "expected"), RESTORED)
def test_metadata_is_restored_but_labels_and_annotations(
    original: dict[str, Any], converted: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert settle_metadata(original, converted) == expected


REFUSED = [
    pytest.param({"metadata": {}, **SPEC}, SPEC, "has no metadata", id="no-converted-metadata"),
    pytest.param(
        {"metadata": {}, **SPEC},
        {"metadata": ["foo"]},
        "has metadata of type list",
        id="invalid-converted-metadata",
    ),
    pytest.param(
        {"metadata": ["foo"]},
        {"metadata": {}, **SPEC},
        "the request's object has metadata of type list",
        id="invalid-original-metadata",
    ),
    pytest.param(
        {"metadata": {"foo": "bar"}, **SPEC},
        {"metadata": {"labels": {"a": None, "b": "B"}}, **SPEC},
        "metadata.labels['a'] is a NoneType, not a string",
        id="null-label-value",
    ),
    pytest.param(
        {"metadata": {}},
        {"metadata": {"annotations": {"a": None}}},
        "metadata.annotations['a'] is a NoneType, not a string",
        id="null-annotation-value",
    ),
    pytest.param(
        {"metadata": {}},
        {"metadata": {"labels": {"some/non-qualified/label": "x"}}},
        "label key 'some/non-qualified/label': a key holds at most one '/'",
        id="invalid-label-key",
    ),
    pytest.param(
        {"metadata": {}},
        {"metadata": {"annotations": {"some/non-qualified/annotation": "x"}}},
        "annotation key 'some/non-qualified/annotation'",
        id="invalid-annotation-key",
    ),
    pytest.param(
        {"metadata": {}},
        {"metadata": {"labels": {"foo": "üäö"}}},
        "label 'foo' value 'üäö'",
        id="invalid-label-value",
    ),
    pytest.param(
        {"metadata": {}},
        {"metadata": {"labels": {"foo": "x" * 64}}},
        "label 'foo' value",
        id="too-big-label-value",
    ),
    pytest.param(
        {"metadata": {}},
        {"metadata": {"annotations": {"foo": "x" * (256 * 1024 + 1)}}},
        "more than the 262144 allowed",
        id="too-big-annotation-value",
    ),
    pytest.param(
        {"kind": "Widget", "metadata": {}},
        {"kind": "Gadget", "metadata": {}},
        "kind 'Gadget' is not the request's 'Widget'",
        id="another-kind",
    ),
    pytest.param(
        {"metadata": {"name": "a"}},
        {"metadata": {"name": "b"}},
        "metadata.name 'b' is not the request's 'a'",
        id="another-name",
    ),
    pytest.param(
        {"metadata": {"namespace": "a"}},
        {"metadata": {}},
        "metadata.namespace None is not the request's 'a'",
        id="namespace-dropped",
    ),
    pytest.param(
        {"metadata": {"uid": "1"}},
        {"metadata": {"uid": "2"}},
        "metadata.uid '2' is not the request's '1'",
        id="another-uid",
    ),
]


@pytest.mark.parametrize(("original", "converted", "expected"), REFUSED)
def test_an_answer_kube_apiserver_refuses_is_refused_saying_why(
    original: dict[str, Any], converted: dict[str, Any], expected: str
) -> None:
    with pytest.raises(RuleBroken) as caught:
        settle_metadata(original, converted)
    assert expected in str(caught.value)


def test_invalid_labels_the_converter_left_unchanged_are_not_judged() -> None:
    # kube-apiserver validates labels and annotations only when the webhook changed them.
    original = {"metadata": {"labels": {"bad key": "x"}, "annotations": {"bad key": "x"}}}
    assert settle_metadata(original, copy.deepcopy(original)) == original


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("a", ""),
        ("example.com/a-b_c.d", "V.1-x_y"),
        ("x" * 63, "y" * 63),
        ("a." * 126 + "b/n", "v"),
    ],
)
def test_valid_labels_pass(key: str, value: str) -> None:
    assert label_problem(key, value) is None


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("", "v", "the name must be 1 to 63"),
        ("/a", "v", "the prefix before '/' must be a DNS subdomain"),
        ("Example.com/a", "v", "the prefix before '/' must be a DNS subdomain"),
        ("x" * 64, "v", "the name must be 1 to 63"),
        ("-a", "v", "the name must be 1 to 63"),
        ("a", "-v", "must be empty or 1 to 63"),
    ],
)
def test_invalid_labels_are_named(key: str, value: str, expected: str) -> None:
    problem = label_problem(key, value)
    assert problem is not None
    assert expected in problem


def test_annotation_keys_are_judged_lowercased_and_their_size_in_bytes() -> None:
    assert annotation_problem({"Example.COM/Note": "x"}) is None
    assert annotation_problem({"a": "é" * (128 * 1024)}) is not None  # two bytes each
    assert annotation_problem({"a": "x" * (256 * 1024 - 1)}) is None


_text = st.text(max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_labels = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True),
    st.from_regex(r"[a-z0-9]{0,6}", fullmatch=True),
    max_size=3,
)
_other = st.dictionaries(
    st.sampled_from(["resourceVersion", "generation", "finalizers", "ownerReferences", "x"]),
    _json,
    max_size=4,
)


@given(sent=_other, answered=_other, labels=_labels, annotations=_labels)
@example_settings(100)
def test_whatever_else_a_converter_does_to_metadata_the_original_comes_back(
    sent: dict[str, Any],
    answered: dict[str, Any],
    labels: dict[str, str],
    annotations: dict[str, str],
) -> None:
    identity = {"name": "w", "namespace": "ns", "uid": "u"}
    original = {"kind": "Widget", "metadata": {**identity, **sent}, "spec": {"a": 1}}
    converted = {
        "kind": "Widget",
        "metadata": {**identity, **answered, "labels": labels, "annotations": annotations},
        "spec": {"b": 2},
    }
    settled = settle_metadata(copy.deepcopy(original), converted)
    assert settled["metadata"] == {
        **identity,
        **sent,
        "labels": labels,
        "annotations": annotations,
    }
    assert settled["spec"] == {"b": 2}
