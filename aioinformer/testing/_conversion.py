"""A CustomResourceDefinition's ``spec.conversion`` and the ConversionReview, as
kube-apiserver v1.36's apiextensions server reads, sends and checks them.

Role: the pure half of the fake's conversion webhooks (the calls are
:mod:`~aioinformer.testing._converter`'s). Input is a definition's ``spec`` (on every
write of it), or the objects to convert with the version they are wanted in and the
webhook's decoded answer; output is the definition's conversion defaulted and its field
errors (``ValidateCustomResourceDefinition``'s paths and words, which name the internal
API's fields: ``spec.conversion.webhookClientConfig``,
``spec.conversion.conversionReviewVersions``), the ConversionReview to send, and the
converted objects or a :class:`ConversionFailure` worded as kube-apiserver's
``webhookConverter`` words it (``conversion webhook for example.com/v1, Kind=Widget
returned 0 objects, expected 1``).

The answer's checks, in kube-apiserver's order: the review's ``apiVersion`` and ``kind``
(a v1 review only; v1beta1 answers were never checked), a ``response``, its ``uid``
(v1 only), ``result.status`` ``Success`` (else the result's message), as many objects
as were sent, then each object: its group/version the desired one, its kind the sent
one's, and the same name, namespace and uid. The other metadata of a converted object is
restored from the sent one but its labels and annotations, which the webhook may change
(to string values; changed labels must be valid labels, changed annotations have valid
keys): kube-apiserver ignores the other changes rather than refusing them.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer.testing._spec_fields import _invalid, _not_supported, _required
from aioinformer.testing._validation import (
    FieldError,
    _go_quote,
    dns1035_label_errors,
    label_key_errors,
    label_map_errors,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "REVIEW_VERSIONS",
    "ConversionFailure",
    "WebhookConfig",
    "conversion_errors",
    "converted_objects",
    "default_conversion",
    "gvk_text",
    "review_request",
    "webhook_config",
]

REVIEW_VERSIONS: Final = ("v1", "v1beta1")
"""The ConversionReview versions kube-apiserver speaks (and the fake sends)."""
_STRATEGIES: Final = ("None", "Webhook")
_REVIEW_GROUP: Final = "apiextensions.k8s.io"
_URL_FORM: Final = "; desired format: https://host[/path]"
_NOT_WEBHOOK: Final = "should not be set when strategy is not set to Webhook"


class ConversionFailure(Exception):
    """A conversion that failed: the message is kube-apiserver's, whole
    (``conversion webhook for <gvk> failed: ...``), what the client's 500 carries."""


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    """Where and how a definition's objects are converted (a valid ``spec.conversion``
    with ``strategy: Webhook``)."""

    definition: str
    """The definition's name (``widgets.example.com``)."""
    url: str | None
    """``clientConfig.url``; ``None`` when a ``service`` is named instead."""
    service: tuple[str, str, int, str] | None
    """``clientConfig.service``: namespace, name, port (defaulted 443) and path."""
    ca_bundle: bytes
    """``clientConfig.caBundle``, decoded (PEM); empty: the system's trust store."""
    review_versions: tuple[str, ...]
    """``conversionReviewVersions``, in the definition's order of preference."""

    @property
    def review_version(self) -> str:
        """The review version sent: the first of ``review_versions`` kube-apiserver
        speaks (validation guarantees one)."""
        return next(v for v in self.review_versions if v in REVIEW_VERSIONS)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def default_conversion(spec: dict[str, Any]) -> None:
    """What the v1 API defaults in ``spec.conversion``, in place: the whole stanza
    (``strategy: None``) when absent, an empty strategy ``None``, a service's port 443."""
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
        return
    if not conversion.get("strategy"):
        conversion["strategy"] = "None"
    service = _dict(_dict(conversion.get("webhook")).get("clientConfig")).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def conversion_errors(conversion: Mapping[str, Any]) -> list[FieldError]:
    """``spec.conversion``'s field errors (a defaulted one), in kube-apiserver's order:
    the strategy, then the webhook's client config and review versions."""
    strategy = _str(conversion.get("strategy"))
    errors: list[FieldError] = []
    if strategy not in _STRATEGIES:
        errors.append(
            _not_supported("spec.conversion.strategy", strategy, _STRATEGIES)
            if strategy
            else _required("spec.conversion.strategy")
        )
    webhook = conversion.get("webhook")
    client_config = _dict(webhook).get("clientConfig")
    versions = _dict(webhook).get("conversionReviewVersions")
    if strategy != "Webhook":
        if isinstance(client_config, dict):
            errors.append(_forbidden("spec.conversion.webhookClientConfig", _NOT_WEBHOOK))
        if isinstance(versions, list) and versions:
            errors.append(_forbidden("spec.conversion.conversionReviewVersions", _NOT_WEBHOOK))
        return errors
    field = "spec.conversion.webhookClientConfig"
    if not isinstance(client_config, dict):
        errors.append(_required(field, "required when strategy is set to Webhook"))
    else:
        url, service = client_config.get("url"), client_config.get("service")
        if (url is None) == (service is None):
            errors.append(_required(field, "exactly one of url or service is required"))
        elif url is not None:
            errors += _url_errors(f"{field}.url", _str(url))
        else:
            errors += _service_errors(f"{field}.service", _dict(service))
    errors += _review_version_errors(versions if isinstance(versions, list) else [])
    return errors


def _forbidden(field: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", field, detail)


def _url_errors(field: str, url: str) -> list[FieldError]:
    """apiserver's ``ValidateWebhookURL`` with https forced."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        return [_required(field, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errors = []
    if parts.scheme != "https":
        errors.append(
            _invalid(field, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM)
        )
    if not parts.netloc:
        errors.append(_invalid(field, parts.netloc, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        user = parts.netloc.rpartition("@")[0]
        errors.append(_invalid(field, user, "user information is not permitted in the URL"))
    if parts.fragment:
        errors.append(_invalid(field, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errors.append(_invalid(field, parts.query, "query parameters are not permitted in the URL"))
    return errors


def _service_errors(field: str, service: Mapping[str, Any]) -> list[FieldError]:
    """apiserver's ``ValidateWebhookService``."""
    errors = []
    if not _str(service.get("name")):
        errors.append(_required(f"{field}.name", "service name is required"))
    if not _str(service.get("namespace")):
        errors.append(_required(f"{field}.namespace", "service namespace is required"))
    port = service.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        detail = "port is not valid: must be between 1 and 65535, inclusive"
        errors.append(_invalid(f"{field}.port", port, detail))
    path = _str(service.get("path"))
    if path in ("", "/"):
        return errors
    if path == "//":
        return [*errors, _invalid(f"{field}.path", path, "segment[0] may not be empty")]
    if not path.startswith("/"):
        errors.append(_invalid(f"{field}.path", path, "must start with a '/'"))
    segments = path.removeprefix("/").split("/")
    for i, segment in enumerate(segments):
        if not segment and i != len(segments) - 1:
            errors.append(_invalid(f"{field}.path", path, f"segment[{i}] may not be empty"))
    return errors


def _review_version_errors(versions: Sequence[Any]) -> list[FieldError]:
    """apiextensions' ``validateConversionReviewVersions``, a recognized one required."""
    field = "spec.conversion.conversionReviewVersions"
    if not versions:
        return [_required(field)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        text = _str(version)
        if text in seen:
            errors.append(_invalid(f"{field}[{i}]", text, "duplicate version"))
            continue
        seen.add(text)
        for problem in dns1035_label_errors(text):
            errors.append(_invalid(f"{field}[{i}]", text, problem))
    if not seen & set(REVIEW_VERSIONS):
        shown = [_str(v) for v in versions]
        detail = "must include at least one of " + ", ".join(sorted(REVIEW_VERSIONS))
        errors.append(_invalid(field, shown, detail))
    return errors


def webhook_config(crd: Mapping[str, Any]) -> WebhookConfig | None:
    """The webhook a stored (so valid) definition converts with; ``None`` for
    ``strategy: None``."""
    conversion = _dict(_dict(crd.get("spec")).get("conversion"))
    if conversion.get("strategy") != "Webhook":
        return None
    webhook = _dict(conversion.get("webhook"))
    client_config = _dict(webhook.get("clientConfig"))
    service = client_config.get("service")
    try:
        ca_bundle = base64.b64decode(_str(client_config.get("caBundle")), validate=True)
    except (binascii.Error, ValueError):
        ca_bundle = b"\x00"  # not PEM: the call fails loading it, as kube-apiserver's does
    return WebhookConfig(
        definition=_str(_dict(crd.get("metadata")).get("name")),
        url=client_config.get("url") if service is None else None,
        service=(
            (
                _str(service.get("namespace")),
                _str(service.get("name")),
                int(service.get("port") or 443),
                _str(service.get("path")),
            )
            if isinstance(service, dict)
            else None
        ),
        ca_bundle=ca_bundle,
        review_versions=tuple(_str(v) for v in webhook.get("conversionReviewVersions") or ()),
    )


# -- the review ----------------------------------------------------------------------------


def gvk_text(api_version: str, kind: str) -> str:
    """A group/version/kind as Go's ``schema.GroupVersionKind`` prints it
    (``example.com/v1, Kind=Widget``; ``/v1, Kind=Pod`` for the core group)."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def review_request(
    review_version: str, uid: str, desired: str, objects: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The ConversionReview sent to convert ``objects`` to apiVersion ``desired``."""
    return {
        "kind": "ConversionReview",
        "apiVersion": f"{_REVIEW_GROUP}/{review_version}",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": list(objects)},
    }


def _response_objects(review_version: str, uid: str, answer: Any) -> list[Any]:
    """The converted objects of a decoded answer, or why it is refused (the text after
    ``conversion webhook for <gvk> failed: ``)."""
    review = _dict(answer)
    if review_version == "v1":
        expected = gvk_text(f"{_REVIEW_GROUP}/v1", "ConversionReview")
        got = gvk_text(_str(review.get("apiVersion")), _str(review.get("kind")))
        if got != expected:
            raise ConversionFailure(f"expected webhook response of {expected}, got {got}")
    response = review.get("response")
    if not isinstance(response, dict):
        raise ConversionFailure("no response provided")
    if review_version == "v1" and _str(response.get("uid")) != uid:
        raise ConversionFailure(
            f"expected response.uid={_go_quote(uid)}, got {_go_quote(_str(response.get('uid')))}"
        )
    result = _dict(response.get("result"))
    if result.get("status") != "Success":
        message = _str(result.get("message"))
        raise ConversionFailure(
            message or f"response.result.status was '{_str(result.get('status'))}', not 'Success'"
        )
    converted = response.get("convertedObjects")
    return converted if isinstance(converted, list) else []


def converted_objects(
    review_version: str,
    uid: str,
    answer: Any,
    sent: Sequence[Mapping[str, Any]],
    desired: str,
    gvk: str,
    *,
    is_list: bool,
) -> list[dict[str, Any]]:
    """The objects of a webhook's decoded ``answer`` to the review ``uid``, checked
    against the ``sent`` ones and with their metadata restored (see the module
    docstring); ``gvk`` is the converted object's as :func:`gvk_text` writes it (the
    list's, ``...Kind=WidgetList``, when ``is_list``: kube-apiserver converts a list's
    items in one review and words its errors so). :class:`ConversionFailure` otherwise."""
    try:
        objects = _response_objects(review_version, uid, answer)
    except ConversionFailure as exc:
        raise ConversionFailure(f"conversion webhook for {gvk} failed: {exc}") from None
    if len(objects) != len(sent):
        raise ConversionFailure(
            f"conversion webhook for {gvk} returned {len(objects)} objects, expected {len(sent)}"
        )
    out = []
    for index, (original, raw) in enumerate(zip(sent, objects, strict=True)):
        # kube-apiserver counts list items from 1 in these messages, and single
        # objects from 0.
        where = f"invalid converted object at index {index + 1}" if is_list else "invalid object"
        at_index = (
            f"invalid converted object at index {index + 1}"
            if is_list
            else "invalid object at index 0"
        )
        converted = _dict(raw)
        converted_version = _str(converted.get("apiVersion"))
        if converted_version != desired:
            raise ConversionFailure(
                f"conversion webhook for {gvk} returned {at_index}: invalid groupVersion "
                f"(expected {desired}, received {converted_version})"
            )
        kind, converted_kind = _str(original.get("kind")), _str(converted.get("kind"))
        if converted_kind != kind:
            raise ConversionFailure(
                f"conversion webhook for {gvk} returned {at_index}: invalid kind "
                f"(expected {kind}, received {converted_kind})"
            )
        problem = _identity_problem(original, converted)
        if problem:
            raise ConversionFailure(f"conversion webhook for {gvk} returned {where}: {problem}")
        try:
            out.append(_restore_metadata(original, converted))
        except ConversionFailure as exc:
            where = f"metadata in object at index {index + 1}" if is_list else "metadata"
            raise ConversionFailure(
                f"conversion webhook for {gvk} returned invalid {where}: {exc}"
            ) from None
    return out


def _identity_problem(original: Mapping[str, Any], converted: Mapping[str, Any]) -> str:
    """Why ``converted`` is not the same object as ``original`` (empty: it is)."""
    meta, converted_meta = _dict(original.get("metadata")), _dict(converted.get("metadata"))
    for label, expected, got in (
        ("kind", _str(original.get("kind")), _str(converted.get("kind"))),
        ("name", _str(meta.get("name")), _str(converted_meta.get("name"))),
        ("namespace", _str(meta.get("namespace")), _str(converted_meta.get("namespace"))),
        ("UID", _str(meta.get("uid")), _str(converted_meta.get("uid"))),
    ):
        if expected != got:
            return f"must have the same {label}: {expected} != {got}"
    return ""


_GO_TYPES: Final = {
    bool: "bool",
    int: "int64",
    float: "float64",
    list: "[]interface {}",
    dict: "map[string]interface {}",
}


def _go_type(value: Any) -> str:
    return _GO_TYPES.get(type(value), "<nil>")


def _metadata_map_errors(key: str, value: Mapping[str, str]) -> list[FieldError]:
    """apimachinery's ``ValidateLabels`` of changed labels, or ``ValidateAnnotations``'
    key check of changed annotations (at kube-apiserver's ``metadata.annotation``)."""
    if key == "labels":
        return label_map_errors(value, "metadata.labels")
    return [
        FieldError("FieldValueInvalid", "metadata.annotation", message, name)
        for name in sorted(value)
        for message in label_key_errors(name.lower())
    ]


def _aggregate(errors: Sequence[FieldError]) -> str:
    """An ``ErrorList``'s ``ToAggregate().Error()``: one error alone, more in brackets."""
    texts = [f"{e.field}: {e.body()}" for e in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _restore_metadata(original: Mapping[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """``converted`` with the metadata of ``original`` but its own labels and
    annotations (string maps), as kube-apiserver's ``restoreObjectMeta`` keeps it."""
    response_meta = converted.get("metadata")
    if "metadata" not in converted:
        raise ConversionFailure("missing metadata in converted object")
    if not isinstance(response_meta, dict):
        raise ConversionFailure(
            f"invalid metadata of type {_go_type(response_meta)} in converted object"
        )
    meta = dict(_dict(original.get("metadata")))
    for key in ("labels", "annotations"):
        value = response_meta.get(key)
        if value is None:
            meta.pop(key, None)
            continue
        if not isinstance(value, dict):
            raise ConversionFailure(
                f"invalid metadata.{key} of type {_go_type(value)} in converted object"
            )
        for name, item in value.items():
            if not isinstance(item, str):
                raise ConversionFailure(
                    f"metadata.{key}[{name}] must be a string, but is {_go_type(item)} "
                    "in converted object"
                )
        if value != meta.get(key):
            errors = _metadata_map_errors(key, value)
            if errors:
                raise ConversionFailure(_aggregate(errors))
        meta[key] = value
    return {**converted, "metadata": meta}
