"""A fake API server served from a thread of its own, for code that is not async.

Role: a :class:`~aioinformer.testing.apiserver.FakeAPIServer` answers only while its
event loop runs. A plain ``def test_...()`` runs no loop, and an app driven by
Starlette's ``TestClient`` runs on a loop of the client's own thread, while the test
that holds the server blocks in its calls; served on either of those, the fake never
answers. :class:`ThreadedFakeAPIServer` starts one on a background thread with an
event loop of its own, so it answers whoever calls, from any thread and any loop. Input:
the server's options and calls from any thread. Output: the server's address and
kubeconfig, and its test-facing API as blocking methods of the same names.

Ordering: every call is handed to the server's loop and returns once it ran there, so
a ``create()`` has reached every open watch, as on the server itself, before the next
line of the test runs. The server's state is never touched from another thread: a write
fans out to the watches' buffers and wakes their handlers through asyncio primitives,
which belong to the loop's thread.

Task model: one daemon thread per server, running an event loop (``asyncio.Runner``)
that serves the server until :meth:`ThreadedFakeAPIServer.close`. A call from another
thread waits at most ``call_timeout`` seconds for the loop (it answers at once unless
something on it blocks); a call from the server's own thread runs in place.
``close()`` ends every watch and closes the socket, then the loop (what is left on it
is cancelled, async generators and the default executor are shut down), then joins the
thread: nothing is left running.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import threading
from typing import TYPE_CHECKING, Any, Final, ParamSpec, Self, TypeVar, overload

from aioinformer._kernel.lifecycle import State
from aioinformer.testing.apiserver import ADMIN_TOKEN, FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
    from types import TracebackType

    from pydantic import BaseModel

    from aioinformer._apiserver.objects import ResourceType
    from aioinformer.client import Client
    from aioinformer.testing._faults import FaultRecord, Faults
    from aioinformer.testing._routes import RequestRecord, Rule

__all__ = ["ThreadedFakeAPIServer", "ThreadedFaults"]

P = ParamSpec("P")
T = TypeVar("T")

CALL_TIMEOUT: Final = 30.0
"""Seconds a call waits for the server's loop by default: a bound on a blocked loop only."""

_JOIN_TIMEOUT: Final = 30.0
"""Seconds :meth:`ThreadedFakeAPIServer.close` waits for the thread to end."""


class ThreadedFakeAPIServer:
    """A :class:`FakeAPIServer` served from a thread of its own (see the module notes).

    Use it where no event loop of yours can serve the fake: a sync test, an app driven
    by Starlette's ``TestClient``, a program that is not async::

        with ThreadedFakeAPIServer(require_namespaces=False) as fake:
            fake.create(pod)                 # blocking; watches have it on return
            fake.url                         # "http://127.0.0.1:PORT"
            fake.kubeconfig_path()           # a kubeconfig for it (removed on exit)
            app = create_app(fake.client)    # a Client, made on the app's loop

    The methods are the server's own, blocking: ``create``, ``update``, ``patch``,
    ``delete``, ``get``, ``objects``, ``create_namespace``, ``register_crd``,
    ``compact``, ``add_token``, ``remove_token``, ``restart``, ``wait_for_watchers``,
    and :attr:`faults` (a :class:`ThreadedFaults`). They raise what the server raises;
    ``create`` of a CustomResourceDefinition serves its resource, ``delete`` of it
    removes the resource, as on :class:`FakeAPIServer`.
    Anything else runs on the server's loop through :meth:`call` (a function, awaited
    there when it returns an awaitable), e.g. ``fake.call(setattr, fake.server,
    "watch_list", "forbidden")``. :meth:`client` gives an
    :class:`aioinformer.client.Client` that is bound to no loop until it is entered: it
    belongs to the code that enters it.

    Lifecycle: ``with`` (or :meth:`start` and :meth:`close`); it runs once. Options are
    :class:`FakeAPIServer`'s, checked at construction; ``call_timeout`` bounds each call
    (30 s), so a loop blocked by a callback of yours fails the call with
    ``TimeoutError`` instead of hanging it.
    """

    def __init__(self, *, call_timeout: float = CALL_TIMEOUT, **options: Any) -> None:
        self.call_timeout = call_timeout
        # Built here so that a wrong option raises in the caller's thread, at once.
        self._server = FakeAPIServer(**options)
        self.faults = ThreadedFaults(self)
        # Set by the thread: the loop once it runs, ``_started`` once the server answers
        # (or failed to start), ``_finished`` once the server is closed and the loop done.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._finished: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread: threading.Thread | None = None
        # NEW until start(), STARTING until the server answers, RUNNING until close()
        # (or a failed start), STOPPING while it closes, STOPPED once the thread ended.
        self._state = State.NEW
        self._left_running: list[asyncio.Task[Any]] = []

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread and the server on it; return once requests are answered.
        Raises what made the start fail, with the thread ended; runs once
        (``RuntimeError`` after)."""
        if self._state is not State.NEW:
            raise RuntimeError("a ThreadedFakeAPIServer runs once")
        self._state = State.STARTING
        self._thread = threading.Thread(
            target=self._main, name="aioinformer fake API server", daemon=True
        )
        self._thread.start()
        try:
            self._started.result(timeout=self.call_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise TimeoutError(
                f"the fake API server did not start within {self.call_timeout} s"
            ) from None
        except BaseException:
            self._state = State.STOPPING
            self._thread.join(_JOIN_TIMEOUT)
            self._state = State.STOPPED
            raise
        self._state = State.RUNNING
        self._thread.name = f"aioinformer fake API server {self.url}"

    def close(self) -> None:
        """Stop the server (every watch ends, the socket closes), then its loop, and join
        the thread; return once done. Idempotent. Raises what made closing fail."""
        thread = self._thread
        if thread is None or self._state in (State.STOPPING, State.STOPPED):
            self._state = State.STOPPED if thread is None else self._state
            return
        self._state = State.STOPPING
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            # The loop may have ended meanwhile: then there is nothing left to stop.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        thread.join(_JOIN_TIMEOUT)
        if thread.is_alive():
            raise TimeoutError(
                f"the fake API server's thread did not end within {_JOIN_TIMEOUT} s: "
                "something on its loop blocks"
            )
        self._state = State.STOPPED
        self._finished.result(timeout=0)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _main(self) -> None:
        # The thread's body: serve until close(), then hand the outcome to the thread
        # that waits for it (a start that failed is handed to start() instead).
        try:
            with asyncio.Runner() as runner:
                runner.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that waits
            if self._started.done():
                self._finished.set_exception(exc)
            else:
                self._started.set_exception(exc)
                self._finished.set_result(None)
        else:
            self._finished.set_result(None)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        await self._server.start()
        self._started.set_result(None)
        try:
            await self._stop.wait()
        finally:
            await self._server.close()
            # What the server left running (none, as its close() promises): the Runner
            # cancels them, and the tests read them here.
            current = asyncio.current_task()
            self._left_running = [t for t in asyncio.all_tasks() if t is not current]

    @property
    def state(self) -> State:
        """Where it is in its one run (``RUNNING``: requests are answered)."""
        return self._state

    def __repr__(self) -> str:
        return f"<ThreadedFakeAPIServer {self.url} {self._state.name}>"

    # -- calls on the server's loop -----------------------------------------------------

    @property
    def server(self) -> FakeAPIServer:
        """The server itself: touch it only on its own loop (through :meth:`call`)."""
        return self._server

    @overload
    def call(
        self, function: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...

    @overload
    def call(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...

    def call(self, function: Callable[P, Any], /, *args: P.args, **kwargs: P.kwargs) -> Any:
        """``function(*args, **kwargs)`` called on the server's loop, awaited there when
        it returns an awaitable (as anyio's ``BlockingPortal.call``); its result, or what
        it raised. On the server's own thread a plain function runs in place and an
        awaitable raises ``RuntimeError`` (it would block the loop: await it there)."""
        return self._call(functools.partial(function, *args, **kwargs), 0.0)

    def _call(self, function: Callable[[], Any], bound: float) -> Any:
        """Run ``function`` as :meth:`call` does, waiting ``bound`` seconds past the call
        timeout (the call's own timeout, when it has one)."""
        name = _name_of(function)
        if threading.current_thread() is self._thread:
            result = function()
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise RuntimeError(
                    f"{name} was called on the fake API server's own thread, whose loop "
                    "it would block: await it there (on fake.server)"
                )
            return result

        async def on_the_loop() -> Any:
            result = function()
            if inspect.isawaitable(result):
                result = await result
            return result

        return self._wait(on_the_loop(), self.call_timeout + bound, name)

    def _wait(self, coro: Coroutine[Any, Any, Any], timeout: float, name: str) -> Any:
        loop = self._loop
        if loop is None or self._state is not State.RUNNING:
            coro.close()
            raise RuntimeError(f"{name}: the threaded fake API server is not serving")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(
                f"the fake API server's loop did not run {name} within {timeout} s: "
                "something on it blocks"
            ) from None

    # -- the server's API, blocking -----------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1 (stable across restarts)."""
        return self._server.port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, or ``https://127.0.0.1:PORT`` with ``tls=True``."""
        return self._server.url

    @property
    def ca_pem(self) -> bytes | None:
        """The PEM certificate of the CA that issued the server's certificate (``tls=True``;
        ``None`` over plain HTTP)."""
        return self._server.ca_pem

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion."""
        return self.call(lambda: self._server.resource_version)

    @property
    def watch_count(self) -> int:
        """How many watch streams are open now."""
        return self.call(lambda: self._server.watch_count)

    @property
    def request_log(self) -> list[RequestRecord]:
        """A copy of every request served so far (a snapshot: read it again for more)."""
        return self.call(lambda: list(self._server.request_log))

    @property
    def require_namespaces(self) -> bool:
        """Whether a create in a namespace that does not exist is refused (404)."""
        return self.call(lambda: self._server.require_namespaces)

    @require_namespaces.setter
    def require_namespaces(self, value: bool) -> None:
        self.call(setattr, self._server, "require_namespaces", value)

    @property
    def conversion_timeout(self) -> float:
        """Seconds a conversion webhook call may take."""
        return self.call(lambda: self._server.conversion_timeout)

    @conversion_timeout.setter
    def conversion_timeout(self, seconds: float) -> None:
        self.call(setattr, self._server, "conversion_timeout", seconds)

    @property
    def validate_specs(self) -> bool:
        """Whether writes with an invalid spec or ConfigMap/Secret key are refused (422)."""
        return self.call(lambda: self._server.validate_specs)

    @validate_specs.setter
    def validate_specs(self, value: bool) -> None:
        self.call(setattr, self._server, "validate_specs", value)

    def client(self, *, token: str = ADMIN_TOKEN) -> Client:
        """An :class:`aioinformer.client.Client` for this server (``async with`` it on
        the loop that uses it: it is bound to none before)."""
        return self._server.client(token=token)

    def kubeconfig_path(
        self, *, token: str = ADMIN_TOKEN, namespace: str = "default", path: str | None = None
    ) -> str:
        """Write a kubeconfig pointing at this server (with its CA under ``tls=True``), to
        ``path`` or a new temporary file; the file is removed on close."""
        return self.call(self._server.kubeconfig_path, token=token, namespace=namespace, path=path)

    def register_crd(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        *,
        namespaced: bool = True,
        status_subresource: bool = True,
        scale_subresource: bool = False,
        singular: str | None = None,
        short_names: Iterable[str] = (),
    ) -> None:
        """Serve a custom resource from now on (see :meth:`FakeAPIServer.register_crd`)."""
        self.call(
            self._server.register_crd,
            group,
            version,
            plural,
            kind,
            namespaced=namespaced,
            status_subresource=status_subresource,
            scale_subresource=scale_subresource,
            singular=singular,
            short_names=tuple(short_names),
        )

    def resolve(self, resource: str) -> ResourceType:
        """The resource named ``pods``, ``deployments.apps`` or ``apps/v1/deployments``."""
        return self.call(self._server.resolve, resource)

    def create(self, obj: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
        """Store a new object as a POST would; the stored copy
        (:meth:`FakeAPIServer.create`)."""
        return self.call(self._server.create, obj)

    def create_namespace(
        self, name: str, *, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Make sure namespace ``name`` exists; return it (idempotent)."""
        return self.call(self._server.create_namespace, name, labels=labels)

    def update(
        self, obj: Mapping[str, Any] | BaseModel, *, subresource: str | None = None
    ) -> dict[str, Any]:
        """Replace an object as a PUT would (:meth:`FakeAPIServer.update`)."""
        return self.call(self._server.update, obj, subresource=subresource)

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Apply a ``merge``, ``strategic`` or ``json`` patch; the new object
        (:meth:`FakeAPIServer.patch`)."""
        return self.call(
            self._server.patch,
            resource,
            namespace,
            name,
            patch,
            patch_type=patch_type,
            subresource=subresource,
        )

    def delete(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Delete an object (mark it, if it has finalizers); its last state."""
        return self.call(self._server.delete, resource, namespace, name)

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """A copy of one object; :class:`aioinformer.errors.NotFound` when absent."""
        return self.call(self._server.get, resource, namespace, name)

    def objects(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of every object of ``resource`` (in ``namespace``), sorted by key."""
        return self.call(self._server.objects, resource, namespace)

    def compact(self) -> None:
        """Forget all history: watches and exact reads at older versions answer 410."""
        self.call(self._server.compact)

    def add_token(
        self, token: str, *, user: str | None = None, rules: Iterable[Rule] | None = None
    ) -> None:
        """Accept ``token`` for ``user``, limited to ``rules`` (``None``: everything)."""
        frozen = None if rules is None else tuple(rules)
        self.call(self._server.add_token, token, user=user, rules=frozen)

    def remove_token(self, token: str) -> None:
        """Stop accepting ``token``."""
        self.call(self._server.remove_token, token)

    def restart(self, *, reset_history: bool = True) -> None:
        """Drop every connection and watch, then listen again (blocking; see
        :meth:`FakeAPIServer.restart`)."""
        self.call(self._server.restart, reset_history=reset_history)

    def wait_for_watchers(
        self, count: int = 1, *, resource: str | None = None, timeout: float = 5.0
    ) -> None:
        """Block (in real time, bounded by ``timeout``) until ``count`` watches are open
        (on ``resource``); ``TimeoutError`` after."""
        wait = functools.partial(
            self._server.wait_for_watchers, count, resource=resource, timeout=timeout
        )
        self._call(wait, timeout)


def _name_of(function: Callable[[], Any]) -> str:
    """What a call is named in errors: the function a ``partial`` wraps, by its name."""
    inner = function.func if isinstance(function, functools.partial) else function
    return getattr(inner, "__qualname__", None) or repr(inner)


class ThreadedFaults:
    """:class:`~aioinformer.testing.apiserver.Faults` of a :class:`ThreadedFakeAPIServer`,
    each a blocking call on the server's loop (the same names, arguments and effects)."""

    def __init__(self, owner: ThreadedFakeAPIServer) -> None:
        self._owner = owner

    @property
    def _faults(self) -> Faults:
        return self._owner.server.faults

    @property
    def log(self) -> list[FaultRecord]:
        """A copy of every fault that took effect so far."""
        return self._owner.call(lambda: list(self._faults.log))

    def drop_watch_after(
        self, n: int, *, resource: str | None = None, abrupt: bool = False
    ) -> None:
        """End the next watch after ``n`` lines (``abrupt``: without ending the body)."""
        self._owner.call(self._faults.drop_watch_after, n, resource=resource, abrupt=abrupt)

    def close_mid_line(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, send half a line and close the connection."""
        self._owner.call(self._faults.close_mid_line, after, resource=resource)

    def garbage_line(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, send a line that is not JSON, then carry on."""
        self._owner.call(self._faults.garbage_line, after, resource=resource)

    def stall_watch(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, keep the stream open but send nothing more."""
        self._owner.call(self._faults.stall_watch, after, resource=resource)

    def freeze_watches(self, *, resource: str | None = None) -> int:
        """Silence every watch open now, as a dead network path does; how many."""
        return self._owner.call(self._faults.freeze_watches, resource=resource)

    def drop_watch_events(
        self,
        count: int = 1,
        *,
        resource: str | None = None,
        types: Iterable[str] = ("DELETED",),
    ) -> None:
        """Lose the events of the next ``count`` writes of ``types`` from every watch."""
        self._owner.call(
            self._faults.drop_watch_events, count, resource=resource, types=tuple(types)
        )

    def fail_next(
        self,
        k: int = 1,
        *,
        status: int = 429,
        retry_after: float | None = 1,
        resource: str | None = None,
        verb: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Answer the next ``k`` matching requests with ``status``."""
        self._owner.call(
            self._faults.fail_next,
            k,
            status=status,
            retry_after=retry_after,
            resource=resource,
            verb=verb,
            reason=reason,
        )

    def delay_watch_events(self, seconds: float, *, resource: str | None = None) -> None:
        """Hold back every watch event for ``seconds`` on the server's clock; 0 removes it."""
        self._owner.call(self._faults.delay_watch_events, seconds, resource=resource)

    def latency(self, seconds: float) -> None:
        """Delay every request by ``seconds`` on the server's clock; 0 removes it."""
        self._owner.call(self._faults.latency, seconds)

    def refuse_connections(self, seconds: float | None = None) -> None:
        """Stop listening and drop open connections (for ``seconds``, or until
        :meth:`accept_connections`)."""
        self._owner.call(self._faults.refuse_connections, seconds)

    def accept_connections(self) -> None:
        """Listen again after :meth:`refuse_connections`."""
        self._owner.call(self._faults.accept_connections)

    def clear(self) -> None:
        """Disarm every pending fault and remove latency (the log is kept)."""
        self._owner.call(self._faults.clear)

    def count(self, kind: str) -> int:
        """How many faults of ``kind`` took effect so far."""
        return self._owner.call(self._faults.count, kind)

    def wait_for(self, kind: str, count: int = 1, *, timeout: float = 5.0) -> None:
        """Block (in real time, bounded) until ``count`` faults of ``kind`` took effect."""
        wait = functools.partial(self._faults.wait_for, kind, count, timeout=timeout)
        self._owner._call(wait, timeout)
