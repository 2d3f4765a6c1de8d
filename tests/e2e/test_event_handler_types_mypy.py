"""``EventHandler`` means what its docstring says for ``mypy --strict``: a handler object
may leave out the methods it does not need, and one with none of them is refused.

A whole mypy run, even from the project's warm cache, takes seconds: it lives here rather
than beside the run-time half in ``tests/unit/test_event_handler_types.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
