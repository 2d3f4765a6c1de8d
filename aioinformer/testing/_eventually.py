"""``eventually``: wait in a test until something the code under test does has happened.

Role: the assertion for asynchronous outcomes (gomega's ``Eventually``, kopf's and
controller-runtime's envtest loops): poll a predicate until it holds, or fail the test
saying what never held and why. Input: a predicate (sync or async, no arguments), how long
to wait and how often to look, and optionally the clock to measure that on. Output: the
predicate's first truthy value, or an ``AssertionError`` (pytest reports it as a failed
assertion) naming the predicate and its last value or the last exception it raised.

What counts as "not yet": a falsy value, and any ``Exception`` the predicate raises. An
``AssertionError`` is the usual one (a predicate may be a block of plain ``assert``
statements); other exceptions count too, as gomega counts a returned error as a failed
match: a lookup that raises ``NotFound`` until the object exists is "not yet", not a
failure. A bug in the predicate (a ``TypeError``) therefore fails only at the timeout, and
the ``AssertionError`` then carries it as its ``__cause__``, traceback and all.
``BaseException``s that are not ``Exception``s (cancellation, ``KeyboardInterrupt``)
propagate at once.

Time: the predicate is checked at once, then every ``interval`` seconds, and once more at
the deadline. On the default clock (anyio's, so this works wherever anyio does: asyncio,
pytest-asyncio, anyio's pytest plugin) a check of an async predicate still running at the
deadline (or ``interval`` seconds after it started, whichever is later) is cancelled and
reported as such. With ``clock=`` (a :class:`~aioinformer.testing.FakeClock`
the code under test runs on) the waits happen on that clock, so the test moves time with
``advance()``; a predicate call is then never interrupted.

Task model: runs in the caller's task and starts none.

:func:`eventually_sync` is the same assertion for sync tests (a plain ``def test_...()``,
where no loop runs to await on, e.g. one driving an app through Starlette's
``TestClient``): a sync predicate, checked in the caller's thread, sleeping in real time
between checks.

Example::

    from aioinformer.testing import eventually

    await eventually(lambda: server.get("configmaps", "default", "web-config"))
    cm = await eventually(lambda: lister.get("web-config"), timeout=10)
    eventually_sync(lambda: http.get("/readyz").status_code == 200)   # in a sync test
"""

from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, Any, Final, TypeVar, overload

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aioinformer._kernel.clock import Clock

__all__ = ["describe", "eventually", "eventually_sync"]

T = TypeVar("T")

_NOTHING: Final[Any] = object()
"""The last value before the predicate returned any."""


@overload
async def eventually(
    predicate: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,
    interval: float = ...,
    clock: Clock | None = ...,
    message: str | None = ...,
) -> T: ...


@overload
async def eventually(
    predicate: Callable[[], T],
    *,
    timeout: float = ...,
    interval: float = ...,
    clock: Clock | None = ...,
    message: str | None = ...,
) -> T: ...


async def eventually(
    predicate: Callable[[], Any],
    *,
    timeout: float = 5.0,
    interval: float = 0.01,
    clock: Clock | None = None,
    message: str | None = None,
) -> Any:
    """Await until ``predicate()`` (sync, or async and awaited) is truthy; return that value.

    Raises ``AssertionError`` once ``timeout`` seconds (on ``clock``, real time by default)
    pass without it, naming ``message`` (default: the predicate's qualified name, or a
    lambda's source line) and the last value it returned or the last exception it raised
    (also chained as the ``__cause__``). ``ValueError`` for a negative ``timeout`` or an
    ``interval`` that is not positive. See the module docstring for what counts as
    "not yet".
    """
    if not timeout >= 0:
        raise ValueError(f"timeout must be 0 or more seconds, not {timeout!r}")
    if not interval > 0:
        raise ValueError(f"interval must be more than 0 seconds, not {interval!r}")
    now = anyio.current_time if clock is None else clock.monotonic
    sleep = anyio.sleep if clock is None else clock.sleep
    deadline = now() + timeout
    attempts = 0
    last_value: Any = _NOTHING
    last_error: BaseException | None = None
    cut_short = False
    while True:
        attempts += 1
        try:
            result = predicate()
            if inspect.isawaitable(result):
                # Only on the default clock: a fake clock's deadline may be far off in real
                # time, and only the test decides when it comes.
                bound = None if clock is not None else max(deadline - now(), interval)
                with anyio.move_on_after(bound) as scope:
                    result = await result
                if scope.cancelled_caught:
                    cut_short = True
                    break
        except Exception as exc:  # noqa: BLE001 - any failure is "not yet", reported at the end
            last_error, last_value = exc, _NOTHING
        else:
            if result:
                return result
            last_error, last_value = None, result
        remaining = deadline - now()
        if remaining <= 0:
            break
        await sleep(min(interval, remaining))
    raise AssertionError(
        _failure(
            message or describe(predicate), timeout, attempts, last_value, last_error, cut_short
        )
    ) from last_error


def eventually_sync(
    predicate: Callable[[], T],
    *,
    timeout: float = 5.0,
    interval: float = 0.01,
    message: str | None = None,
) -> T:
    """Block until ``predicate()`` is truthy; return that value: :func:`eventually` for
    sync tests, in real time (the same "not yet", the same failure).

    ``TypeError`` for a predicate that returns an awaitable (``await eventually(...)``
    awaits one, on a loop); ``ValueError`` as :func:`eventually`.
    """
    if not timeout >= 0:
        raise ValueError(f"timeout must be 0 or more seconds, not {timeout!r}")
    if not interval > 0:
        raise ValueError(f"interval must be more than 0 seconds, not {interval!r}")
    deadline = time.monotonic() + timeout
    attempts = 0
    last_value: Any = _NOTHING
    last_error: BaseException | None = None
    while True:
        attempts += 1
        try:
            result = predicate()
        except Exception as exc:  # noqa: BLE001 - any failure is "not yet", reported at the end
            last_error, last_value = exc, _NOTHING
        else:
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise TypeError(
                    f"{describe(predicate)} returned an awaitable: eventually_sync checks "
                    "sync predicates; await eventually(...) on a loop instead"
                )
            if result:
                return result
            last_error, last_value = None, result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))
    raise AssertionError(
        _failure(message or describe(predicate), timeout, attempts, last_value, last_error, False)
    ) from last_error


def _failure(
    what: str,
    timeout: float,
    attempts: int,
    last_value: Any,
    last_error: BaseException | None,
    cut_short: bool,
) -> str:
    checks = "1 check" if attempts == 1 else f"{attempts} checks"
    lines = [f"not true within {timeout} s ({checks}): {what}"]
    if cut_short:
        lines.append("the last check was still running at the deadline, and was cancelled")
    if last_error is not None:
        lines.append(f"last raised {type(last_error).__name__}: {last_error}".rstrip(": "))
    elif last_value is not _NOTHING:
        lines.append(f"last value: {last_value!r}")
    return "\n  ".join(lines)


def describe(predicate: Callable[..., object]) -> str:
    """How a failure names ``predicate``: a lambda by its source line, a function (or
    method) by its qualified name, anything else by its ``repr``."""
    name = getattr(predicate, "__qualname__", None)
    if not isinstance(name, str):
        return repr(predicate)
    if not name.endswith("<lambda>"):
        return name
    try:
        source = inspect.getsource(predicate)
    except (OSError, TypeError):
        return name
    return " ".join(line.strip() for line in source.strip().splitlines())
