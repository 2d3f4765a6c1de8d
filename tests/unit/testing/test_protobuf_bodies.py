"""The fake API server decodes the protobuf bodies kubectl's generators send, as
kube-apiserver would, and refuses the rest with a 415 that says to send JSON.

The ``KUBECTL_*`` bodies were captured from kubectl v1.32.4 (``kubectl create configmap
settings --from-literal=mode=blue --from-literal=size=3`` and so on) against the fake;
the others are built here from the documented wire format (the ``k8s\\x00`` magic, a
``runtime.Unknown`` envelope, the object's ``generated.proto`` fields)."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer._apiserver.objects import StatusError
from aioinformer.testing._protobuf import MAGIC, decode_protobuf_object, is_protobuf

KUBECTL_CONFIGMAP = (
    b'k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x123\n\x18\n\x08settings\x12\x00\x1a\x00"\x00*'
    b'\x002\x008\x00B\x00\x12\x0c\n\x04mode\x12\x04blue\x12\t\n\x04size\x12\x013\x1a\x00"\x00'
)
KUBECTL_SECRET = (
    b'k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12(\n\x15\n\x05token\x12\x00\x1a\x00"\x00*\x002'
    b'\x008\x00B\x00\x12\r\n\x03key\x12\x06s3cr=t\x1a\x00\x1a\x00"\x00'
)
KUBECTL_NAMESPACE = (
    b'k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1e\n\x16\n\x06team-a\x12\x00\x1a\x00"\x00*'
    b'\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00"\x00'
)
KUBECTL_SERVICEACCOUNT = (
    b"k8s\x00\n\x14\n\x02v1\x12\x0eServiceAccount\x12\x17\n\x15\n\x05robot\x12\x00\x1a\x00"
    b'"\x00*\x002\x008\x00B\x00\x1a\x00"\x00'
)
DEPLOYMENT = b"k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\x06\n\x04\n\x02ab"


# -- a hand encoder of the wire format ------------------------------------------------------


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, value: bytes | int | bool) -> bytes:
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    return varint(number << 3) + varint(int(value))


def text(number: int, value: str) -> bytes:
    return field(number, value.encode())


def entry(number: int, key: str, value: bytes) -> bytes:
    return field(number, text(1, key) + field(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *, encoding: str = "") -> bytes:
    type_meta = text(1, api_version) + text(2, kind)
    return MAGIC + field(1, type_meta) + field(2, raw) + text(3, encoding) + text(4, "")


def decoded(body: bytes) -> dict[str, Any]:
    return decode_protobuf_object(body)


def refusal(body: bytes) -> dict[str, Any]:
    with pytest.raises(StatusError) as caught:
        decode_protobuf_object(body)
    status: dict[str, Any] = caught.value.status
    return status


# -- what kubectl sends --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            KUBECTL_CONFIGMAP,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings"},
                "data": {"mode": "blue", "size": "3"},
            },
            id="configmap",
        ),
        pytest.param(
            KUBECTL_SECRET,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "token"},
                "data": {"key": "czNjcj10"},
            },
            id="secret",
        ),
        pytest.param(
            KUBECTL_NAMESPACE,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
            id="namespace",
        ),
        pytest.param(
            KUBECTL_SERVICEACCOUNT,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
            id="serviceaccount",
        ),
    ],
)
def test_kubectl_generator_bodies_decode_to_the_json_kube_apiserver_would_read(
    body: bytes, expected: dict[str, Any]
) -> None:
    assert decoded(body) == expected


def test_a_kind_that_is_not_decoded_answers_415_naming_it_and_asking_for_json() -> None:
    status = refusal(DEPLOYMENT)
    assert (status["code"], status["reason"]) == (415, "UnsupportedMediaType")
    assert "protobuf Deployment" in status["message"]
    assert "send it as JSON" in status["message"]
    assert "ConfigMap, Namespace, Secret, ServiceAccount" in status["message"]


# -- fields kubectl's generators leave out, from the wire format ---------------------------


def test_metadata_maps_lists_and_owner_references_decode() -> None:
    owner = (
        text(1, "Deployment")
        + text(3, "web")
        + text(4, "u-1")
        + text(5, "apps/v1")
        + field(6, True)
        + field(7, False)
    )
    meta = (
        text(1, "settings")
        + text(3, "team-a")
        + field(7, 0)
        + field(8, b"")  # creationTimestamp: set by the server, skipped
        + entry(11, "app", b"web")
        + entry(11, "tier", b"front")
        + entry(12, "note", b"a=b")
        + field(13, owner)
        + text(14, "example.com/keep")
        + text(14, "example.com/also")
        + field(17, b"\n\x07kubectl")  # managedFields: set by the server, skipped
    )
    raw = (
        field(1, meta) + entry(2, "mode", b"blue") + entry(3, "blob", b"\x00\xff") + field(4, True)
    )
    assert decoded(envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "namespace": "team-a",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": "a=b"},
            "ownerReferences": [
                {
                    "kind": "Deployment",
                    "name": "web",
                    "uid": "u-1",
                    "apiVersion": "apps/v1",
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
            "finalizers": ["example.com/keep", "example.com/also"],
        },
        "data": {"mode": "blue"},
        "binaryData": {"blob": "AP8="},
        "immutable": True,
    }


def test_secret_service_account_and_namespace_fields_decode() -> None:
    secret = field(1, text(1, "s")) + text(3, "Opaque") + entry(4, "plain", b"text")
    assert decoded(envelope("v1", "Secret", secret)) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "type": "Opaque",
        "stringData": {"plain": "text"},
    }
    account = (
        field(1, text(1, "robot"))
        + field(2, text(1, "Secret") + text(3, "robot-token"))
        + field(3, text(1, "registry"))
        + field(4, False)
    )
    assert decoded(envelope("v1", "ServiceAccount", account)) == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "robot"},
        "secrets": [{"kind": "Secret", "name": "robot-token"}],
        "imagePullSecrets": [{"name": "registry"}],
        "automountServiceAccountToken": False,
    }
    namespace = (
        field(1, text(1, "t")) + field(2, text(1, "kubernetes")) + field(3, text(1, "Active"))
    )
    assert decoded(envelope("v1", "Namespace", namespace)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "t"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def test_a_large_varint_and_a_negative_integer_decode() -> None:
    meta = text(1, "x") + field(10, (1 << 64) - 5) + field(7, 300)
    obj = decoded(envelope("v1", "ConfigMap", field(1, meta)))
    assert obj["metadata"] == {"name": "x", "deletionGracePeriodSeconds": -5, "generation": 300}


# -- refusals -------------------------------------------------------------------------------


def test_a_field_the_fake_does_not_decode_is_refused_rather_than_dropped() -> None:
    status = refusal(envelope("v1", "ConfigMap", field(1, text(1, "x")) + text(9, "surprise")))
    assert status["code"] == 415
    assert "field 9 of ConfigMap is not decoded" in status["message"]


def test_an_encoded_raw_object_is_refused_as_unsupported() -> None:
    status = refusal(envelope("v1", "ConfigMap", b"", encoding="gzip"))
    assert status["code"] == 415
    assert "content encoding 'gzip'" in status["message"]


def test_an_envelope_without_a_kind_is_refused_as_unsupported() -> None:
    status = refusal(MAGIC + field(2, b""))
    assert status["code"] == 415
    assert "object without a kind" in status["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param(b'{"kind": "ConfigMap"}', "magic number", id="json-not-protobuf"),
        pytest.param(MAGIC + b"\x0a\x10\x0a", "runs past the end", id="truncated-envelope"),
        pytest.param(MAGIC + b"\x0b", "wire type 3", id="group-wire-type"),
        pytest.param(MAGIC + b"\x00\x00", "field number 0", id="field-zero"),
        pytest.param(MAGIC + b"\x08" + b"\xff" * 11, "longer than 10 bytes", id="long-varint"),
        pytest.param(MAGIC + b"\x08\xff", "varint runs past", id="cut-varint"),
        pytest.param(MAGIC + b"\x0d\x00", "fixed-width", id="cut-fixed32"),
        pytest.param(MAGIC + b"\x08\x01", "not length-delimited", id="varint-type-meta"),
    ],
)
def test_a_body_that_is_not_the_envelope_is_a_bad_request(body: bytes, words: str) -> None:
    status = refusal(body)
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert words in status["message"]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        pytest.param(field(1, text(1, "x")) + field(2, 5), "is not length-delimited", id="map"),
        pytest.param(field(1, text(1, "x")) + field(4, b"yes"), "not a varint", id="bool"),
        pytest.param(field(1, field(1, b"\xff")), "not UTF-8", id="utf8"),
        pytest.param(field(1, text(1, "x")) + field(2, field(3, b"")), "map entry", id="entry"),
    ],
)
def test_an_object_with_mistyped_fields_is_a_bad_request(raw: bytes, words: str) -> None:
    status = refusal(envelope("v1", "ConfigMap", raw))
    assert status["code"] == 400
    assert words in status["message"]


def test_fixed_width_fields_of_the_envelope_are_read_past() -> None:
    body = envelope("v1", "Namespace", field(1, text(1, "n"))) + b"\x29" + b"\x00" * 8
    assert decoded(body)["metadata"] == {"name": "n"}


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/vnd.kubernetes.protobuf", True),
        ("Application/VND.Kubernetes.Protobuf; charset=binary", True),
        ("application/json", False),
        ("application/vnd.kubernetes.protobuf;stream=watch", True),
        ("", False),
    ],
)
def test_is_protobuf_reads_the_media_type_only(content_type: str, expected: bool) -> None:
    assert is_protobuf(content_type) is expected
