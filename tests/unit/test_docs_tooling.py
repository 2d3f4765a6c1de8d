"""The site's build hooks: the CLI reference written from the parser, and the docstrings'
reStructuredText rendered as Markdown."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import griffe
import pytest
from mkdocs.exceptions import PluginError

from tests._support_docs_hooks import load_hook

if TYPE_CHECKING:
    from pathlib import Path

cli_reference = load_hook("cli_reference")
griffe_rst = load_hook("griffe_rst")
exports = load_hook("exports")

EVERY_COMMAND = "\n".join(
    f"<!-- cli-reference: {name} -->" for name in ("demo", "watch", "get", "proxy", "webhook")
)


def test_each_marker_becomes_the_commands_own_help() -> None:
    page = cli_reference.render("<!-- cli-reference -->\n" + EVERY_COMMAND)
    assert "<!-- cli-reference" not in page
    assert page.count("```text\nusage: aioinformer") == 6
    assert "usage: aioinformer proxy [-h] --resource R" in page
    assert "--chunk-size N" in page


def test_a_command_left_out_of_the_reference_fails_the_build() -> None:
    with pytest.raises(PluginError, match=r"leaves out aioinformer \['proxy'\]"):
        cli_reference.render(EVERY_COMMAND.replace("<!-- cli-reference: proxy -->", ""))


def test_a_marker_naming_no_command_fails_the_build() -> None:
    with pytest.raises(PluginError, match=r"names no aioinformer command: \['serve'\]"):
        cli_reference.render(EVERY_COMMAND + "\n<!-- cli-reference: serve -->")


def test_a_page_without_markers_is_left_alone() -> None:
    assert cli_reference.on_page_markdown("# Title\n") == "# Title\n"


def test_roles_become_the_name_they_show() -> None:
    text = "See :class:`~aioinformer.informer.SharedIndexInformer` and :meth:`Reflector.run`."
    assert griffe_rst.convert(text) == "See `SharedIndexInformer` and `Reflector.run`."


def test_a_role_with_an_explicit_target_links_to_that_target() -> None:
    known = {"aioinformer.client.Client.resource": "aioinformer.client.Client.resource"}
    text = "Call :meth:`resource() <aioinformer.client.Client.resource>`."
    assert griffe_rst.convert(text, known.get) == (
        'Call <autoref identifier="aioinformer.client.Client.resource" optional>'
        "<code>resource()</code></autoref>."
    )


def test_a_role_the_resolver_knows_links_to_where_its_name_is_defined() -> None:
    known = {"Reflector.run": "aioinformer.reflector.Reflector.run"}
    text = "See :meth:`Reflector.run`, :func:`helper()` and :class:`~asyncio.Queue`."
    assert griffe_rst.convert(text, known.get) == (
        'See <autoref identifier="aioinformer.reflector.Reflector.run" optional>'
        "<code>Reflector.run</code></autoref>, `helper()` and `Queue`."
    )


PACKAGE = {
    "__init__.py": "from .streams import Stream\n",
    "_impl.py": 'class Hidden:\n    """Defined privately, exported by streams."""\n',
    "streams.py": """\
from pkg._impl import Hidden


class Stream:
    \"\"\"Read through :meth:`read`, closed by :meth:`close`; see :class:`Later`,
    :class:`Hidden`, :class:`pkg.streams.Later` and :class:`asyncio.Queue`.\"\"\"

    def read(self) -> None:
        \"\"\"Then :meth:`close`, or :meth:`Stream.read` again.\"\"\"

    def close(self) -> None: ...


class Later: ...
""",
}


def test_the_extension_resolves_each_role_in_its_docstrings_scope(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    for name, text in PACKAGE.items():
        (package / name).write_text(text)
    extensions = griffe.load_extensions(griffe_rst.ReStructuredTextDocstrings())
    loaded = griffe.load("pkg", search_paths=[tmp_path], extensions=extensions)
    stream = loaded["streams.Stream"]

    def links(obj: Any) -> list[str]:
        return re.findall(r'identifier="([^"]+)"', obj.docstring.value)

    # The class's own methods, a class defined further down the module, an import followed
    # to where it is defined, a full path; nothing for a name outside the package.
    assert links(stream) == [
        "pkg.streams.Stream.read",
        "pkg.streams.Stream.close",
        "pkg.streams.Later",
        "pkg._impl.Hidden",
        "pkg.streams.Later",
    ]
    assert "`asyncio.Queue`" in stream.docstring.value
    assert links(stream["read"]) == ["pkg.streams.Stream.close", "pkg.streams.Stream.read"]


def test_a_literal_block_becomes_a_fenced_block_in_its_language() -> None:
    text = "Example::\n\n    informer = make()\n    await informer.run()\n\nAfter."
    assert griffe_rst.convert(text) == (
        "Example:\n\n```python\ninformer = make()\nawait informer.run()\n```\n\nAfter."
    )
    diagram = "The path ::\n\n    A --> B\n      | C\nEnd."
    assert griffe_rst.convert(diagram) == "The path\n\n```text\nA --> B\n  | C\n```\nEnd."


def test_a_simple_table_becomes_a_text_block() -> None:
    table = "Metrics:\n\n===== ====\nname  type\n===== ====\na     b\n===== ====\n\nEnd."
    converted = griffe_rst.convert(table)
    assert converted.startswith("Metrics:\n\n```text\n===== ====\nname  type")
    assert converted.endswith("===== ====\n```\n\nEnd.")


def test_an_export_links_to_the_public_module_that_documents_it() -> None:
    homes = exports.homes()
    assert homes["SharedIndexInformer"] == "aioinformer.informer"
    assert homes["Client"] == "aioinformer.client"
    # Defined in a private module and exported only by the package: documented there.
    assert homes["State"] == "aioinformer"
    assert "- State\n" in exports.render_package()
    assert "| [`WorkQueue`][aioinformer.workqueue.WorkQueue] | `aioinformer.workqueue` |" in (
        exports.render_table()
    )
