"""The ConversionReview ``apiextensions.k8s.io/v1`` wire format, as a conversion reads and
answers it.

Role: the one place that knows the shape of a ConversionReview: :func:`request_of` checks
a decoded review and returns its request (uid, desiredAPIVersion, objects), or raises
:class:`ReviewFailure`; :func:`answer` builds the review answered, Success or Failure;
:func:`reference` names an object of the request in messages. Used by
:class:`~aioinformer.operator.conversion.Conversion` only.

Task model: pure synchronous functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REVIEW_API_VERSION", "ReviewFailure", "answer", "reference", "request_of", "uid_of"]

REVIEW_API_VERSION: Final = "apiextensions.k8s.io/v1"
"""The ConversionReview version served (the CRD's ``conversionReviewVersions: [v1]``)."""


class ReviewFailure(Exception):
    """A request answered Failure: ``str()`` is the message, ``cause`` a converter's error.
    Raised inside ``Conversion.review`` and caught there; it never reaches its caller."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def uid_of(review: Any) -> str:
    """The request's uid, or ``""`` when it has none (the answer echoes it)."""
    request = review.get("request") if isinstance(review, Mapping) else None
    uid = request.get("uid") if isinstance(request, Mapping) else None
    return uid if isinstance(uid, str) else ""


def request_of(review: Any) -> dict[str, Any]:
    """The request of ``review``, its uid, desiredAPIVersion and objects checked."""
    if not isinstance(review, Mapping):
        raise ReviewFailure(f"the review is a {type(review).__name__}, not a ConversionReview")
    request = review.get("request")
    if not isinstance(request, Mapping):
        raise ReviewFailure("the ConversionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewFailure("the ConversionReview has a request without a uid")
    found = (review.get("apiVersion"), review.get("kind"))
    if found != (REVIEW_API_VERSION, "ConversionReview"):
        raise ReviewFailure(
            f"the review is {found[0]!r} {found[1]!r}; only ConversionReview "
            f"{REVIEW_API_VERSION} is served (set conversionReviewVersions: [v1])"
        )
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise ReviewFailure(f"the request's objects is a {type(objects).__name__}, not a list")
    return {"uid": uid, "desiredAPIVersion": request.get("desiredAPIVersion"), "objects": objects}


def reference(index: int, obj: Mapping[str, Any]) -> str:
    """``objects[2] (default/w3)``: how a message names an object of the request."""
    found = obj.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str):
        return f"objects[{index}]"
    return f"objects[{index}] ({namespace}/{name})" if namespace else f"objects[{index}] ({name})"


def answer(uid: str, objects: list[Any], result: dict[str, str]) -> dict[str, Any]:
    """The ConversionReview answered for the request ``uid``."""
    return {
        "apiVersion": REVIEW_API_VERSION,
        "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": objects, "result": result},
    }
