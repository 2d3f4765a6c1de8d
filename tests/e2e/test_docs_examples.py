"""Every Python block of the tutorial and the how-to pages runs, as a reader would run it.

The pages are ``docs/tutorial/*.md``, ``docs/how-to/*.md``, the site's home page and the
README. Each fenced ``python``
block, indented ones inside tabs and admonitions included, is one of these, chosen by the
line just above its fence (blank lines may come between):

- nothing: a complete program, written into an empty directory under the name its fence's
  ``title="NAME.py"`` gives it (``main.py`` without one) and run there with ``python
  NAME.py``; it must exit 0 by itself.
- ``<!-- docs-test: file NAME -->``: a file the page's later blocks need (an operator a test
  imports, a ``conftest.py``); it is written as NAME beside each later block of the page.
- ``<!-- docs-test: pytest -->``: a test file, run by pytest as in a new project with only
  ``pip install 'aioinformer[testing]'`` (no pytest configuration of ours, plugin autoloading
  off, the plugins of aioinformer and of the ``testing`` extra loaded by name).
- ``<!-- docs-test: cluster stop-after="TEXT" -->``: a program for a real cluster, which reads
  the kubeconfig the usual way. It runs against a fake API server named by ``KUBECONFIG``
  until TEXT appears in its output, then gets SIGTERM and must exit 0. With
  ``ready=":PORT"`` instead of ``stop-after``, it runs until its readiness probe,
  ``http://127.0.0.1:PORT/readyz``, answers 200. Each ``crd="GROUP/VERSION/PLURAL KIND"``
  option installs a custom resource on the server first, as applying its
  CustomResourceDefinition to a cluster does.
- ``<!-- docs-test: peer stop-after="TEXT" -->``: another library's program, shown beside
  ours for comparison. It runs the same way against a fake API server holding the objects
  of ``PEER_OBJECTS``, and SIGTERM may end it as it ends any program that does not catch it.
  When the page's next line says "Run with `COMMAND`" (``kopf run ... NAME.py``), that
  command runs it, as the reader is told to.
- a visible ``!!! note "Not run by the test suite: REASON"`` admonition: not run, and the
  reader sees why.

Nothing else is accepted: an unknown marker, or a skip without a reason, fails here. A
program block with a title is also written beside the page's later blocks, as a reader who
saved it under that name has it ("the program above, saved as main.py"); so a title must
not shadow a module of the standard library or of the installed packages.

A complete program's output is checked too: when the next fenced block on the page is a
``console`` block starting with ``$ python``, the rest of that block is what the program
must print on stdout. Lines are compared without their trailing blanks; as in doctest,
``...`` within a line stands for any text (a port, a temporary path) and a line of only
``...`` for any number of lines (a traceback's frames). After a test file, the console
block's count of passed tests must be pytest's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import aiohttp
import pytest

from aioinformer.testing import FakeAPIServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXECUTED_PARTS = ("tutorial", "how-to")

RUN_TIMEOUT = 80.0
"""Seconds one program or test file may take (a few seconds unloaded): bounds a hang only.
With :data:`STOP_TIMEOUT` twice over, a cluster program's worst case ends before
pytest-timeout's 120 s, so the failure shows the program's output."""

STOP_TIMEOUT = 15.0
"""Seconds a cluster program has to exit after SIGTERM, then to close its output."""

READY_POLL = 0.1
"""Seconds between two probes of a cluster program's ``/readyz``."""

PEER_OBJECTS: list[dict[str, object]] = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "example"}, "data": {"a": "1"}},
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"backup": "true"}},
        "data": {"b": "2"},
    },
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
    },
]
"""What a peer library's program finds on the server: its examples watch these kinds."""

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})\s*(?P<info>[^`\n]*)$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(?P<body>.*?)\s*-->$")
NOT_RUN = re.compile(r'^!!!\s+note\s+"Not run by the test suite:\s*(?P<reason>[^"]*)"\s*$')
CLUSTER = re.compile(r'^(?P<mode>cluster|peer)(?P<options>(?:\s+[\w-]+="[^"]*")+)$')
OPTION = re.compile(r'\s+(?P<key>[\w-]+)="(?P<value>[^"]*)"')
TITLE = re.compile(r'\btitle="(?P<name>[^"]+)"')
RUN_WITH = re.compile(r"^Run with `(?P<command>[^`]+)`")
FILE = re.compile(r"^file\s+(?P<name>[\w.-]+\.py)$")
RUN_COMMAND = "$ python "
PASSED = re.compile(r"\b(\d+) passed\b")
ELLIPSIS = "..."


@dataclass
class Block:
    page: str
    line: int
    code: str
    mode: str
    """``script``, ``file``, ``pytest``, ``cluster``, ``peer`` or ``skip``."""
    argument: str = ""
    """The file's name, the text a cluster program is stopped after, or the skip's reason."""
    files: dict[str, str] = field(default_factory=dict)
    """The page's ``file`` blocks above this one, by name."""
    shown: list[str] | None = None
    """The output the page shows for it (a ``console`` block right after), if any."""
    name: str = "main.py"
    """The file it is written as (and, for a program, run as): its title, else main.py."""
    ready_port: int | None = None
    """A cluster program's health port: it is stopped once its ``/readyz`` answers 200."""
    crds: list[tuple[str, str, str, str]] = field(default_factory=list)
    """The custom resources (group, version, plural, kind) the server has for it."""
    command: list[str] = field(default_factory=list)
    """A peer program's command, as the page's "Run with" line gives it; else ``python NAME``."""

    def argv(self) -> list[str]:
        """The command that runs it here: ``python`` and ``kopf`` from this interpreter."""
        command = self.command or ["python", self.name]
        launchers = {"python": [sys.executable], "kopf": [sys.executable, "-m", "kopf"]}
        if command[0] not in launchers:
            raise ValueError(f"{self.id}: cannot run {shlex.join(command)!r} here")
        return [*launchers[command[0]], *command[1:]]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def read_mode(previous: str) -> tuple[str, str, dict[str, list[str]]]:
    """The mode a block's preceding line gives it, with its argument and options."""
    if match := NOT_RUN.match(previous):
        return "skip", match["reason"].strip(), {}
    if not (match := MARKER.match(previous)):
        return "script", "", {}
    body = match["body"]
    if body == "pytest":
        return "pytest", "", {}
    if cluster := CLUSTER.match(body):
        options: dict[str, list[str]] = {}
        for option in OPTION.finditer(cluster["options"]):
            options.setdefault(option["key"], []).append(option["value"])
        allowed = {"stop-after", "ready", "crd"} if cluster["mode"] == "cluster" else {"stop-after"}
        stops = [*options.get("stop-after", []), *options.get("ready", [])]
        if set(options) - allowed or len(stops) != 1 or not stops[0]:
            raise ValueError(f"unknown docs-test marker {previous!r}")
        return cluster["mode"], options.pop("stop-after", [""])[0], options
    if file := FILE.match(body):
        return "file", file["name"], {}
    raise ValueError(f"unknown docs-test marker {previous!r}")


def read_port(option: str) -> int:
    """``":8081"`` as 8081."""
    port = option.removeprefix(":")
    if not port.isdigit():
        raise ValueError(f'ready="{option}": give ":PORT"')
    return int(port)


def read_crd(option: str) -> tuple[str, str, str, str]:
    """``"GROUP/VERSION/PLURAL KIND"`` as its four parts."""
    resource, _, kind = option.partition(" ")
    parts = resource.split("/")
    if len(parts) != 3 or not all(parts) or not kind.strip():
        raise ValueError(f'crd="{option}": give "GROUP/VERSION/PLURAL KIND"')
    group, version, plural = parts
    return group, version, plural, kind.strip()


def page_blocks(path: Path, docs: Path = DOCS) -> list[Block]:
    """The Python blocks of one page, in order, each with the page's files above it."""
    page = path.relative_to(docs).as_posix()
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    files: dict[str, str] = {}
    previous = ""
    just_before: Block | None = None  # the Python block, when it was the last fence
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            if lines[index].strip():
                previous = lines[index].strip()
            index += 1
            continue
        indent, ticks = opening["indent"], opening["ticks"]
        language = (opening["info"].split() or [""])[0].lstrip(".").lower()
        body: list[str] = []
        index += 1
        while index < len(lines):
            closing = FENCE.match(lines[index])
            if closing and closing["ticks"].startswith(ticks) and not closing["info"].strip():
                break
            body.append(lines[index])
            index += 1
        start = index - len(body)
        index += 1
        shown = [line.removeprefix(indent) for line in body]
        if language == "console" and just_before and shown and shown[0].startswith(RUN_COMMAND):
            while shown and not shown[-1].strip():
                shown.pop()
            just_before.shown = shown[1:]
        just_before = None
        if language in ("python", "py"):
            try:
                mode, argument, options = read_mode(previous)
                crds = [read_crd(option) for option in options.get("crd", [])]
                ready_port = read_port(options["ready"][0]) if "ready" in options else None
            except ValueError as error:
                raise ValueError(f"{page}:{start}: {error}") from None
            code = textwrap.dedent("\n".join(line.removeprefix(indent) for line in body)) + "\n"
            title = TITLE.search(opening["info"])
            name = title["name"] if title and title["name"].endswith(".py") else "main.py"
            if mode == "file":
                name = argument
            block = Block(page, start, code, mode, argument, dict(files), name=name, crds=crds)
            block.ready_port = ready_port
            if mode == "peer":
                after = next((line.strip() for line in lines[index:] if line.strip()), "")
                if run_with := RUN_WITH.match(after):
                    block.command = shlex.split(run_with["command"])
            blocks.append(block)
            just_before = block
            if mode == "file":
                files[argument] = code
            elif mode in ("script", "cluster") and title:
                files[name] = code
        previous = ""
    return blocks


def output_pattern(shown: list[str]) -> re.Pattern[str]:
    """What a program's stdout must match in full to be the ``shown`` output."""
    parts: list[str] = []
    for line in shown:
        if line.strip() == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = (re.escape(piece) for piece in line.rstrip().split(ELLIPSIS))
            parts.append("[^\n]*?".join(pieces) + r"\n")
    return re.compile("".join(parts))


def printed_as_shown(stdout: str, shown: list[str]) -> bool:
    """Whether ``stdout``, its lines' trailing blanks aside, is the ``shown`` output."""
    printed = "".join(line.rstrip() + "\n" for line in stdout.splitlines())
    return output_pattern(shown).fullmatch(printed) is not None


def executed_pages() -> list[Path]:
    parts = sorted(path for part in EXECUTED_PARTS for path in (DOCS / part).glob("*.md"))
    return [ROOT / "README.md", DOCS / "index.md", *parts]


def all_blocks() -> list[Block]:
    return [
        block
        for path in executed_pages()
        for block in page_blocks(path, docs=DOCS if DOCS in path.parents else ROOT)
    ]


def runnable_blocks() -> list[Block]:
    runnable = ("script", "pytest", "cluster", "peer")
    return [block for block in all_blocks() if block.mode in runnable]


def clean_environment() -> dict[str, str]:
    """This process's environment without what would leak our settings into a reader's run."""
    leaks = ("PYTEST_", "KUBECONFIG", "PYTHONPATH", "AIOINFORMER_", "COV_CORE_")
    return {k: v for k, v in os.environ.items() if not k.startswith(leaks)}


def write_project(directory: Path, block: Block, name: str | None = None) -> None:
    """The page's files above ``block``, then the block itself as ``name`` (its own name)."""
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, code in block.files.items():
        (directory / file_name).write_text(code)
    (directory / (name or block.name)).write_text(block.code)


def extra_requirements() -> list[str]:
    """The distribution names the ``testing`` extra requires."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements: list[str] = project["optional-dependencies"]["testing"]
    return [re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0] for req in requirements]


def extra_plugins() -> list[str]:
    """``-p`` options loading the pytest plugins the ``testing`` extra installs."""
    options: list[str] = []
    # aioinformer's last: it imports pytest_asyncio, which pytest must see first to
    # rewrite its asserts.
    for name in [*extra_requirements(), "aioinformer"]:
        try:
            entry_points = distribution(name).entry_points
        except PackageNotFoundError:  # pragma: no cover - the venv lacks part of the extra
            pytest.fail(f"{name} (of the testing extra) is not installed")
        for ep in entry_points.select(group="pytest11"):
            options += ["-p", ep.value]
    return options


def run_pytest_in_new_project(project: Path) -> subprocess.CompletedProcess[str]:
    """pytest over ``project`` as a new project runs it: no configuration file applies."""
    no_config = project.parent / "empty.ini"
    no_config.write_text("")
    env = clean_environment()
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(no_config)]
    command += ["--rootdir", str(project), *extra_plugins(), "-rA"]
    return subprocess.run(
        command,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def run_script(project: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=project,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


async def answers_ready(port: int) -> None:
    """Return once ``http://127.0.0.1:PORT/readyz`` answers 200, as a kubelet probes it."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(READY_POLL)


async def run_against_cluster(
    project: Path,
    argv: list[str],
    kubeconfig: str,
    *,
    name: str,
    stop_after: str = "",
    ready_port: int | None = None,
) -> tuple[int, str]:
    """Run ``argv`` with ``KUBECONFIG``; SIGTERM once ``stop_after`` is printed, or once the
    program's ``/readyz`` on ``ready_port`` answers 200."""
    env = clean_environment()
    env["KUBECONFIG"] = kubeconfig
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=project,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    output: list[str] = []
    printed = asyncio.Event()
    awaited = f"/readyz on :{ready_port} answering 200" if ready_port else repr(stop_after)

    async def read_output() -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            output.append(line.decode(errors="replace"))
            if stop_after and stop_after in output[-1]:
                printed.set()

    reader = asyncio.create_task(read_output())
    stop = asyncio.create_task(answers_ready(ready_port) if ready_port else printed.wait())
    try:
        try:
            done, _ = await asyncio.wait(
                {reader, stop}, timeout=RUN_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
            )
            if reader in done and reader.exception() is not None:
                raise AssertionError(f"reading {name}'s output failed: {reader.exception()!r}")
            if stop not in done:
                ended = "exited" if reader in done else f"ran {RUN_TIMEOUT} s"
                raise AssertionError(f"{name} {ended} without {awaited}")
            stop.result()  # what ended the wait for the stop condition, if it failed
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            await asyncio.wait_for(reader, STOP_TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"{name} did not exit {STOP_TIMEOUT} s after SIGTERM") from None
    except AssertionError as error:
        raise AssertionError(f"{error}\n{''.join(output)}") from None
    finally:
        for task in (stop, reader):
            task.cancel()
        await asyncio.gather(stop, reader, return_exceptions=True)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, "".join(output)


def test_the_executed_pages_exist_and_hold_code() -> None:
    pages = {path.relative_to(ROOT).as_posix() for path in executed_pages()}
    assert "docs/tutorial/first-informer.md" in pages
    assert "docs/how-to/testing.md" in pages
    assert runnable_blocks(), "no runnable block in the tutorial and how-to pages"


def test_every_block_not_run_says_why_to_the_reader() -> None:
    for block in all_blocks():
        if block.mode == "skip":
            assert len(block.argument) >= 10, f"{block.id}: give the reader a reason"


def test_every_file_block_is_used_by_a_later_block_of_its_page() -> None:
    blocks = all_blocks()
    for block in blocks:
        if block.mode != "file":
            continue
        users = [b for b in blocks if b.page == block.page and block.argument in b.files]
        assert any(b.mode != "file" for b in users), f"{block.id}: {block.argument} runs nowhere"


def test_the_markers_are_read_as_documented(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            Intro.

            ```python
            print("a")
            ```

            <!-- docs-test: file app.py -->

            ```py title="app.py"
            X = 1
            ```

            === "Tab"

                !!! note "Not run by the test suite: shown for comparison only"

                ```python
                import kopf
                ```

                <!-- docs-test: pytest -->
                ```python
                def test_x(): ...
                ```

            <!-- docs-test: cluster stop-after="synced" -->
            ```python
            print("synced")
            ```

            <!-- docs-test: peer stop-after="ADDED" -->
            ```python
            print("ADDED")
            ```

            ```console
            $ python main.py
            ```
            """
        )
    )
    blocks = page_blocks(page, docs=tmp_path)
    assert [(b.mode, b.argument) for b in blocks] == [
        ("script", ""),
        ("file", "app.py"),
        ("skip", "shown for comparison only"),
        ("pytest", ""),
        ("cluster", "synced"),
        ("peer", "ADDED"),
    ]
    assert blocks[2].code == "import kopf\n"
    assert blocks[3].files == {"app.py": "X = 1\n"}
    assert blocks[0].files == {}
    assert [b.shown for b in blocks] == [None, None, None, None, None, []]


def test_a_console_block_right_after_a_program_is_its_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            ```python
            print("a")
            ```

            ```console
            $ python main.py
            a
            ```

            ```python
            print("b")
            ```

            ```bash
            python main.py
            ```

            ```console
            $ python main.py
            b
            ```

            ```python
            print("c")
            ```

            ```console
            $ kubectl get pods
            ```
            """
        )
    )
    assert [b.shown for b in page_blocks(page, docs=tmp_path)] == [["a"], None, None]


def test_the_shown_output_is_matched_line_by_line_with_ellipses() -> None:
    shown = ["proxy at http://127.0.0.1:...", "Traceback:", "  ...", "Error: boom"]
    printed = "proxy at http://127.0.0.1:4242\nTraceback:\n  File a\n  File b\nError: boom\n"
    assert printed_as_shown(printed, shown)
    assert printed_as_shown(printed.replace("  File a\n  File b\n", ""), shown)
    assert printed_as_shown("x  \ny\n", ["x", "y  "])
    assert not printed_as_shown(printed.replace("boom", "bang"), shown)
    assert not printed_as_shown(printed + "one line more\n", shown)
    assert not printed_as_shown("x\n", ["x", "y"])
    assert not printed_as_shown("a\nb\n", ["a...b"])
    assert printed_as_shown("a.b\n", ["a.b"])
    assert not printed_as_shown("axb\n", ["a.b"])


def test_the_first_program_of_the_tutorial_has_its_output_checked() -> None:
    first = next(b for b in all_blocks() if b.page == "tutorial/first-informer.md")
    assert first.mode == "script"
    assert first.shown is not None
    assert first.shown[0] == "added   web-0 from the list"


def test_a_cluster_marker_may_wait_for_readiness_and_install_custom_resources(
    tmp_path: Path,
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            ```python title="main.py"
            X = 1
            ```

            <!-- docs-test: cluster ready=":8081" crd="example.com/v1/widgets Widget" -->
            ```python title="on_cluster.py"
            from main import X
            ```
            """
        )
    )
    program, on_cluster = page_blocks(page, docs=tmp_path)
    assert (program.name, program.files) == ("main.py", {})
    assert (on_cluster.mode, on_cluster.name, on_cluster.argument) == (
        "cluster",
        "on_cluster.py",
        "",
    )
    assert on_cluster.ready_port == 8081
    assert on_cluster.crds == [("example.com", "v1", "widgets", "Widget")]
    assert on_cluster.files == {"main.py": "X = 1\n"}


def test_a_peer_program_runs_with_the_command_the_page_gives_the_reader(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            <!-- docs-test: peer stop-after="succeeded" -->
            ```python title="nodes.py"
            import kopf
            ```

            Run with `kopf run --all-namespaces nodes.py`.

            <!-- docs-test: peer stop-after="ADDED" -->
            ```python title="watch.py"
            import kubernetes_asyncio
            ```

            <!-- docs-test: peer stop-after="ADDED" -->
            ```python
            import kr8s
            ```

            Run with `kr8s-run main.py`.
            """
        )
    )
    kopf, plain, unknown = page_blocks(page, docs=tmp_path)
    assert kopf.argv() == [sys.executable, "-m", "kopf", "run", "--all-namespaces", "nodes.py"]
    assert plain.argv() == [sys.executable, "watch.py"]
    with pytest.raises(ValueError, match=re.escape("cannot run 'kr8s-run main.py' here")):
        unknown.argv()


@pytest.mark.parametrize(
    "marker",
    [
        'cluster stop-after="a" ready=":8081"',
        'cluster stop-after=""',
        'cluster ready="localhost"',
        'cluster crd="example.com/v1/widgets Widget"',
        'cluster stop-after="a" crd="example.com/widgets Widget"',
        'peer stop-after="a" crd="example.com/v1/widgets Widget"',
        'cluster stop-after="a" restart="always"',
    ],
)
def test_a_cluster_marker_with_no_stop_or_an_option_it_lacks_fails(
    marker: str, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"<!-- docs-test: {marker} -->\n```python\nprint(1)\n```\n")
    with pytest.raises(ValueError, match=re.escape("page.md:2: ")):
        page_blocks(page, docs=tmp_path)


def test_no_program_is_saved_under_the_name_of_a_module_it_may_import() -> None:
    # A reader who saves "operator.py" hides the standard library's operator module from
    # every program in that directory, and asyncio no longer imports.
    taken = set(sys.stdlib_module_names) | set(packages_distributions())
    for block in all_blocks():
        stem = block.name.removesuffix(".py")
        assert stem not in taken, f"{block.id}: saved as {block.name}, it hides module {stem}"


def test_an_unknown_marker_fails_instead_of_running_nothing(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: skip -->\n```python\nraise SystemExit(1)\n```\n")
    with pytest.raises(ValueError, match=re.escape("page.md:2: unknown docs-test marker")):
        page_blocks(page, docs=tmp_path)


def test_the_testing_extra_brings_pytest_asyncio_and_anyio() -> None:
    assert {"pytest", "pytest-asyncio", "anyio"} <= set(extra_requirements())
    plugins = extra_plugins()
    assert "aioinformer.testing.plugin" in plugins
    assert "pytest_asyncio.plugin" in plugins
    assert "anyio.pytest_plugin" in plugins


@pytest.mark.parametrize("block", runnable_blocks(), ids=lambda block: block.id)
async def test_the_block_runs(block: Block, tmp_path: Path) -> None:
    project = tmp_path / "project"
    if block.mode == "script":
        write_project(project, block)
        result = await asyncio.to_thread(run_script, project, block.argv())
        assert result.returncode == 0, f"{block.id}\n{result.stdout}\n{result.stderr}"
        if block.shown is not None:
            shown = "\n".join(block.shown)
            assert printed_as_shown(result.stdout, block.shown), (
                f"{block.id}: the page shows\n{shown}\nbut the program printed\n{result.stdout}"
            )
    elif block.mode == "pytest":
        write_project(project, block, "test_docs_example.py")
        result = await asyncio.to_thread(run_pytest_in_new_project, project)
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"{block.id}\n{output}"
        assert re.search(r"\d+ passed", output), output
        if block.shown is not None:
            # Timings differ from run to run: the page's count of passed tests must not.
            counts = [m[1] for line in block.shown if (m := PASSED.search(line))]
            assert counts == PASSED.findall(output)[-1:], f"{block.id}: shows {counts}\n{output}"
        assert "Warning" not in result.stdout, output
        assert f"rootdir: {project}" in output, output
    else:
        write_project(project, block)
        async with FakeAPIServer() as server:
            if block.mode == "peer":
                for obj in PEER_OBJECTS:
                    server.create(obj)
            for group, version, plural, kind in block.crds:
                server.register_crd(group, version, plural, kind)
            returncode, output = await run_against_cluster(
                project,
                block.argv(),
                server.kubeconfig_path(),
                name=block.name,
                stop_after=block.argument,
                ready_port=block.ready_port,
            )
        # A peer's program is written as its library's examples are: SIGTERM may kill it.
        accepted = {0, -signal.SIGTERM} if block.mode == "peer" else {0}
        assert returncode in accepted, f"{block.id}: exit {returncode} after SIGTERM\n{output}"


ASYNCIO_MARK = "pytestmark = pytest.mark.asyncio"


@pytest.mark.parametrize(
    "block",
    [b for b in runnable_blocks() if b.mode == "pytest" and ASYNCIO_MARK in b.code],
    ids=lambda block: block.id,
)
async def test_without_its_asyncio_mark_a_test_block_fails_in_a_new_project(
    block: Block, tmp_path: Path
) -> None:
    # What the pages' mark guards against: pytest-asyncio's default (strict) mode runs no
    # unmarked async test, so a reader's copy without the mark would not pass.
    project = tmp_path / "project"
    unmarked = Block(block.page, block.line, block.code.replace(ASYNCIO_MARK, ""), "pytest")
    unmarked.files = block.files
    write_project(project, unmarked, "test_docs_example.py")
    result = await asyncio.to_thread(run_pytest_in_new_project, project)
    assert result.returncode != 0, result.stdout
