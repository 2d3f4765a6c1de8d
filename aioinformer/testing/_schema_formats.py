"""The string formats a CustomResourceDefinition's schema may name, as kube-apiserver checks them.

Role: the ``format`` half of the fake's custom-resource validation. Input is a schema's
``format`` name; output is the check kube-openapi's ``strfmt`` registry runs on a string
value of that format, or ``None`` for a format kube-apiserver strips from the schema
before validating (apiextensions' ``StripUnsupportedFormatsPostProcess``: every format
outside its supported list, the numeric ``int32``, ``int64``, ``float`` and ``double``
among them, so those check nothing, as on the real server).

The checks follow ``strfmt``'s ``default.go``: ``date`` (``2006-01-02``), ``date-time``
(RFC 3339, with or without the offset and the fraction), ``duration`` (Go's
``time.ParseDuration`` or strfmt's ``3 days``-style units), ``uuid``/``uuid3``/``uuid4``/
``uuid5``, ``email``, ``hostname``, ``ipv4``, ``ipv6``, ``cidr``, ``mac``, ``byte``
(standard base64), ``uri``, ``hexcolor``, ``rgbcolor``, ``bsonobjectid``, ``ssn`` and
``password`` (anything). ``isbn``, ``isbn10``, ``isbn13`` and ``creditcard`` are accepted
unchecked here. ``email`` and ``uri`` are approximations of Go's ``net/mail`` and
``net/url`` parsers: they refuse what those refuse in practice (no ``@``, no scheme),
not every corner case.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["format_check"]

_DATE_RE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?"
)
_GO_DURATION_RE: Final = re.compile(r"[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|[-+]?0")
_STRFMT_UNITS: Final = (
    "nanoseconds?|microseconds?|milliseconds?|seconds?|sec|minutes?|mins?|hours?|hr|"
    "days?|weeks?|wk|ns|us|µs|ms|s|m|h|d|w"
)
_STRFMT_DURATION_RE: Final = re.compile(rf"(\d+)\s*({_STRFMT_UNITS})")
_UUID_RE: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE
)
_UUID_VERSION_RE: Final = {
    version: re.compile(
        rf"[0-9a-f]{{8}}-[0-9a-f]{{4}}-{version}[0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}-[0-9a-f]{{12}}",
        re.IGNORECASE,
    )
    for version in "345"
}
_EMAIL_RE: Final = re.compile(r"[^@\s<>]+@[^@\s<>]+")
_HOSTNAME_RE: Final = re.compile(
    r"[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*"
)
_MAC_RE: Final = re.compile(
    r"([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}|([0-9a-fA-F]{2}[:-]){7}[0-9a-fA-F]{2}|"
    r"([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}|([0-9a-fA-F]{4}\.){3}[0-9a-fA-F]{4}"
)
_URI_RE: Final = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*:|/)\S*")
_HEX_COLOR_RE: Final = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_RGB_COLOR_RE: Final = re.compile(r"rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)")
_BSON_RE: Final = re.compile(r"[0-9a-fA-F]{24}")
_SSN_RE: Final = re.compile(r"\d{3}[- ]?\d{2}[- ]?\d{4}")


def _date(value: str) -> bool:
    if not _DATE_RE.fullmatch(value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _date_time(value: str) -> bool:
    match = _DATE_TIME_RE.fullmatch(value)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _duration(value: str) -> bool:
    if _GO_DURATION_RE.fullmatch(value):
        return True
    parts = _STRFMT_DURATION_RE.findall(value)
    return bool(parts) and not _STRFMT_DURATION_RE.sub("", value).strip()


def _ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return False
        return address.version == version

    return check


def _cidr(value: str) -> bool:
    if "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _rgb(value: str) -> bool:
    match = _RGB_COLOR_RE.fullmatch(value)
    return match is not None and all(int(part) <= 255 for part in match.groups())


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.fullmatch(value) is not None


def _anything(value: str) -> bool:
    return True


_CHECKS: Final[dict[str, Callable[[str], bool]]] = {
    "bsonobjectid": _matches(_BSON_RE),
    "uri": _matches(_URI_RE),
    "email": _matches(_EMAIL_RE),
    "hostname": lambda value: len(value) <= 255 and _HOSTNAME_RE.fullmatch(value) is not None,
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": _matches(_MAC_RE),
    "uuid": _matches(_UUID_RE),
    "uuid3": _matches(_UUID_VERSION_RE["3"]),
    "uuid4": _matches(_UUID_VERSION_RE["4"]),
    "uuid5": _matches(_UUID_VERSION_RE["5"]),
    "isbn": _anything,
    "isbn10": _anything,
    "isbn13": _anything,
    "creditcard": _anything,
    "ssn": _matches(_SSN_RE),
    "hexcolor": _matches(_HEX_COLOR_RE),
    "rgbcolor": _rgb,
    "byte": _byte,
    "password": _anything,
    "date": _date,
    "duration": _duration,
    "datetime": _date_time,
}


def format_check(name: str) -> Callable[[str], bool] | None:
    """The check of format ``name`` (``date-time`` and ``datetime`` alike, as strfmt
    drops the dashes), or ``None`` when kube-apiserver strips the format."""
    return _CHECKS.get(name.replace("-", ""))
