"""Test setup: JAX's process settings before anything starts its backend, markers, fixtures.

Where a test goes and how it is marked (``-m`` selects what a change needs):

- ``tests/core``, ``tests/hosting``, ``tests/sandbox``, ``tests/topics``: one folder per layer of
  ``jaxplay`` (the topics folder holds every topic's and the article's logic);
- ``tests/pages``: the pages in Streamlit's ``AppTest`` (``test_<page>.py``), and what holds for
  every page; ``tests/browser``: a real chromium against ``streamlit run``;
- ``tests/repo``: the repository as a whole (layers, README, lint and types, benchmarks);
- ``tests/support``: helpers only (no tests).

Markers are applied here, never by hand: ``browser`` to ``tests/browser``; ``apptest`` to
``tests/pages`` and to any test whose code or fixtures name ``open_page`` or ``AppTest``;
``sandbox`` to ``tests/sandbox`` and to any test whose code or fixtures name ``WorkerPool``;
``postgres`` to any test that uses the ``postgres_server`` fixture or a fixture's
``"postgresql"`` case. So ``-m "not browser and not
apptest"`` is the quick unit half. One marker is set by hand: ``quiet``, on the few tests that
time a bystander, which then run while no other xdist worker runs a test.
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile

os.environ.setdefault("JAXPLAY_CPU_DEVICES", "8")
# The start-up check of every claim runs them all in the background: tests/test_claims.py runs
# them one by one instead, and tests/test_claims_page.py turns the check on for its page.
os.environ.setdefault("JAXPLAY_CHECK_CLAIMS", "0")
# No server of a test opens every page in the background unless the test asks (a room's
# tests, tests/hosting/test_warm_up.py): servers started by tests inherit this.
os.environ.setdefault("JAXPLAY_WARM_UP", "off")
# Measurements under test take their minimum samples: tests check what a measurement returns,
# not how fast (benchmarks/ measures that). Here (AppTest too) and in every server a test starts.
# Set, not defaulted: a scale exported for a demo (10, say) would make the suite 200 times slower.
os.environ["JAXPLAY_MEASURE_SCALE"] = "0.05"
# JAX's persistent compilation cache, one folder for the whole run: both xdist workers (they
# inherit it from the controller, which made it) and every server a test starts compile the same
# programs, and most of a measurement's CPU under test is compiling. Tests check what a compile
# returns, never how long it took (benchmarks/ measures that, with no cache). The sandbox's
# workers never see it: their environment is an allow-list (environment.child_environment), and
# a visitor's run must not read or write a cache the server's processes trust.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxplay-tests-jax-cache-")
    os.environ["JAXPLAY_TESTS_OWN_JAX_CACHE"] = "1"  # this run made it, and removes it at the end
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.05")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

from jaxplay.hosting import environment

environment.configure()

import functools  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402
from streamlit.components.v2 import manifest_scanner  # noqa: E402
from streamlit.runtime.pages_manager import PagesManager  # noqa: E402

from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.support import postgres as postgres_support  # noqa: E402
from tests.support.quiet import MachineShare  # noqa: E402

# Every new AppTest scans the installed distributions for component manifests on its first run
# (0.1 s of CPU, about a thousand times a suite); what is installed does not change during a run.
manifest_scanner.scan_component_manifests = functools.cache(
    manifest_scanner.scan_component_manifests
)

TESTS = Path(__file__).resolve().parent
#: Folder -> markers every test in it gets.
FOLDER_MARKERS = {"browser": ("browser",), "pages": ("apptest",), "sandbox": ("sandbox",)}
#: Marker -> names whose mention in a test's code (or its fixtures' code) gives it the marker.
NAMED_MARKERS = {"apptest": ("open_page", "AppTest"), "sandbox": ("WorkerPool",)}
#: Marker -> fixtures whose use gives it.
FIXTURE_MARKERS = {"postgres": ("postgres_server",)}
#: Browser test modules that run as a group of their own, beside the "browser" group, so two
#: workers share the browser half (about 14 minutes in one group): the click-through starts a
#: server of its own, so it needs nothing the other group's shared server holds.
BROWSER_GROUPS = {"test_clickthrough.py": "browser-tour"}


def _source(fn: Callable[..., Any], cache: dict[Any, str]) -> str:
    if fn not in cache:
        try:
            cache[fn] = inspect.getsource(fn)
        except (OSError, TypeError):
            cache[fn] = ""
    return cache[fn]


def _code_of(item: pytest.Item, cache: dict[Any, str]) -> str:
    """The source of the test function and of every fixture it uses but this file's (a fixture
    such as ``pool`` that starts a ``WorkerPool`` marks its tests)."""
    parts = [_source(getattr(item, "function", None) or (lambda: None), cache)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        for fixturedef in defs:
            if getattr(fixturedef.func, "__module__", __name__) != __name__:
                parts.append(_source(fixturedef.func, cache))
    return "\n".join(parts)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's compilation cache goes with the run (the controller made it; workers leave it)."""
    if not hasattr(config, "workerinput") and os.environ.pop("JAXPLAY_TESTS_OWN_JAX_CACHE", ""):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the ``xdist_group`` marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cache: dict[Any, str] = {}
    for item in items:
        folder = Path(str(item.path)).resolve().relative_to(TESTS).parts[0]
        names = set(FOLDER_MARKERS.get(folder, ()))
        code = _code_of(item, cache)
        names |= {m for m, words in NAMED_MARKERS.items() if any(w in code for w in words)}
        fixtures = set(getattr(item, "fixturenames", ()))
        names |= {m for m, used in FIXTURE_MARKERS.items() if fixtures & set(used)}
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec else ()
        if any(isinstance(v, str) and v == "postgresql" for v in params):
            names.add("postgres")  # the PostgreSQL case of a fixture over both snippet stores
        for name in sorted(names - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
        if "browser" in names:
            # A browser test runs in its module's group (:data:`BROWSER_GROUPS`, else
            # "browser"): the tests of a group run one after another on one xdist worker (they
            # share a server, and each drives a chromium); the other workers take the rest.
            group = BROWSER_GROUPS.get(Path(str(item.path)).name, "browser")
            item.add_marker(pytest.mark.xdist_group(group))


#: Folders whose tests run with Equinox's strictness: an implicit broadcast between arrays of
#: different ranks raises. Not the pages' tests, nor the topics' files in
#: :data:`BROADCASTS_ON_PURPOSE`: they run the article's code, which, shown as the article writes
#: it, broadcasts a bias of rank 1 over a batch (``x @ W.T + b``), or (vmap) a wrong axis that
#: still runs by broadcasting, the lesson itself.
STRICT_RANKS = {"core", "topics", "hosting"}
BROADCASTS_ON_PURPOSE = {
    "topics/test_claims.py",  # every claim, the article's layer and MLP among them
    "topics/test_devices_sharding.py",  # the data-parallel step of the article's MLP
    "topics/test_jit_workloads.py",  # the jit page's "layer" workload
    "topics/test_memory_remat.py",  # the checkpointed MLP
    "topics/test_memory_shown.py",
    "topics/test_state.py",  # the training loop of the article's model
    "topics/test_state_limiter.py",
    "topics/test_vmap.py",  # in_axes that run and compute something else
    "topics/test_vmap_shown.py",
}


@pytest.fixture(autouse=True)
def _strict_rank_promotion(request: pytest.FixtureRequest) -> Iterator[None]:
    where = Path(str(request.node.path)).resolve().relative_to(TESTS)
    if where.parts[0] not in STRICT_RANKS or where.as_posix() in BROADCASTS_ON_PURPOSE:
        yield
        return
    with jax.numpy_rank_promotion("raise"):
        yield


#: This worker's hold on the machine (:class:`tests.support.quiet.MachineShare`), under xdist.
_MACHINE = pytest.StashKey[MachineShare]()


def _quiet(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("quiet") is not None


@pytest.fixture(autouse=True)
def _quiet_machine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Under xdist, a test marked ``quiet`` runs while no other worker runs a test (it times a
    bystander against a load it makes itself: another worker's load is not the server's). The
    hold ends after the test's teardown (:func:`pytest_runtest_teardown`), or after the last of
    quiet tests that follow one another."""
    if not hasattr(request.config, "workerinput"):
        return
    if _MACHINE not in request.config.stash:
        request.config.stash[_MACHINE] = MachineShare(tmp_path_factory.getbasetemp().parent)
    request.config.stash[_MACHINE].take(exclusive=_quiet(request.node))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)
    finally:
        share = item.config.stash.get(_MACHINE, None)
        if share is not None and not (_quiet(item) and _quiet(nextitem)):
            share.release()


@pytest.fixture(autouse=True)
def _through_app_navigation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run pages through ``app.py``'s ``st.navigation``, as the server does.

    ``AppTest`` resets Streamlit's legacy-``pages/``-folder flag before every run, so from the
    second run on it would run ``pages/<name>.py`` on its own, without ``app.py`` (its page
    config, sidebar and link notes). The server leaves that mode for good on its first run
    (``pages/_startup.py``); this does the same for every run of every test.
    """
    original = PagesManager.__init__

    def init(self: PagesManager, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright launches Debian's chromium (Playwright's own download is not possible)."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres_support.Server]:
    """A throwaway PostgreSQL server for the session (skips without the binaries, except in CI)."""
    with postgres_support.running_server(postgres_support.require_binaries()) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: postgres_support.Server) -> Iterator[str]:
    """A ``postgresql://`` URL whose tables live in a fresh schema, dropped after the test."""
    url = postgres_server.new_schema()
    yield url
    postgres_server.drop_schema(url)
