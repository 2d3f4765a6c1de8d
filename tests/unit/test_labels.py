"""Label and field selectors: parsing, matching and canonical text, table-driven."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.errors import SelectorError
from aioinformer.labels import (
    FieldSelector,
    LabelSelector,
    SelectorOperator,
    match_labels,
    parse_field_selector,
    parse_label_selector,
    selector_from_set,
)

LABELS = {"app": "web", "tier": "fe", "example.com/owner": "team-a", "replicas": "3"}

# (selector text, labels, expected match)
LABEL_MATCH_CASES = [
    ("", LABELS, True),
    ("", None, True),
    ("app=web", LABELS, True),
    ("app==web", LABELS, True),
    ("app=db", LABELS, False),
    ("app!=db", LABELS, True),
    ("app!=web", LABELS, False),
    ("missing!=x", LABELS, True),
    ("app in (web,db)", LABELS, True),
    ("app in (db)", LABELS, False),
    ("missing in (a)", LABELS, False),
    ("app notin (db,cache)", LABELS, True),
    ("app notin (web)", LABELS, False),
    ("missing notin (a)", LABELS, True),
    ("app", LABELS, True),
    ("missing", LABELS, False),
    ("!missing", LABELS, True),
    ("!app", LABELS, False),
    ("app=web,tier=fe", LABELS, True),
    ("app=web,tier=be", LABELS, False),
    ("example.com/owner=team-a", LABELS, True),
    ("replicas>2", LABELS, True),
    ("replicas>3", LABELS, False),
    ("replicas<4", LABELS, True),
    ("app>1", LABELS, False),
    ("app = web , tier in ( fe , be )", LABELS, True),
    ("app=", {"app": ""}, True),
    ("app=", LABELS, False),
    ("app in (,web)", {"app": ""}, True),
    ("app=web", None, False),
    ("app!=web", None, True),
    ("!app", None, True),
]


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    LABEL_MATCH_CASES,
    ids=[
        f"{case[0] or 'empty'}-{'match' if case[2] else 'no-match'}" for case in LABEL_MATCH_CASES
    ],
)
def test_label_selector_matches_as_kube_apiserver_does(
    text: str, labels: dict[str, str] | None, expected: bool
) -> None:
    assert parse_label_selector(text).matches(labels) is expected
    assert match_labels(text, labels) is expected


# (input text, canonical text)
CANONICAL_CASES = [
    ("tier=fe,app=web", "app=web,tier=fe"),
    ("app==web", "app==web"),
    ("app in (web, db)", "app in (db,web)"),
    ("x notin (b,a,b)", "x notin (a,b)"),
    ("!legacy,app", "app,!legacy"),
    ("a>1,b<2", "a>1,b<2"),
    ("  app = web  ", "app=web"),
    ("", ""),
]


@pytest.mark.parametrize(
    ("text", "canonical"), CANONICAL_CASES, ids=[c[1] or "empty" for c in CANONICAL_CASES]
)
def test_label_selector_prints_canonical_text_that_parses_back_equal(
    text: str, canonical: str
) -> None:
    selector = parse_label_selector(text)
    assert str(selector) == canonical
    assert parse_label_selector(str(selector)) == selector


INVALID_LABEL_SELECTORS = [
    ("app=web,", "trailing"),
    (",app", "expected a key"),
    ("app in web", "expected '('"),
    ("app in (web", "unclosed"),
    ("app in ()", "empty value set"),
    ("app==", None),
    ("-bad=x", "invalid label key"),
    ("app=-bad", "invalid label value"),
    ("app=" + "v" * 64, "invalid label value"),
    ("k" * 64, "invalid label key"),
    ("Bad_Prefix/name=x", "prefix"),
    ("replicas>x", "integer"),
    ("app=web tier=fe", "expected ','"),
    ("!", "expected a key"),
    ("=web", "expected a key"),
]


@pytest.mark.parametrize(
    ("text", "fragment"), INVALID_LABEL_SELECTORS, ids=[c[0] for c in INVALID_LABEL_SELECTORS]
)
def test_invalid_label_selector_raises_selector_error_naming_the_problem(
    text: str, fragment: str | None
) -> None:
    if fragment is None:
        # "app==" is a valid selector for the empty value, as in kube-apiserver.
        assert parse_label_selector(text).matches({"app": ""})
        return
    with pytest.raises(SelectorError, match=fragment.replace("(", r"\(")):
        parse_label_selector(text)


def test_selector_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid label selector"):
        parse_label_selector("a in (")


def test_selector_from_set_requires_every_pair() -> None:
    selector = selector_from_set({"tier": "fe", "app": "web"})
    assert str(selector) == "app=web,tier=fe"
    assert selector.matches(LABELS)
    assert not selector.matches({"app": "web"})
    assert selector_from_set({}).is_empty()
    with pytest.raises(SelectorError):
        selector_from_set({"app": "not valid!"})


def test_requirements_are_sorted_by_key_and_expose_operators() -> None:
    selector = parse_label_selector("z!=1,a in (x),m")
    assert [(r.key, r.operator) for r in selector.requirements] == [
        ("a", SelectorOperator.IN),
        ("m", SelectorOperator.EXISTS),
        ("z", SelectorOperator.NOT_EQUALS),
    ]
    assert bool(selector)
    assert not LabelSelector()


def test_matches_object_reads_metadata_labels() -> None:
    selector = parse_label_selector("app=web")
    assert selector.matches_object({"metadata": {"labels": {"app": "web"}}})
    assert not selector.matches_object({"metadata": {}})
    assert not selector.matches_object({})


POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "prod", "labels": {"app": "web"}},
    "spec": {"nodeName": "node-a", "hostNetwork": True, "priority": 7},
    "status": {"phase": "Running"},
}

FIELD_MATCH_CASES = [
    ("", True),
    ("metadata.name=web-1", True),
    ("metadata.name==web-1", True),
    ("metadata.name=web-2", False),
    ("metadata.name!=web-2", True),
    ("metadata.namespace=prod,metadata.name=web-1", True),
    ("metadata.namespace=prod,metadata.name=web-2", False),
    ("spec.nodeName=node-a", True),
    ("spec.nodeName=", False),
    ("spec.missing=", True),
    ("spec.missing!=", False),
    ("status.phase!=Running", False),
    ("spec.hostNetwork=true", True),
    ("spec.priority=7", True),
    ("metadata.labels=x", False),
    ("metadata.name=web-1,", True),
]


@pytest.mark.parametrize(
    ("text", "expected"), FIELD_MATCH_CASES, ids=[c[0] or "empty" for c in FIELD_MATCH_CASES]
)
def test_field_selector_matches_dotted_paths(text: str, expected: bool) -> None:
    assert parse_field_selector(text).matches(POD) is expected


def test_field_selector_unescapes_values_and_round_trips() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b\=c\\d,metadata.namespace!=x")
    assert [r.value for r in selector.requirements] == ["a,b=c\\d", "x"]
    assert selector.matches({"metadata": {"name": "a,b=c\\d", "namespace": "y"}})
    assert parse_field_selector(str(selector)) == selector
    assert selector.fields() == {"metadata.name", "metadata.namespace"}


INVALID_FIELD_SELECTORS = [
    ("metadata.name", "has no operator"),
    ("=x", "bad field path"),
    ("metadata.name=a=b", "unescaped"),
    ("metadata.name=a\\", "dangling"),
    ("metadata.name=\\q", "bad escape"),
    ("metadata..name=x", "bad field path"),
]


@pytest.mark.parametrize(
    ("text", "fragment"), INVALID_FIELD_SELECTORS, ids=[c[0] for c in INVALID_FIELD_SELECTORS]
)
def test_invalid_field_selector_raises_selector_error(text: str, fragment: str) -> None:
    with pytest.raises(SelectorError, match=fragment):
        parse_field_selector(text)


def test_empty_field_selector_is_empty_and_falsy() -> None:
    assert parse_field_selector(" ").is_empty()
    assert not FieldSelector()


KEYS = st.sampled_from(["app", "tier", "example.com/owner", "x"])
VALUES = st.sampled_from(["", "a", "b", "web-1", "v.2"])
REQUIREMENTS = st.one_of(
    st.tuples(KEYS, st.sampled_from(["=", "==", "!="]), VALUES.map(lambda v: (v,))),
    st.tuples(
        KEYS,
        st.sampled_from(["in", "notin"]),
        st.lists(VALUES.filter(bool), min_size=1, max_size=3).map(tuple),
    ),
    st.tuples(KEYS, st.sampled_from(["exists", "!"]), st.just(())),
)


def model_matches(op: str, key: str, values: tuple[str, ...], labels: dict[str, str]) -> bool:
    if op == "exists":
        return key in labels
    if op == "!":
        return key not in labels
    if op in ("=", "=="):
        return labels.get(key) == values[0]
    if op == "!=":
        return labels.get(key) != values[0]
    if op == "in":
        return key in labels and labels[key] in values
    return key not in labels or labels[key] not in values


def render(key: str, op: str, values: tuple[str, ...]) -> str:
    if op == "exists":
        return key
    if op == "!":
        return f"!{key}"
    if op in ("in", "notin"):
        return f"{key} {op} ({', '.join(values)})"
    return f"{key}{op}{values[0]}"


@given(
    requirements=st.lists(REQUIREMENTS, max_size=4),
    labels=st.dictionaries(KEYS, VALUES, max_size=4),
)
def test_parsed_selectors_match_like_a_model_and_round_trip(
    requirements: list[tuple[str, str, tuple[str, ...]]], labels: dict[str, str]
) -> None:
    text = ",".join(render(key, op, values) for key, op, values in requirements)
    selector = parse_label_selector(text)
    expected = all(model_matches(op, key, values, labels) for key, op, values in requirements)
    assert selector.matches(labels) is expected
    assert parse_label_selector(str(selector)) == selector
