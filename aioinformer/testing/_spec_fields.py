"""The field errors the fake API server's spec rules build, and label selectors, in
kube-apiserver v1.36's words.

Role: what the rules of every kind share (``_spec_workloads``, ``_spec_services``,
``_spec_config``): a :class:`~aioinformer.testing._validation.FieldError` of each type
they report (``Required``, ``Invalid``, ``NotSupported``, ``Duplicate``), apimachinery's
checks of a port number and a port name, the readers that take a field of another JSON
type as absent, and the ``LabelSelector``: its validation (``ValidateLabelSelector``) and
:func:`selector_matches`. Input is a field's value and path; output is the field errors
(or messages) kube-apiserver gives for it, or whether a selector selects a set of labels.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from aioinformer.testing._validation import (
    NULL,
    FieldError,
    GoEnum,
    label_key_errors,
    label_map_errors,
    label_value_errors,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["selector_matches"]

_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_PORT_RANGE: Final = "must be between 1 and 65535, inclusive"
_NEGATIVE: Final = "must be greater than or equal to 0"
_PORT_NAME_CHARSET: Final = re.compile("[-a-z0-9]+")


def _required(field: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", field, detail)


def _invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", field, detail, NULL if value is None else value)


def _not_supported(field: str, value: Any, supported: tuple[str, ...]) -> FieldError:
    """An enum field's unsupported value (of a named string type, so shown as JSON)."""
    quoted = ", ".join(f'"{option}"' for option in supported)
    shown = GoEnum(value) if isinstance(value, str) else value
    return FieldError("FieldValueNotSupported", field, f"supported values: {quoted}", shown)


def _duplicate(field: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", field, "", value)


def _int(value: Any) -> int | None:
    """``value`` as a JSON integer, or ``None`` (absent, or of another type)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _nonnegative(value: Any, field: str) -> list[FieldError]:
    number = _int(value)
    return [_invalid(field, number, _NEGATIVE)] if number is not None and number < 0 else []


def _port_num_errors(port: int) -> list[str]:
    """apimachinery's ``IsValidPortNum``."""
    return [] if 1 <= port <= 65535 else [_PORT_RANGE]


def _port_name_errors(name: str) -> list[str]:
    """apimachinery's ``IsValidPortName`` (an IANA service name)."""
    errors = []
    if len(name.encode()) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.fullmatch(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list field (an absent or mistyped list: none; a mistyped item:
    an empty object, so its required fields are reported)."""
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, dict) else {} for item in value]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# -- selectors ---------------------------------------------------------------------------


def _selector_errors(selector: dict[str, Any], path: str) -> list[FieldError]:
    """``ValidateLabelSelector``: ``matchLabels`` as labels, then each requirement of
    ``matchExpressions`` (its operator and values, its key, each value)."""
    errors = label_map_errors(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, requirement in enumerate(_dicts(selector.get("matchExpressions"))):
        at = f"{path}.matchExpressions[{i}]"
        operator = requirement.get("operator") or ""
        raw = requirement.get("values")
        values = raw if isinstance(raw, list) else []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    _required(
                        f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError(
                        "FieldValueForbidden",
                        f"{at}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(
                _invalid(f"{at}.operator", GoEnum(operator), "not a valid selector operator")
            )
        key = str(requirement.get("key") or "")
        errors.extend(_invalid(f"{at}.key", key, message) for message in label_key_errors(key))
        for j, value in enumerate(values):
            errors.extend(
                _invalid(f"{at}.values[{j}]", value, message)
                for message in label_value_errors(str(value))
            )
    return errors


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool:
    """Whether a ``LabelSelector`` selects ``labels``; ``None`` (no selector) selects
    nothing and an empty one everything, as ``metav1.LabelSelectorAsSelector`` has it."""
    if selector is None:
        return False
    for label, value in _dict(selector.get("matchLabels")).items():
        if labels.get(label) != value:
            return False
    for requirement in _dicts(selector.get("matchExpressions")):
        key = str(requirement.get("key") or "")
        values = requirement.get("values") or []
        operator = requirement.get("operator")
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _empty(selector: Mapping[str, Any]) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")
