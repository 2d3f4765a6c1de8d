"""The pytest plugin is registered through its ``pytest11`` entry point, so a user's
project gets the fixtures by installing the package. Running users' suites with it is in
``tests/e2e/test_plugin.py``.
"""

from __future__ import annotations

from importlib.metadata import entry_points


def test_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("aioinformer") == "aioinformer.testing.plugin"
