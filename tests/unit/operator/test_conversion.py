"""CRD conversion through a hub version, on dicts: ``Conversion.to_hub``/``from_hub`` and
``review``. controller-runtime's ``pkg/webhook/conversion`` cases are ported (spoke to hub,
hub to spoke, spoke to spoke, another group, no hub, a converter that fails), with
kube-apiserver's rules on the answer (``webhook_converter.go``) and every Failure a request
can earn; typed models are in ``test_conversion_models.py``, the answer rules' own table
in ``test_conversion_rules.py``."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import TYPE_CHECKING, Any, Protocol

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.errors import ConversionSetupError
from aioinformer.operator import Conversion, WebhookServer
from tests._support_properties import example_settings

if TYPE_CHECKING:
    from collections.abc import Mapping

CRD = "widgets.example.com"
COLOR = "example.com/color"


class ConversionHandler(Protocol):
    """The Manager's seam for a conversion webhook, as its server mounts one."""

    crd_name: str

    async def review(self, review: Mapping[str, Any]) -> dict[str, Any]: ...


def widget(version: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    metadata = {"name": "w1", "namespace": "default", "uid": "u-1", "resourceVersion": "7"}
    return {
        "apiVersion": f"example.com/{version}",
        "kind": "Widget",
        "metadata": {**metadata, **meta},
        "spec": spec,
    }


def review_of(desired: str, *objects: Any, uid: str = "r-1") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": list(objects)},
    }


def widgets() -> Conversion:
    """v1 (hub: replicas, color), v1beta1 (size, colour), v1alpha1 (size; the color kept
    in an annotation, as a version without the field keeps it for the round trip)."""
    conversion = Conversion(CRD, hub="v1")

    @conversion.to_hub("v1beta1")
    def beta_up(obj: dict[str, Any]) -> dict[str, Any]:
        spec = obj["spec"]
        obj["spec"] = {"replicas": spec["size"], "color": spec["colour"]}
        return obj

    @conversion.from_hub("v1beta1")
    async def beta_down(obj: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        spec = obj["spec"]
        obj["spec"] = {"size": spec["replicas"], "colour": spec["color"]}
        return obj

    @conversion.to_hub("v1alpha1")
    async def alpha_up(obj: dict[str, Any]) -> dict[str, Any]:
        annotations = dict(obj["metadata"].get("annotations") or {})
        color = annotations.pop(COLOR, "blue")
        obj["metadata"]["annotations"] = annotations
        obj["spec"] = {"replicas": obj["spec"]["size"], "color": color}
        return obj

    @conversion.from_hub("v1alpha1")
    def alpha_down(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].setdefault("annotations", {})[COLOR] = obj["spec"]["color"]
        obj["spec"] = {"size": obj["spec"]["replicas"]}
        return obj

    return conversion


def success(answer: dict[str, Any], uid: str = "r-1") -> list[Any]:
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == uid
    assert response["result"] == {"status": "Success"}, response["result"]
    objects: list[Any] = response["convertedObjects"]
    return objects


def failure(answer: dict[str, Any], uid: str = "r-1") -> str:
    response = answer["response"]
    assert response["uid"] == uid
    assert response["convertedObjects"] == []
    assert response["result"]["status"] == "Failure"
    message: str = response["result"]["message"]
    return message


# --- conversions -----------------------------------------------------------------------


async def test_a_spoke_converts_to_the_hub() -> None:
    (out,) = success(
        await widgets().review(
            review_of("example.com/v1", widget("v1beta1", {"size": 3, "colour": "red"}))
        )
    )
    assert out == widget("v1", {"replicas": 3, "color": "red"})


async def test_the_hub_converts_to_a_spoke() -> None:
    (out,) = success(
        await widgets().review(
            review_of("example.com/v1beta1", widget("v1", {"replicas": 3, "color": "red"}))
        )
    )
    assert out == widget("v1beta1", {"size": 3, "colour": "red"})


def recording(calls: list[str], label: str) -> Any:
    """A converter that changes nothing but notes ``label``, or the apiVersion it got."""

    def convert(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(label or obj["apiVersion"])
        return obj

    return convert


async def test_a_spoke_converts_to_another_spoke_through_the_hub() -> None:
    calls: list[str] = []
    conversion = Conversion(CRD, hub="v2")
    conversion.to_hub("v1", recording(calls, "v1 up"))
    conversion.from_hub("v1", recording(calls, "v1 down"))
    conversion.to_hub("v3", recording(calls, "v3 up"))
    conversion.from_hub("v3", recording(calls, "v3 down"))
    (out,) = success(await conversion.review(review_of("example.com/v3", widget("v1", {}))))
    assert calls == ["v1 up", "v3 down"]
    assert out == widget("v3", {})


async def test_each_converter_sees_the_api_version_of_its_input() -> None:
    seen: list[str] = []
    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", recording(seen, ""))
    conversion.from_hub("v1beta1", lambda obj: obj)
    conversion.to_hub("v1alpha1", lambda obj: obj)
    conversion.from_hub("v1alpha1", recording(seen, ""))
    success(await conversion.review(review_of("example.com/v1alpha1", widget("v1beta1", {}))))
    assert seen == ["example.com/v1beta1", "example.com/v1"]


@pytest.mark.parametrize("version", ["v1", "v1beta1", "v1alpha1"])
async def test_a_version_converted_to_itself_is_unchanged(version: str) -> None:
    obj = widget(version, {"anything": ["goes", 1]}, labels={"a": "b"})
    (out,) = success(await widgets().review(review_of(f"example.com/{version}", obj)))
    assert out == obj
    assert out is not obj


async def test_objects_of_mixed_versions_come_back_in_order_one_for_one() -> None:
    objects = [
        widget("v1beta1", {"size": 1, "colour": "red"}, name="a"),
        widget("v1", {"replicas": 2, "color": "green"}, name="b"),
        widget("v1alpha1", {"size": 3}, name="c", annotations={COLOR: "blue"}),
    ]
    out = success(await widgets().review(review_of("example.com/v1", *objects)))
    assert [o["metadata"]["name"] for o in out] == ["a", "b", "c"]
    assert [o["spec"] for o in out] == [
        {"replicas": 1, "color": "red"},
        {"replicas": 2, "color": "green"},
        {"replicas": 3, "color": "blue"},
    ]
    assert {o["apiVersion"] for o in out} == {"example.com/v1"}


async def test_a_request_without_objects_answers_none() -> None:
    assert success(await widgets().review(review_of("example.com/v1"))) == []


async def test_a_converter_gets_a_copy_so_the_request_stays_as_sent() -> None:
    obj = widget("v1beta1", {"size": 3, "colour": "red"}, labels={"a": "b"})
    review = review_of("example.com/v1alpha1", obj)
    sent = copy.deepcopy(review)
    success(await widgets().review(review))
    assert review == sent


async def test_a_round_trip_through_a_poorer_version_keeps_every_field() -> None:
    conversion = widgets()
    start = widget("v1beta1", {"size": 4, "colour": "teal"}, annotations={"keep": "me"})
    (down,) = success(await conversion.review(review_of("example.com/v1alpha1", start)))
    assert down["spec"] == {"size": 4}
    assert down["metadata"]["annotations"] == {"keep": "me", COLOR: "teal"}
    (back,) = success(await conversion.review(review_of("example.com/v1beta1", down)))
    assert back == start


@given(
    size=st.integers(min_value=0, max_value=10**6),
    colour=st.text(min_size=1, max_size=20),
    annotations=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), st.text(max_size=20), max_size=4
    ),
    labels=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True),
        st.from_regex(r"[a-z0-9]{0,8}", fullmatch=True),
        max_size=4,
    ),
    path=st.lists(st.sampled_from(["v1", "v1beta1", "v1alpha1"]), min_size=1, max_size=5),
)
@example_settings(100)
def test_any_path_between_versions_and_back_returns_the_object_as_it_was(
    size: int,
    colour: str,
    annotations: dict[str, str],
    labels: dict[str, str],
    path: list[str],
) -> None:
    conversion = widgets()
    start = widget(
        "v1beta1", {"size": size, "colour": colour}, annotations=annotations, labels=labels
    )

    async def walk() -> dict[str, Any]:
        current = start
        for version in [*path, "v1beta1"]:
            (current,) = success(
                await conversion.review(review_of(f"example.com/{version}", current))
            )
            assert current["apiVersion"] == f"example.com/{version}"
        return current

    assert asyncio.run(walk()) == start


async def test_an_instance_with_an_async_call_is_awaited() -> None:
    class Up:
        async def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(0)
            obj["spec"] = {"up": True}
            return obj

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", Up())
    conversion.from_hub("v1beta1", lambda obj: obj)
    (out,) = success(await conversion.review(review_of("example.com/v1", widget("v1beta1", {}))))
    assert out["spec"] == {"up": True}


async def test_a_converter_may_build_a_new_object_without_api_version_or_kind() -> None:
    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", lambda obj: {"metadata": obj["metadata"], "spec": {"new": 1}})
    conversion.from_hub("v1beta1", lambda obj: obj)
    (out,) = success(await conversion.review(review_of("example.com/v1", widget("v1beta1", {}))))
    assert out == widget("v1", {"new": 1})


async def test_the_decorators_return_the_converter_itself() -> None:
    conversion = Conversion(CRD, hub="v1")

    def up(obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    assert conversion.to_hub("v1beta1")(up) is up
    assert conversion.from_hub("v1beta1", up) is up


async def test_a_conversion_satisfies_the_managers_handler_seam() -> None:
    handler: ConversionHandler = widgets()
    assert handler.crd_name == CRD
    success(await handler.review(review_of("example.com/v1")))


async def test_cancellation_inside_a_converter_is_not_an_answer() -> None:
    async def cancelled(obj: dict[str, Any]) -> dict[str, Any]:
        raise asyncio.CancelledError

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", cancelled)
    conversion.from_hub("v1beta1", cancelled)
    with pytest.raises(asyncio.CancelledError):
        await conversion.review(review_of("example.com/v1", widget("v1beta1", {})))


# --- what kube-apiserver keeps of an answer ---------------------------------------------


async def test_metadata_a_converter_changes_is_restored_but_labels_and_annotations() -> None:
    def meddle(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        meta.update(resourceVersion="99", generation=5, finalizers=["example.com/f"])
        meta["labels"] = {"tier": "gold"}
        meta["annotations"] = {"note": "converted"}
        return obj

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", meddle)
    conversion.from_hub("v1beta1", meddle)
    obj = widget("v1beta1", {}, generation=2, labels={"tier": "silver"})
    (out,) = success(await conversion.review(review_of("example.com/v1", obj)))
    assert out["metadata"] == {
        **obj["metadata"],
        "labels": {"tier": "gold"},
        "annotations": {"note": "converted"},
    }


@pytest.mark.parametrize("removed", [None, "absent"], ids=["null", "absent"])
async def test_labels_and_annotations_a_converter_drops_are_dropped(removed: Any) -> None:
    def drop(obj: dict[str, Any]) -> dict[str, Any]:
        for field in ("labels", "annotations"):
            if removed is None:
                obj["metadata"][field] = None
            else:
                del obj["metadata"][field]
        return obj

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", drop)
    conversion.from_hub("v1beta1", drop)
    obj = widget("v1beta1", {}, labels={"a": "b"}, annotations={"c": "d"})
    (out,) = success(await conversion.review(review_of("example.com/v1", obj)))
    assert "labels" not in out["metadata"]
    assert "annotations" not in out["metadata"]


def breaking(change: Any) -> Conversion:
    conversion = Conversion(CRD, hub="v1")

    def broken(obj: dict[str, Any]) -> dict[str, Any]:
        change(obj)
        return obj

    conversion.to_hub("v1beta1", broken)
    conversion.from_hub("v1beta1", broken)
    return conversion


def set_meta(field: str, value: Any) -> Any:
    return lambda obj: obj["metadata"].__setitem__(field, value)


BROKEN_ANSWERS = [
    pytest.param(
        lambda obj: obj.__setitem__("kind", "Gadget"),
        "kind 'Gadget' is not the request's 'Widget'",
        id="another-kind",
    ),
    pytest.param(
        lambda obj: obj.pop("metadata"), "the converted object has no metadata", id="no-metadata"
    ),
    pytest.param(
        lambda obj: obj.__setitem__("metadata", ["foo"]),
        "the converted object has metadata of type list",
        id="metadata-not-an-object",
    ),
    pytest.param(
        set_meta("name", "w2"),
        "metadata.name 'w2' is not the request's 'w1': a conversion keeps an object's identity",
        id="another-name",
    ),
    pytest.param(
        set_meta("namespace", "other"),
        "metadata.namespace 'other' is not the request's 'default'",
        id="another-namespace",
    ),
    pytest.param(
        lambda obj: obj["metadata"].pop("uid"),
        "metadata.uid None is not the request's 'u-1'",
        id="uid-dropped",
    ),
    pytest.param(
        set_meta("labels", {"some/non-qualified/label": "x"}),
        "label key 'some/non-qualified/label'",
        id="label-key-with-two-slashes",
    ),
    pytest.param(
        set_meta("labels", {"foo": "üäö"}), "label 'foo' value 'üäö'", id="label-value-not-ascii"
    ),
    pytest.param(
        set_meta("labels", {"foo": "x" * 64}), "must be empty or 1 to 63", id="label-value-too-long"
    ),
    pytest.param(
        set_meta("labels", {"a": None, "b": "B"}),
        "metadata.labels['a'] is a NoneType, not a string",
        id="label-value-null",
    ),
    pytest.param(
        set_meta("labels", "a=b"), "metadata.labels is a str, not an object", id="labels-a-string"
    ),
    pytest.param(
        set_meta("annotations", {"Not Valid": "x"}),
        "annotation key 'Not Valid'",
        id="annotation-key-with-a-space",
    ),
    pytest.param(
        set_meta("annotations", {"foo": "x" * (256 * 1024 + 1)}),
        "annotations take 262148 bytes, more than the 262144 allowed",
        id="annotations-too-big",
    ),
    pytest.param(
        lambda obj: obj.__setitem__("apiVersion", "example.com/v2"),
        "answered apiVersion 'example.com/v2', not 'example.com/v1'",
        id="another-api-version",
    ),
]


@pytest.mark.parametrize(("change", "expected"), BROKEN_ANSWERS)
async def test_an_answer_kube_apiserver_would_refuse_is_a_failure_saying_why(
    change: Any, expected: str
) -> None:
    obj = widget("v1beta1", {}, labels={"tier": "silver"})
    message = failure(await breaking(change).review(review_of("example.com/v1", obj)))
    assert message.startswith("objects[0] (default/w1)")
    assert expected in message


async def test_a_label_change_within_the_rules_is_kept() -> None:
    labels = {"example.com/tier": "gold", "app.kubernetes.io/name": "w", "empty": ""}
    (out,) = success(
        await breaking(set_meta("labels", labels)).review(
            review_of("example.com/v1", widget("v1beta1", {}))
        )
    )
    assert out["metadata"]["labels"] == labels


async def test_one_failing_object_fails_the_whole_request() -> None:
    objects = [widget("v1beta1", {}, name="a"), widget("v1beta1", {}, name="b")]

    def second_fails(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["metadata"]["name"] == "b":
            raise ValueError("no")
        return obj

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", second_fails)
    conversion.from_hub("v1beta1", second_fails)
    message = failure(await conversion.review(review_of("example.com/v1", *objects)))
    assert message.startswith("objects[1] (default/b): ")


# --- Failures: the converters ----------------------------------------------------------


async def test_a_converter_that_raises_is_a_failure_naming_it_and_the_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(obj: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("size")

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", explode)
    conversion.from_hub("v1beta1", explode)
    with caplog.at_level(logging.WARNING, logger="aioinformer.operator.conversion"):
        message = failure(
            await conversion.review(review_of("example.com/v1", widget("v1beta1", {})))
        )
    assert message == (
        "objects[0] (default/w1): to_hub('v1beta1') "
        f"({__name__}.test_a_converter_that_raises_is_a_failure_naming_it_and_the_error."
        "<locals>.explode) raised KeyError: 'size'"
    )
    (record,) = caplog.records
    assert "answers Failure to ConversionReview 'r-1'" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], KeyError)


async def test_the_second_converter_of_a_spoke_to_spoke_path_is_named_when_it_fails() -> None:
    calls: list[str] = []

    def explode(obj: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("down")

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", recording(calls, "v1beta1 up"))
    conversion.from_hub("v1beta1", recording(calls, "v1beta1 down"))
    conversion.to_hub("v1alpha1", recording(calls, "v1alpha1 up"))
    conversion.from_hub("v1alpha1", explode)
    message = failure(
        await conversion.review(review_of("example.com/v1alpha1", widget("v1beta1", {})))
    )
    assert calls == ["v1beta1 up"]
    assert message == (
        f"objects[0] (default/w1): from_hub('v1alpha1') ({__name__}."
        "test_the_second_converter_of_a_spoke_to_spoke_path_is_named_when_it_fails.<locals>."
        "explode) raised RuntimeError: down"
    )


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(None, "returned a NoneType, not an object (a dict)", id="none"),
        pytest.param([{}], "returned a list, not an object (a dict)", id="list"),
    ],
)
async def test_a_converter_returning_no_object_is_a_failure(result: Any, expected: str) -> None:
    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", lambda obj: result)
    conversion.from_hub("v1beta1", lambda obj: obj)
    message = failure(await conversion.review(review_of("example.com/v1", widget("v1beta1", {}))))
    assert message.endswith(expected)


async def test_a_sync_converter_returning_a_coroutine_is_a_failure_not_a_warning() -> None:
    async def convert(obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", lambda obj: convert(obj))
    conversion.from_hub("v1beta1", convert)
    message = failure(await conversion.review(review_of("example.com/v1", widget("v1beta1", {}))))
    assert message.endswith("returned a coroutine: declare it with async def")


async def test_a_spoke_with_one_direction_only_fails_every_request() -> None:
    conversion = Conversion(CRD, hub="v1")
    conversion.to_hub("v1beta1", lambda obj: obj)
    conversion.from_hub("v1beta1", lambda obj: obj)
    conversion.from_hub("v1alpha1", lambda obj: obj)
    message = failure(await conversion.review(review_of("example.com/v1beta1", widget("v1", {}))))
    assert message == (
        "the conversion of widgets.example.com is incomplete: 'v1alpha1' has from_hub but no to_hub"
    )
    with pytest.raises(ConversionSetupError, match="'v1alpha1' has from_hub but no to_hub"):
        conversion.check()


# --- Failures: the request -------------------------------------------------------------


@pytest.mark.parametrize(
    ("review", "uid", "expected"),
    [
        pytest.param(["no"], "", "the review is a list, not a ConversionReview", id="not-a-map"),
        pytest.param(
            {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"},
            "",
            "the ConversionReview has no request",
            id="no-request",
        ),
        pytest.param(
            {**review_of("example.com/v1"), "request": {"desiredAPIVersion": "example.com/v1"}},
            "",
            "the ConversionReview has a request without a uid",
            id="no-uid",
        ),
        pytest.param(
            review_of("example.com/v1", uid=""),
            "",
            "the ConversionReview has a request without a uid",
            id="empty-uid",
        ),
        pytest.param(
            {**review_of("example.com/v1"), "apiVersion": "apiextensions.k8s.io/v1beta1"},
            "r-1",
            "the review is 'apiextensions.k8s.io/v1beta1' 'ConversionReview'; only "
            "ConversionReview apiextensions.k8s.io/v1 is served (set "
            "conversionReviewVersions: [v1])",
            id="v1beta1-review",
        ),
        pytest.param(
            {**review_of("example.com/v1"), "kind": "AdmissionReview"},
            "r-1",
            "the review is 'apiextensions.k8s.io/v1' 'AdmissionReview'",
            id="another-review-kind",
        ),
        pytest.param(
            {**review_of("example.com/v1"), "request": {"uid": "r-1", "objects": None}},
            "r-1",
            "the request's objects is a NoneType, not a list",
            id="objects-not-a-list",
        ),
    ],
)
async def test_a_malformed_review_is_answered_failure_echoing_its_uid(
    review: Any, uid: str, expected: str
) -> None:
    assert failure(await widgets().review(review), uid=uid).startswith(expected)


@pytest.mark.parametrize(
    "desired",
    [
        pytest.param("jobss.example.org/v2", id="another-group"),
        pytest.param("example.com/v3", id="unknown-version"),
        pytest.param("v1", id="the-core-group"),
        pytest.param(None, id="missing"),
        pytest.param(1, id="not-a-string"),
    ],
)
async def test_a_desired_version_this_conversion_does_not_serve_is_a_failure(
    desired: Any,
) -> None:
    message = failure(await widgets().review(review_of(desired, widget("v1", {}))))
    assert message == (
        f"desiredAPIVersion {desired!r} is not a version of widgets.example.com "
        "(group 'example.com', versions ['v1', 'v1alpha1', 'v1beta1'])"
    )


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param("w1", "objects[0] is a str, not an object", id="not-an-object"),
        pytest.param(
            {**widget("v1", {}), "apiVersion": "apps/v1"},
            "objects[0] (default/w1) has apiVersion 'apps/v1', not a version of "
            "widgets.example.com",
            id="another-group",
        ),
        pytest.param(
            widget("v2", {}),
            "objects[0] (default/w1) has apiVersion 'example.com/v2', not a version",
            id="a-version-with-no-converter",
        ),
        pytest.param(
            {k: v for k, v in widget("v1", {}).items() if k != "apiVersion"},
            "objects[0] (default/w1) has apiVersion None",
            id="no-api-version",
        ),
        pytest.param(
            {k: v for k, v in widget("v1", {}).items() if k != "kind"},
            "objects[0] (default/w1) has no kind",
            id="no-kind",
        ),
        pytest.param(
            {**widget("v1", {}), "metadata": {"name": "cluster-scoped"}, "kind": ""},
            "objects[0] (cluster-scoped) has no kind",
            id="empty-kind-cluster-scoped",
        ),
        pytest.param(
            {**widget("v1", {}), "metadata": ["w1"]},
            "objects[0] has metadata of type list",
            id="metadata-not-an-object",
        ),
    ],
)
async def test_an_object_this_conversion_cannot_take_is_a_failure_naming_it(
    obj: Any, expected: str
) -> None:
    assert failure(await widgets().review(review_of("example.com/v1beta1", obj))).startswith(
        expected
    )


async def test_an_object_of_another_kind_than_the_conversions_is_a_failure() -> None:
    conversion = Conversion(CRD, hub="v1", kind="Widget")
    obj = {**widget("v1", {}), "kind": "Gadget"}
    message = failure(await conversion.review(review_of("example.com/v1", obj)))
    assert message == (
        "objects[0] (default/w1) is a Gadget, not a Widget: widgets.example.com serves one kind"
    )


async def test_objects_of_two_kinds_in_one_request_are_a_failure() -> None:
    objects = [widget("v1", {}), {**widget("v1", {}, name="g"), "kind": "Gadget"}]
    message = failure(await widgets().review(review_of("example.com/v1", *objects)))
    assert message.startswith("objects[1] (default/g) is a Gadget, not a Widget")


# --- registration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["widgets", "widgets.example", "Widgets.example.com", ".example.com", "", 5]
)
def test_a_name_that_is_not_plural_dot_group_is_refused(name: Any) -> None:
    with pytest.raises(ConversionSetupError, match="is not a CRD name"):
        Conversion(name, hub="v1")


@pytest.mark.parametrize("version", ["V1", "1beta1", "v1.0", "", "v" * 64])
def test_a_version_name_kubernetes_refuses_is_refused(version: str) -> None:
    with pytest.raises(ConversionSetupError, match="is not a version name Kubernetes accepts"):
        Conversion(CRD, hub=version)
    with pytest.raises(ConversionSetupError, match="is not a version name Kubernetes accepts"):
        Conversion(CRD, hub="v1").to_hub(version)


def test_a_converter_for_the_hub_is_refused() -> None:
    conversion = Conversion(CRD, hub="v1")
    with pytest.raises(ConversionSetupError, match=r"from_hub\('v1'\): 'v1' is the hub"):
        conversion.from_hub("v1", lambda obj: obj)


def test_a_spoke_registered_twice_in_one_direction_is_refused() -> None:
    conversion = widgets()
    with pytest.raises(
        ConversionSetupError,
        match=r"to_hub\('v1beta1'\) is already registered for widgets.example.com \(to_hub",
    ):
        conversion.to_hub("v1beta1")


def test_a_converter_that_is_not_callable_is_refused() -> None:
    with pytest.raises(ConversionSetupError, match="takes a function"):
        Conversion(CRD, hub="v1").to_hub("v1beta1", "convert")  # type: ignore[call-overload]


def test_an_empty_kind_is_refused() -> None:
    with pytest.raises(ConversionSetupError, match="kind must be a non-empty str"):
        Conversion(CRD, hub="v1", kind="")


def test_a_complete_conversion_checks_and_describes_itself() -> None:
    conversion = widgets()
    conversion.check()
    assert conversion.group == "example.com"
    assert conversion.spokes == ("v1alpha1", "v1beta1")
    assert conversion.versions == ("v1", "v1alpha1", "v1beta1")
    assert repr(conversion) == (
        "<Conversion widgets.example.com hub='v1' spokes=['v1alpha1', 'v1beta1']>"
    )


def test_the_crd_stanza_names_the_webhook_and_review_version_v1() -> None:
    client_config = {"service": {"name": "op", "namespace": "ops", "path": "/convert"}}
    assert widgets().spec_conversion(client_config) == {
        "strategy": "Webhook",
        "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
    }


def test_the_webhook_server_refuses_a_conversion_converting_a_version_one_way_only() -> None:
    conversion = Conversion("widgets.example.com", hub="v1")
    conversion.from_hub("v1alpha1", lambda widget: widget)
    server = WebhookServer()
    with pytest.raises(ConversionSetupError, match="'v1alpha1' has from_hub but no to_hub"):
        server.add_conversion(conversion)
    assert server.conversions == {}
    conversion.to_hub("v1alpha1", lambda widget: widget)
    server.add_conversion(conversion)
    assert server.conversions == {"/convert": conversion}
