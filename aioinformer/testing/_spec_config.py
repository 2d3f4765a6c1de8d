"""What the fake API server refuses in the data of a ConfigMap or a Secret, in
kube-apiserver v1.36's words.

Role: the rules :data:`~aioinformer.testing._specs.SPEC_RULES` applies to ConfigMaps and
Secrets (``ValidateConfigMap``, ``ValidateSecret``, ``pkg/apis/core/validation``), kinds
without a spec. Input is the whole object; output is the list of field errors
kube-apiserver's validation finds, with its field paths and messages, a map's keys in
sorted order:

* **ConfigMap** and **Secret**: every key of ``data`` (and ``binaryData``, and a
  Secret's ``stringData``, which kube-apiserver folds into ``data``) consists of
  alphanumerics, ``-``, ``_`` and ``.``, and is not ``.``, ``..`` or ``..``-prefixed; a
  ConfigMap key may not be in both bags; the data totals at most 1 MiB; a typed Secret
  (``kubernetes.io/tls``, ``basic-auth``, ``ssh-auth``, ``dockercfg``,
  ``dockerconfigjson``, ``service-account-token``) has the keys or annotation its type
  requires.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any, Final

from aioinformer.testing._spec_fields import _dict, _invalid, _required
from aioinformer.testing._validation import FieldError, regex_error

if TYPE_CHECKING:
    from collections.abc import Mapping

_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_KEY_RE: Final = re.compile(_KEY_FMT)
# A ConfigMap's or Secret's data may total 1 MiB (core.MaxSecretSize).
_MAX_SIZE: Final = 1024 * 1024


def _key_errors(key: str) -> list[str]:
    """apimachinery's ``IsConfigMapKey``."""
    errors = []
    if len(key.encode()) > 253:
        errors.append("must be no more than 253 characters")
    if not _KEY_RE.fullmatch(key):
        errors.append(
            regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                _KEY_FMT,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if key == ".":
        errors.append("must not be '.'")
    elif key == "..":
        errors.append("must not be '..'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _keys_errors(data: Any, field: str, other: Mapping[str, Any] | None = None) -> list[FieldError]:
    """The errors of a map's keys, key by key (sorted, where Go's map order is random): each
    key's own, then, with ``other``, a key ``other`` has too."""
    if not isinstance(data, dict):
        return []
    errors: list[FieldError] = []
    for key in sorted(data):
        at = f"{field}[{key}]"
        errors.extend(_invalid(at, key, message) for message in _key_errors(key))
        if other is not None and key in other:
            errors.append(_invalid(at, key, "duplicate of key present in binaryData"))
    return errors


def _decoded_size(value: Any) -> int:
    """The size in bytes of a ``[]byte`` field's value (base64 in JSON)."""
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value, validate=True))
    except binascii.Error:
        return len(value.encode())


def _too_long(field: str) -> FieldError:
    return FieldError("FieldValueTooLong", field, f"may not be more than {_MAX_SIZE} bytes")


def _config_map(obj: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateConfigMap``: a key of ``data`` may not be one of ``binaryData`` too (the
    error is the ``data`` key's), and both bags hold at most 1 MiB (the error is the whole
    object's, on the empty path)."""
    data = _dict(obj.get("data"))
    binary = _dict(obj.get("binaryData"))
    errors = _keys_errors(data, "data", binary)
    errors.extend(_keys_errors(binary, "binaryData"))
    size = sum(len(str(value).encode()) for value in data.values())
    size += sum(_decoded_size(value) for value in binary.values())
    if size > _MAX_SIZE:
        errors.append(_too_long(""))
    return errors


# The keys each Secret type requires in its data.
_SECRET_KEYS: Final = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _secret(obj: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateSecret``: the keys, the 1 MiB limit, and the keys or annotation the
    Secret's ``type`` requires."""
    # stringData is merged into data before validation: its keys are data's.
    encoded = _dict(obj.get("data"))
    plain = _dict(obj.get("stringData"))
    data = {**encoded, **plain}
    errors = _keys_errors(data, "data")
    size = sum(_decoded_size(value) for key, value in encoded.items() if key not in plain)
    size += sum(len(str(value).encode()) for value in plain.values())
    if size > _MAX_SIZE:
        errors.append(_too_long("data"))
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = _dict(_dict(obj.get("metadata")).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            errors.append(_required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errors.extend([_required("data[username]"), _required("data[password]")])
    elif kind == "kubernetes.io/ssh-auth":
        # An empty key is missing too.
        if not _decoded_size(encoded.get("ssh-privatekey")) and not plain.get("ssh-privatekey"):
            errors.append(_required("data[ssh-privatekey]"))
    elif isinstance(kind, str):
        # The Docker configs need their key; a TLS Secret needs both of its own.
        missing = [key for key in _SECRET_KEYS.get(kind, ()) if key not in data]
        if kind == "kubernetes.io/tls":
            errors.extend(_required(f"data[{key}]") for key in missing)
        elif missing:
            errors.append(_required(f"data[{missing[0]}]"))
    return errors
