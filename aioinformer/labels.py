"""Label and field selectors: parse the text Kubernetes uses, match objects against it.

Role: the one place that understands selector syntax. Input is selector text as a user
or a request carries it (``"app=web,tier in (fe,be),!legacy"``,
``"metadata.namespace=default"``); output is an immutable selector whose ``matches()``
answers for one object. Listers run it over whole caches and the fake API server over every
LIST and watch event, so matching is a tight loop over pre-parsed requirements: nothing is
re-parsed, nothing allocated per call.

Grammar (as kube-apiserver accepts it):

* label selector: comma-separated requirements, each ``key``, ``!key``, ``key=value``,
  ``key==value``, ``key!=value``, ``key in (v1,v2)``, ``key notin (v1,v2)``, ``key>N``,
  ``key<N``; whitespace between tokens is ignored. ``!=`` and ``notin`` match objects that
  lack the key. The empty selector matches everything.
* field selector: comma-separated terms ``path=value``, ``path==value`` or
  ``path!=value``; ``\\`` escapes ``,``, ``=``, ``!`` and ``\\`` inside values. A path is a
  dotted field path such as ``metadata.name``; a missing field reads as ``""``.

Invalid text raises :class:`aioinformer.errors.SelectorError` naming the bad part, before
any request is sent. ``str(selector)`` gives canonical text (requirements sorted by key,
set values sorted) that parses back to an equal selector.

Example::

    selector = parse_label_selector("app=web,tier in (fe,be)")
    selector.matches({"app": "web", "tier": "fe"})  # True
    parse_field_selector("metadata.name=x").matches(pod)
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from aioinformer.errors import SelectorError

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorOperator",
    "match_labels",
    "parse_field_selector",
    "parse_label_selector",
    "selector_from_set",
]

_NAME_RE: Final = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_INT_RE: Final = re.compile(r"^-?[0-9]+$")
_MAX_NAME: Final = 63
_MAX_PREFIX: Final = 253


class SelectorOperator(enum.StrEnum):
    """How a label requirement compares a label's value."""

    EQUALS = "="
    """The key is present with exactly this value."""
    DOUBLE_EQUALS = "=="
    """Same as ``=``; kept apart so the text round-trips."""
    NOT_EQUALS = "!="
    """The key is absent, or present with another value."""
    IN = "in"
    """The key is present with one of the values."""
    NOT_IN = "notin"
    """The key is absent, or present with none of the values."""
    EXISTS = "exists"
    """The key is present, whatever its value (written as the bare key)."""
    DOES_NOT_EXIST = "!"
    """The key is absent (written ``!key``)."""
    GREATER_THAN = "gt"
    """The key is present and its value, an integer, is greater (written ``key>N``)."""
    LESS_THAN = "lt"
    """The key is present and its value, an integer, is smaller (written ``key<N``)."""


def _validate_key(key: str) -> None:
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > _MAX_PREFIX or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        raise SelectorError(f"invalid label key {key!r}: prefix must be a DNS subdomain")
    if not name or len(name) > _MAX_NAME or not _NAME_RE.match(name):
        raise SelectorError(
            f"invalid label key {key!r}: name must be 63 characters or less, alphanumeric "
            "with '-', '_' or '.' inside"
        )


def _validate_value(key: str, value: str) -> None:
    if value and (len(value) > _MAX_NAME or not _NAME_RE.match(value)):
        raise SelectorError(
            f"invalid label value {value!r} for key {key!r}: must be 63 characters or less, "
            "empty or alphanumeric with '-', '_' or '.' inside"
        )


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One requirement of a label selector.

    Invariant: ``values`` is sorted and duplicate-free; it holds exactly one value for
    ``=``, ``==``, ``!=``, ``gt`` and ``lt``, at least one for ``in``/``notin``, none for
    ``exists``/``!``.
    """

    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement."""
        op = self.operator
        if op is SelectorOperator.EXISTS:
            return self.key in labels
        if op is SelectorOperator.DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if op is SelectorOperator.EQUALS or op is SelectorOperator.DOUBLE_EQUALS:
            return value == self.values[0]
        if op is SelectorOperator.NOT_EQUALS:
            return value != self.values[0]
        if op is SelectorOperator.IN:
            return value is not None and value in self.values
        if op is SelectorOperator.NOT_IN:
            return value is None or value not in self.values
        if value is None or not _INT_RE.match(value):
            return False
        bound = int(self.values[0])
        return int(value) > bound if op is SelectorOperator.GREATER_THAN else int(value) < bound

    def __str__(self) -> str:
        op = self.operator
        if op is SelectorOperator.EXISTS:
            return self.key
        if op is SelectorOperator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op is SelectorOperator.IN or op is SelectorOperator.NOT_IN:
            return f"{self.key} {op.value} ({','.join(self.values)})"
        if op is SelectorOperator.GREATER_THAN:
            return f"{self.key}>{self.values[0]}"
        if op is SelectorOperator.LESS_THAN:
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{op.value}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector: all of ``requirements`` must hold.

    Invariant: ``requirements`` is sorted by key (stable for equal keys), as
    kube-apiserver orders them, so equal selectors compare and print equal.
    """

    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these ``labels`` (``None`` = no labels) is selected."""
        if labels is None:
            labels = _NO_LABELS
        return all(requirement.matches(labels) for requirement in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Whether a raw object (its ``metadata.labels``) is selected."""
        meta = obj.get("metadata")
        return self.matches(meta.get("labels") if isinstance(meta, Mapping) else None)

    def is_empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


_NO_LABELS: Final[Mapping[str, str]] = {}

# Lexer for label selectors: the operators and punctuation, or a run of anything else.
_TOKEN_RE: Final = re.compile(r"\s*(!=|==|=|!|\(|\)|,|<|>|[^\s!=(),<>]+)")
_COMPARISON_TOKENS: Final = frozenset({"=", "==", "!=", "<", ">"})
"""Operators followed by a single value."""
_NOT_A_VALUE: Final = _COMPARISON_TOKENS | {"in", "notin", "(", ")", ",", "!"}
"""Tokens that can be neither a key nor a value after ``=``, ``==`` or ``!=``."""


def parse_label_selector(text: str) -> LabelSelector:
    """Parse label selector text; raise :class:`SelectorError` naming the bad part."""
    tokens = _tokenize(text)
    requirements: list[LabelRequirement] = []
    pos = 0
    count = len(tokens)
    while pos < count:
        negated = tokens[pos] == "!"
        if negated:
            pos += 1
        if pos >= count or tokens[pos] in _NOT_A_VALUE:
            found = tokens[pos] if pos < count else "end of selector"
            raise SelectorError(f"invalid label selector {text!r}: expected a key, found {found!r}")
        key = tokens[pos]
        _validate_key(key)
        pos += 1
        if negated or pos >= count or tokens[pos] == ",":
            operator = SelectorOperator.DOES_NOT_EXIST if negated else SelectorOperator.EXISTS
            requirements.append(LabelRequirement(key, operator))
        else:
            op_token = tokens[pos]
            pos += 1
            if op_token in {"in", "notin"}:
                values, pos = _parse_set(text, tokens, pos, key)
                operator = SelectorOperator.IN if op_token == "in" else SelectorOperator.NOT_IN
                requirements.append(LabelRequirement(key, operator, values))
            elif op_token in _COMPARISON_TOKENS:
                value = ""
                if pos < count and tokens[pos] not in _NOT_A_VALUE:
                    value = tokens[pos]
                    pos += 1
                if op_token in {"<", ">"}:
                    if not _INT_RE.match(value):
                        raise SelectorError(
                            f"invalid label selector {text!r}: {key}{op_token} needs an integer,"
                            f" found {value!r}"
                        )
                    operator = (
                        SelectorOperator.GREATER_THAN
                        if op_token == ">"
                        else SelectorOperator.LESS_THAN
                    )
                else:
                    _validate_value(key, value)
                    operator = SelectorOperator(op_token)
                requirements.append(LabelRequirement(key, operator, (value,)))
            else:
                raise SelectorError(
                    f"invalid label selector {text!r}: expected an operator after {key!r}, "
                    f"found {op_token!r}"
                )
        if pos < count:
            if tokens[pos] != ",":
                raise SelectorError(
                    f"invalid label selector {text!r}: expected ',' found {tokens[pos]!r}"
                )
            pos += 1
            if pos >= count:
                raise SelectorError(f"invalid label selector {text!r}: trailing ','")
    requirements.sort(key=lambda requirement: requirement.key)
    return LabelSelector(tuple(requirements))


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        match = _TOKEN_RE.match(text, pos)
        if match is None:  # pragma: no cover - the last alternative matches any non-space
            raise SelectorError(f"invalid label selector {text!r} at offset {pos}")
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def _parse_set(text: str, tokens: list[str], pos: int, key: str) -> tuple[tuple[str, ...], int]:
    count = len(tokens)
    if pos >= count or tokens[pos] != "(":
        raise SelectorError(f"invalid label selector {text!r}: expected '(' after {key!r} in")
    pos += 1
    values: set[str] = set()
    expect_value = True
    while True:
        if pos >= count:
            raise SelectorError(f"invalid label selector {text!r}: unclosed '(' for {key!r}")
        token = tokens[pos]
        pos += 1
        if token == ")":
            if expect_value and values:
                values.add("")
            break
        if token == ",":
            if expect_value:
                values.add("")
            expect_value = True
            continue
        if not expect_value or token in {"(", "!"} or token in _COMPARISON_TOKENS:
            raise SelectorError(
                f"invalid label selector {text!r}: unexpected {token!r} in the values of {key!r}"
            )
        _validate_value(key, token)
        values.add(token)
        expect_value = False
    if not values:
        raise SelectorError(f"invalid label selector {text!r}: empty value set for {key!r}")
    return tuple(sorted(values)), pos


def selector_from_set(labels: Mapping[str, str]) -> LabelSelector:
    """The selector requiring every ``key=value`` of ``labels`` (validated)."""
    requirements = []
    for key, value in labels.items():
        _validate_key(key)
        _validate_value(key, value)
        requirements.append(LabelRequirement(key, SelectorOperator.EQUALS, (value,)))
    requirements.sort(key=lambda requirement: requirement.key)
    return LabelSelector(tuple(requirements))


def match_labels(selector: LabelSelector | str, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy ``selector`` (text is parsed first)."""
    if isinstance(selector, str):
        selector = parse_label_selector(selector)
    return selector.matches(labels)


# ---------------------------------------------------------------------------------------
# Field selectors


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``path op value`` term of a field selector.

    Invariant: ``operator`` is ``=``, ``==`` or ``!=``; ``path`` is ``field`` split on dots.
    """

    field: str
    operator: SelectorOperator
    value: str
    path: tuple[str, ...]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the object's field compares as required (missing reads as ``""``)."""
        equal = _field_value(obj, self.path) == self.value
        return not equal if self.operator is SelectorOperator.NOT_EQUALS else equal

    def __str__(self) -> str:
        return f"{self.field}{self.operator.value}{_escape(self.value)}"


def _field_value(obj: Mapping[str, Any], path: tuple[str, ...]) -> str:
    current: Any = obj
    for part in path:
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
        if current is None:
            return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    if isinstance(current, str):
        return current
    if isinstance(current, int | float):
        return str(current)
    return ""


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A parsed field selector: all of ``requirements`` must hold.

    Invariant: ``requirements`` is sorted by field path (stable for equal paths).
    """

    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the raw object ``obj`` is selected."""
        return all(requirement.matches(obj) for requirement in self.requirements)

    def fields(self) -> frozenset[str]:
        """The field paths this selector reads (a server checks it supports them)."""
        return frozenset(requirement.field for requirement in self.requirements)

    def is_empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


_FIELD_PATH_RE: Final = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-/]+)*$")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=").replace("!", "\\!")


def _split_terms(text: str) -> Iterable[str]:
    term: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            term.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            yield "".join(term)
            term = []
        else:
            term.append(char)
    if escaped:
        raise SelectorError(f"invalid field selector {text!r}: dangling '\\' at the end")
    yield "".join(term)


def _parse_field_term(text: str, term: str) -> FieldRequirement:
    # Find the first unescaped operator.
    i = 0
    size = len(term)
    while i < size:
        char = term[i]
        if char == "\\":
            i += 2
            continue
        if char in "!=":
            if term.startswith("!=", i):
                operator, width = SelectorOperator.NOT_EQUALS, 2
            elif term.startswith("==", i):
                operator, width = SelectorOperator.DOUBLE_EQUALS, 2
            elif char == "=":
                operator, width = SelectorOperator.EQUALS, 1
            else:
                raise SelectorError(f"invalid field selector {text!r}: stray '!' in {term!r}")
            field = term[:i].strip()
            if not field or not _FIELD_PATH_RE.match(field):
                raise SelectorError(
                    f"invalid field selector {text!r}: bad field path {field!r} in {term!r}"
                )
            raw_value = term[i + width :]
            value = _unescape(text, raw_value)
            return FieldRequirement(field, operator, value, tuple(field.split(".")))
        i += 1
    raise SelectorError(f"invalid field selector {text!r}: {term!r} has no operator")


def _unescape(text: str, raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\":
            nxt = raw[i + 1] if i + 1 < len(raw) else ""
            if nxt not in {"\\", ",", "=", "!"}:
                raise SelectorError(f"invalid field selector {text!r}: bad escape '\\{nxt}'")
            out.append(nxt)
            i += 2
            continue
        if char == "=" or (char == "!" and raw.startswith("!=", i)):
            raise SelectorError(
                f"invalid field selector {text!r}: unescaped {char!r} in value {raw!r}"
            )
        out.append(char)
        i += 1
    return "".join(out)


def parse_field_selector(text: str) -> FieldSelector:
    """Parse field selector text; raise :class:`SelectorError` naming the bad part."""
    if not text.strip():
        return FieldSelector()
    # Empty terms ("a=b,") are skipped, as kube-apiserver does.
    requirements = [_parse_field_term(text, term) for term in _split_terms(text) if term]
    requirements.sort(key=lambda requirement: requirement.field)
    return FieldSelector(tuple(requirements))
