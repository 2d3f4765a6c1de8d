"""Converters as a conversion calls them: one awaitable step, whatever the user wrote.

Role: a spoke's converter to or from the hub is a function on dicts, sync or async
(``Conversion.to_hub``/``from_hub``), or a model's ``to_hub`` method or ``from_hub``
classmethod (``Conversion.from_models``). Each becomes a :class:`Step`, built once when
it is registered: :func:`awaiting` decides sync or async there, :func:`model_step` wraps a
model's method in validation of its input and a dump of its result. :func:`run_step`
calls one step on an object and holds the result to what the next step or the answer
needs (an object, the step's ``apiVersion``, the same ``kind``), raising
:class:`~aioinformer.operator._conversion_review.ReviewFailure` with the step named
otherwise.

Task model: :func:`run_step` awaits the step; a sync converter runs on the event loop.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from aioinformer.operator._conversion_review import ReviewFailure

__all__ = ["Step", "awaiting", "model_step", "qualname", "run_step"]


@dataclass(frozen=True, slots=True)
class Step:
    """One converter, to the hub or from it, as ``review`` calls it."""

    label: str
    """How messages name it: ``to_hub('v1beta1') (module.function)``."""
    run: Callable[[dict[str, Any]], Awaitable[Any]]
    """The converter, awaited whether it was written sync or async."""


def _is_async(function: Callable[..., Any]) -> bool:
    # An instance of a class with an ``async def __call__`` is a coroutine function too.
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__
    )


def awaiting(function: Callable[..., Any]) -> Callable[[Any], Awaitable[Any]]:
    """``function`` as a coroutine function, decided now rather than per call."""
    if _is_async(function):
        return function

    async def run(argument: Any) -> Any:
        return function(argument)

    return run


def qualname(function: Callable[..., Any]) -> str:
    """``module.name`` of a converter, for messages."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}.{name}" if module else name


def _summary(error: ValidationError) -> str:
    problems = error.errors()
    shown = "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'the object'}: {e['msg']}"
        for e in problems[:3]
    )
    more = len(problems) - 3
    return f"{shown}; and {more} more" if more > 0 else shown


async def run_step(step: Step, obj: dict[str, Any], api_version: str, ref: str) -> dict[str, Any]:
    """``step``'s result for ``obj``, with ``apiVersion`` set to ``api_version`` and
    ``kind`` kept; a converter's error or a result that is not an object is a Failure."""
    came_as, kind = obj.get("apiVersion"), obj.get("kind")
    try:
        result = await step.run(obj)
    except ReviewFailure as failure:
        raise ReviewFailure(f"{ref}: {step.label}: {failure}", failure.cause) from None
    except Exception as exc:  # noqa: BLE001 - a converter's bug becomes the answer's message
        raise ReviewFailure(
            f"{ref}: {step.label} raised {type(exc).__name__}: {exc}", exc
        ) from None
    if inspect.iscoroutine(result):
        result.close()
        raise ReviewFailure(f"{ref}: {step.label} returned a coroutine: declare it with async def")
    if not isinstance(result, Mapping):
        raise ReviewFailure(
            f"{ref}: {step.label} returned a {type(result).__name__}, not an object (a dict)"
        )
    converted = dict(result)
    answered = converted.get("apiVersion")
    if answered not in (None, came_as, api_version):
        raise ReviewFailure(
            f"{ref}: {step.label} answered apiVersion {answered!r}, not {api_version!r}"
        )
    converted.pop("apiVersion", None)
    return {"apiVersion": api_version, "kind": converted.pop("kind", kind), **converted}


def model_step(
    label: str,
    source: type[BaseModel],
    target: type[BaseModel],
    method: Callable[[Any], Any],
) -> Step:
    """The step calling ``method`` (a spoke's ``to_hub`` or ``from_hub``) on the request's
    object validated as ``source``, whose result must be a ``target``."""
    convert = awaiting(method)

    async def run(obj: dict[str, Any]) -> dict[str, Any]:
        try:
            value = source.model_validate(obj)
        except ValidationError as error:
            raise ReviewFailure(f"not a valid {source.__name__}: {_summary(error)}") from None
        result = await convert(value)
        if not isinstance(result, target):
            raise ReviewFailure(f"returned a {type(result).__name__}, not a {target.__name__}")
        return result.model_dump(mode="json", by_alias=True, exclude_unset=True)

    return Step(label, run)
