"""AdmissionReview requests and answers, as kube-apiserver v1.36 writes and reads them.

Role: the wire half of the fake API server's admission chain (``_admission`` posts the
reviews). Input is a request's :class:`~aioinformer.testing._admission_rules.Attributes`
and the :class:`~aioinformer.testing._admission_rules.Invocation` to make; output is the
``AdmissionReview`` body to post, the checked :class:`Answer` of the webhook, and the
``Status`` failures kube-apiserver answers the client with:

* :func:`denied`: the webhook's own status, sanitised as kube-apiserver sanitises it
  (403 ``Forbidden`` by default, ``<resource>.<group> "<name>" is forbidden: admission
  webhook "<webhook>" denied the request: <message>``; a 500 is ``Internal error
  occurred: ...``);
* :func:`call_failed`: a webhook that cannot be called, times out or answers what cannot
  be read (500 ``InternalError``, ``Internal error occurred: failed calling webhook
  "<webhook>": <reason>``), unless its ``failurePolicy`` is ``Ignore``;
* :func:`dry_run_unsupported`: a dry run reaching a webhook with side effects (400).

The review names the resource version sent (``kind``, ``resource``; another version than
the request's with ``matchPolicy: Equivalent``) and the request's own (``requestKind``,
``requestResource``), the subresource, name, namespace, operation, the user, the object
and old object (``null`` when absent), ``dryRun`` and the options.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer._apiserver.objects import StatusError, status_body

if TYPE_CHECKING:
    from aioinformer._apiserver.objects import ResourceType
    from aioinformer.testing._admission_rules import Attributes, Invocation

__all__ = [
    "REVIEW_API_GROUP",
    "Answer",
    "CallFailed",
    "build_review",
    "call_failed",
    "denied",
    "dry_run_unsupported",
    "read_answer",
    "review_version",
]

REVIEW_API_GROUP: Final = "admission.k8s.io"


class CallFailed(Exception):
    """A webhook could not be called or its answer could not be used (kube-apiserver's
    ``ErrCallingWebhook``): subject to the webhook's ``failurePolicy``. ``str()`` is the
    reason, in kube-apiserver's words where the fake knows them."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A webhook's checked ``response``: allowed or not, the ``status`` it gave, its
    JSONPatch (decoded operations; ``None``: no patch) and its warnings."""

    allowed: bool
    status: dict[str, Any] | None
    patch: list[Any] | None
    warnings: tuple[str, ...]


def review_version(versions: Any) -> str:
    """The AdmissionReview version a webhook is sent: ``v1`` when it accepts it, else
    ``v1beta1`` (the same shape under another apiVersion); :class:`CallFailed` when it
    accepts neither."""
    listed = versions if isinstance(versions, list) else []
    for version in ("v1", "v1beta1"):
        if version in listed:
            return version
    raise CallFailed("webhook does not accept known AdmissionReview versions (v1, v1beta1)")


def _gvk(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _gvr(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "resource": rt.plural}


def _as_version(obj: dict[str, Any] | None, rt: ResourceType) -> dict[str, Any] | None:
    """The object as ``rt``'s version carries it (the fake knows no field conversion: the
    versions of one resource share their fields)."""
    if obj is None:
        return None
    return {**obj, "apiVersion": rt.api_version, "kind": rt.kind}


def build_review(
    uid: str, invocation: Invocation, attrs: Attributes, *, version: str = "v1"
) -> dict[str, Any]:
    """The ``AdmissionReview`` posted to the webhook of ``invocation``."""
    user: dict[str, Any] = {"username": attrs.user}
    if attrs.groups:
        user["groups"] = list(attrs.groups)
    request: dict[str, Any] = {
        "uid": uid,
        "kind": _gvk(invocation.rt),
        "resource": _gvr(invocation.rt),
    }
    if invocation.subresource:
        request["subResource"] = invocation.subresource
    request["requestKind"] = _gvk(attrs.rt)
    request["requestResource"] = _gvr(attrs.rt)
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request["operation"] = attrs.operation
    request["userInfo"] = user
    request["object"] = _as_version(attrs.object, invocation.rt)
    request["oldObject"] = _as_version(attrs.old_object, invocation.rt)
    request["dryRun"] = attrs.dry_run
    request["options"] = attrs.options
    return {
        "kind": "AdmissionReview",
        "apiVersion": f"{REVIEW_API_GROUP}/{version}",
        "request": request,
    }


def read_answer(uid: str, body: bytes, *, mutating: bool, version: str = "v1") -> Answer:
    """The webhook's answer, checked as kube-apiserver checks it; :class:`CallFailed` for
    one it refuses (not JSON, another kind, no ``response``, another ``uid``, a patch
    without its type or from a validating webhook, a patch type other than JSONPatch)."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise CallFailed(f"couldn't get version/kind; json parse error: {exc}") from None
    if not isinstance(review, dict):
        raise CallFailed("couldn't get version/kind; json parse error: not a JSON object")
    expected = f"{REVIEW_API_GROUP}/{version}, Kind=AdmissionReview"
    got = f"{review.get('apiVersion', '')}, Kind={review.get('kind', '')}"
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallFailed("webhook response was absent")
    if response.get("uid") != uid:
        raise CallFailed(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    if got != expected:
        raise CallFailed(f"expected webhook response of {expected}, got {got}")
    raw_patch = response.get("patch")
    patch_type = response.get("patchType") or ""
    if raw_patch and not patch_type:
        raise CallFailed("webhook returned response.patch but not response.patchType")
    if patch_type and not raw_patch:
        raise CallFailed("webhook returned response.patchType but not response.patch")
    if not mutating and raw_patch:
        raise CallFailed("validating webhook may not return response.patch")
    if not mutating and patch_type:
        raise CallFailed("validating webhook may not return response.patchType")
    patch: list[Any] | None = None
    if raw_patch:
        if patch_type != "JSONPatch":
            raise CallFailed(f'unsupported patch type "{patch_type}"')
        patch = _decode_patch(raw_patch)
    status = response.get("status")
    warnings = response.get("warnings")
    return Answer(
        allowed=response.get("allowed") is True,
        status=status if isinstance(status, dict) else None,
        patch=patch,
        warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
    )


def _decode_patch(raw: Any) -> list[Any]:
    """A response's ``patch``: base64 of a JSON list of operations; anything else is the
    500 kube-apiserver answers (not subject to ``failurePolicy``)."""
    try:
        text = base64.b64decode(str(raw), validate=True)
        operations = orjson.loads(text)
    except (binascii.Error, ValueError) as exc:
        raise internal_error(f"couldn't decode the webhook's patch: {exc}") from None
    if not isinstance(operations, list):
        raise internal_error("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    return operations


def internal_error(message: str) -> StatusError:
    """apimachinery's ``NewInternalError``: 500 ``InternalError``, the cause in details."""
    return StatusError(
        status_body(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            {"causes": [{"message": message}]},
        )
    )


def call_failed(webhook: str, reason: str) -> StatusError:
    """The 500 for a webhook that failed to be called, under ``failurePolicy: Fail``."""
    return internal_error(f'failed calling webhook "{webhook}": {reason}')


def dry_run_unsupported(webhook: str) -> StatusError:
    """The 400 for a dry run that would reach a webhook with side effects."""
    return StatusError(
        status_body(400, "BadRequest", f'admission webhook "{webhook}" does not support dry run')
    )


def denied(attrs: Attributes, webhook: str, result: dict[str, Any] | None) -> StatusError:
    """The failure a webhook's denial answers (``ToStatusErr``): its code (403 by
    default), reason and details when given, its message prefixed."""
    status = dict(result or {})
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code else 403
    denied_by = f'admission webhook "{webhook}" denied the request'
    message, reason = status.get("message"), status.get("reason")
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    name = attrs.name or "Unknown"
    details = status.get("details")
    if not isinstance(details, dict):
        if code == 500:
            details = {"causes": [{"message": text}]}
        else:
            details = {"name": name, "group": attrs.rt.group, "kind": attrs.rt.plural}
            if not attrs.rt.group:
                del details["group"]
    if code == 500:
        prefix = "Internal error occurred"
    else:
        resource = f"{attrs.rt.plural}.{attrs.rt.group}" if attrs.rt.group else attrs.rt.plural
        prefix = f'{resource} "{name}" is forbidden'
    if not reason:
        reason = "InternalError" if code == 500 else "Forbidden"
    body = status_body(code, str(reason), f"{prefix}: {text}", details)
    return StatusError(body)
