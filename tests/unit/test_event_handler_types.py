"""``EventHandler`` means what its docstring says: a handler object may leave out the
methods it does not need, both for ``mypy --strict`` and at run time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from aioinformer.informer import EventHandler, SharedIndexInformer
from aioinformer.testing.lister_watcher import FakeListerWatcher

REPO = Path(__file__).resolve().parents[2]

# Checked by mypy --strict below. Each accepted shape must type-check; the one marked
# "rejected" must be the only error.
TYPED_USE = """
from __future__ import annotations

from typing import Any

from aioinformer.informer import EventHandler, SharedIndexInformer


class OnlyAdds:
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...


class OnlyDeletesAsync:
    async def on_delete(self, obj: Any) -> None: ...


class Everything:
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...
    async def on_update(self, old: Any, new: Any) -> None: ...
    def on_delete(self, obj: Any) -> None: ...


class NoCallbacks:
    pass


def register(informer: SharedIndexInformer) -> None:
    handlers: list[EventHandler] = [OnlyAdds(), OnlyDeletesAsync(), Everything()]
    for handler in handlers:
        informer.add_event_handler(handler)
    informer.add_event_handler(OnlyAdds(), on_delete=lambda obj: None)
    informer.add_event_handler(NoCallbacks())  # rejected
"""


@pytest.mark.slow
def test_mypy_accepts_a_handler_with_only_some_methods(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    source = tmp_path / "typed_use.py"
    source.write_text(TYPED_USE)
    rejected_line = TYPED_USE.splitlines().index(
        "    informer.add_event_handler(NoCallbacks())  # rejected"
    )
    # The project's cache makes this quick once mypy has checked the package.
    stdout, _, status = api.run(["--strict", "--cache-dir", str(REPO / ".mypy_cache"), str(source)])
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 1, stdout
    assert len(errors) == 1, stdout
    # Matched without the directory: mypy's cache may replay a message that names the
    # temporary directory of an earlier run of this same module.
    assert f"typed_use.py:{rejected_line + 1}: error:" in errors[0], stdout
    assert '"NoCallbacks"' in errors[0], stdout


class OnlyAdds:
    def __init__(self) -> None:
        self.added: list[str] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.added.append(obj["metadata"]["name"])


def test_a_partial_handler_is_an_event_handler_at_run_time() -> None:
    assert isinstance(OnlyAdds(), EventHandler)
    assert not isinstance(object(), EventHandler)


async def test_a_handler_with_only_on_add_receives_adds_and_skips_the_rest() -> None:
    source = FakeListerWatcher()
    source.add({"metadata": {"name": "a", "namespace": "ns"}})
    informer = SharedIndexInformer(source)
    handler = OnlyAdds()
    registration = informer.add_event_handler(handler)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.add({"metadata": {"name": "b", "namespace": "ns"}})
        source.delete("ns/a")
        for _ in range(1000):
            if registration.statistics().delivered == 3:
                break
            await asyncio.sleep(0)
    assert handler.added == ["a", "b"]
    assert registration.statistics().failed == 0
