"""Public mode: sandbox required, rate limits, limits and queues shown, no paths, settings."""

from __future__ import annotations

import contextvars
import os
import re
import tempfile
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxplay import sandbox as runner
from jaxplay.core import measure_lock
from jaxplay.hosting import catalog, publicmode, settings
from jaxplay.hosting.ratelimit import RateLimiter
from jaxplay.sandbox import RunError, RunnerConfig, RunResult, WorkerPool
from tests.support.apptest import assert_clean, open_page
from tests.support.progress import Told

ROOT = catalog.ROOT
# Names that look like settings but are not read from the environment.
NOT_SETTINGS = {"JAXPLAY_REPORT"}  # the multi-process demo's stdout marker


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


# --- the settings table -----------------------------------------------------------------------


def _source_files() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    return files + sorted((ROOT / "jaxplay").rglob("*.py"))


def test_every_setting_the_code_reads_is_in_the_table() -> None:
    found = set()
    for path in _source_files():
        found |= set(re.findall(r"\bJAXPLAY_[A-Z0-9_]+\b", path.read_text(encoding="utf-8")))
    assert "JAXPLAY_PUBLIC" in found and "JAXPLAY_SNIPPET_DB" in found  # the grep works
    missing = found - NOT_SETTINGS - set(settings.names())
    assert not missing, f"add these to jaxplay/hosting/settings.py SETTINGS: {sorted(missing)}"
    # Everything the runner hands to its workers is documented too.
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in settings.PASSED_TO_WORKERS
    assert set(settings.PASSED_TO_WORKERS) <= set(settings.names())


def test_settings_is_the_one_reader_of_jaxplays_variables() -> None:
    """No module parses a ``JAXPLAY_*`` variable itself: they all call a reader in settings."""
    reads = re.compile(r"""(?:\.get|getenv)\(\s*["']JAXPLAY_""")
    exempt = {"jaxplay/hosting/settings.py"}
    offenders = [
        str(p.relative_to(ROOT))
        for p in _source_files()
        if str(p.relative_to(ROOT)) not in exempt and reads.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    env = {"JAXPLAY_RUNNER_SPARES": "0", "JAXPLAY_RUN_MEMORY_MB": "1", "JAXPLAY_CPU_DEVICES": "x"}
    assert settings.runner_spares(env) == 0  # no spares is a choice, not a typo
    assert settings.run_memory_mb(env) == settings.MIN_RUN_MEMORY_MB
    assert settings.cpu_devices(env) == settings.DEFAULT_CPU_DEVICES
    assert settings.passed_to_workers({"JAX_PLATFORMS": "cpu", "HOME": "/x"}) == {
        "JAX_PLATFORMS": "cpu"
    }


def test_the_table_has_one_row_per_setting_with_defaults_from_the_code() -> None:
    table = settings.markdown_table().splitlines()
    assert table[0] == "| Variable | Default | Meaning |"
    assert len(table) == 2 + len(settings.SETTINGS) == 2 + len(set(settings.names()))
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in table[2:]}
    assert rows["JAXPLAY_RUN_TIMEOUT_S"] == f"`{runner.Limits.timeout_s:g}`"
    assert rows["JAXPLAY_RUN_MEMORY_MB"] == f"`{runner.Limits.memory_mb}`"
    assert rows["JAXPLAY_RUNS_PER_MINUTE"] == f"`{settings.DEFAULT_RUNS_PER_MINUTE}`"
    assert rows["JAXPLAY_SNIPPET_DB"] == "`~/.local/share/jaxplay/snippets.sqlite3`"
    assert all(s.meaning and "|" not in s.meaning for s in settings.SETTINGS)


def test_the_readme_shows_the_rendered_settings_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- settings:start -->(.*?)<!-- settings:end -->", readme, re.S)
    assert match, "README.md needs the settings table between its settings markers"
    assert match.group(1).strip() == settings.markdown_table(), (
        "README.md's settings table is out of date: paste jaxplay.hosting.settings.markdown_table()"
    )


def test_settings_parse_leniently() -> None:
    env = {"JAXPLAY_RUNS_PER_MINUTE": "oops", "JAXPLAY_BENCHMARKS_PER_MINUTE": "-3",
           "JAXPLAY_VISITOR_KEY": "Session", "JAXPLAY_TRUSTED_PROXY": "yes",
           "JAXPLAY_PUBLIC": "TRUE"}  # fmt: skip
    config = publicmode.PublicConfig.from_env(env)
    assert config.public and config.trusted_proxy and config.visitor_key == "session"
    assert config.runs_per_minute == settings.DEFAULT_RUNS_PER_MINUTE
    assert config.benchmarks_per_minute == settings.DEFAULT_BENCHMARKS_PER_MINUTE
    plain = publicmode.PublicConfig.from_env({"JAXPLAY_VISITOR_KEY": "cookie"})
    assert not plain.public and not plain.trusted_proxy and plain.visitor_key == "address"


# --- no server paths --------------------------------------------------------------------------


def test_scrub_replaces_every_server_place_with_a_placeholder() -> None:
    import site
    import sys

    site_packages = site.getsitepackages()[0]
    text = "\n".join(
        [
            f'File "{ROOT}/jaxplay/timing.py", line 3',
            f"{site_packages}/jax/_src/core.py",
            f"{sys.prefix}/bin/python",
            f"{tempfile.gettempdir()}/jaxplay-run-1/user_code.py",
            f"{os.path.expanduser('~')}/.cache/jax",
        ]
    )
    scrubbed = publicmode.scrub_paths(text)
    assert scrubbed.splitlines() == [
        'File "<app>/jaxplay/timing.py", line 3',
        "<site-packages>/jax/_src/core.py",
        "<venv>/bin/python" if sys.prefix != sys.base_prefix else scrubbed.splitlines()[2],
        "<tmp>/jaxplay-run-1/user_code.py",
        "~/.cache/jax",
    ]
    for place in (str(ROOT), site_packages, tempfile.gettempdir() + "/"):
        assert place not in scrubbed


def test_scrub_keeps_other_text_and_partial_names() -> None:
    tmp = tempfile.gettempdir()
    text = f"{tmp}file stays; x / y = 2; /usr/bin/bwrap is public knowledge"
    assert publicmode.scrub_paths(text) == text
    # A longer name that merely starts with the app's folder is not the app's folder (the
    # checkout may itself live under the temp dir, as a CI clone does).
    assert "<app>" not in publicmode.scrub_paths(f"{ROOT}frame")
    assert publicmode.scrub_paths("") == ""


def test_a_real_jax_error_loses_its_paths() -> None:
    def branchy(x):
        return x if x > 0 else -x

    with pytest.raises(jax.errors.TracerBoolConversionError) as info:
        jax.jit(branchy)(jnp.float32(1.0))
    message = str(info.value)
    assert str(ROOT) in message  # JAX names the file of the traced function...
    scrubbed = publicmode.scrub_paths(message)
    assert str(ROOT) not in scrubbed  # ...which a visitor then sees relative to the app
    assert "<app>/tests/hosting/test_publicmode.py" in scrubbed


def test_runner_results_are_scrubbed() -> None:
    pool = WorkerPool(RunnerConfig(sandbox="process", spares=0, public=False))
    try:
        where = f"{ROOT}/secret.py"
        raw = RunResult(
            ok=False,
            stdout=f"printed {where}",
            stderr=f"warning at {where}",
            error=RunError(kind="exception", message=f"no {where}", traceback=f'File "{where}"'),
            inspections={"jaxpr": {"error": f"at {where}:3", "lines": [where, 2]}},
        )
        clean = pool._scrubbed(raw)
        assert clean.error is not None
        assert clean.error.message == "no <app>/secret.py"
        assert clean.error.traceback == 'File "<app>/secret.py"'
        assert clean.stderr == "warning at <app>/secret.py"
        assert clean.inspections == {
            "jaxpr": {"error": "at <app>/secret.py:3", "lines": ["<app>/secret.py", 2]}
        }
        assert clean.stdout == raw.stdout  # a laptop shows what the code printed as printed
    finally:
        pool.shutdown()
    public = WorkerPool(RunnerConfig(sandbox="process", spares=0, public=True))
    try:
        assert public._scrubbed(raw).stdout == "printed <app>/secret.py"
    finally:
        public.shutdown()


# --- visitors ---------------------------------------------------------------------------------


def test_visitor_is_the_address_or_the_proxys_last_entry_or_the_session() -> None:
    direct = publicmode.PublicConfig.from_env({})
    proxied = publicmode.PublicConfig.from_env({"JAXPLAY_TRUSTED_PROXY": "1"})
    by_session = publicmode.PublicConfig.from_env({"JAXPLAY_VISITOR_KEY": "session"})

    def who(config, address=None, forwarded=()):
        return publicmode.visitor_from(
            address=address, forwarded_for=list(forwarded), session_id="s1", config=config
        )

    assert who(direct, "203.0.113.5") == "ip:203.0.113.5"
    # Without a trusted proxy the header is the client's word: ignored.
    assert who(direct, "203.0.113.5", ["198.51.100.1"]) == "ip:203.0.113.5"
    assert who(direct, None) == "session:s1"  # localhost: no address
    # Behind the proxy: the entry the proxy appended (the last), never the client's own claims.
    assert who(proxied, None, ["1.2.3.4, 198.51.100.7"]) == "ip:198.51.100.7"
    assert who(proxied, None, ["1.2.3.4", "198.51.100.8 "]) == "ip:198.51.100.8"
    assert who(proxied, "127.0.0.1", []) == "session:s1"
    assert who(by_session, "203.0.113.5", ["198.51.100.1"]) == "session:s1"


# --- rate limits ------------------------------------------------------------------------------


def test_runner_reads_its_run_limit_only_in_public_mode() -> None:
    assert RunnerConfig.from_env({}).runs_per_minute is None
    assert RunnerConfig.from_env({"JAXPLAY_PUBLIC": "1"}).runs_per_minute == 20
    env = {"JAXPLAY_PUBLIC": "1", "JAXPLAY_RUNS_PER_MINUTE": "5"}
    assert RunnerConfig.from_env(env).runs_per_minute == 5
    assert WorkerPool(RunnerConfig(sandbox="process", spares=0)).run_limiter is None


def test_runs_over_the_limit_are_refused_with_the_wait_named() -> None:
    clock = FakeClock()
    pool = WorkerPool(RunnerConfig(sandbox="process", spares=0, runs_per_minute=2))
    pool.run_limiter = RateLimiter(2, 60.0, clock=clock)
    try:
        assert pool.run_limiter.try_acquire("ann") == 0 and pool.run_limiter.try_acquire("ann") == 0
        result = pool.run("print(1)", visitor="ann")
        assert result.error is not None and result.error.kind == "refused"
        assert "at most 2" in result.error.message and "try again in 30 s" in result.error.message
        clock.now += 20
        result = pool.run("print(1)", visitor="ann")
        assert result.error is not None and "try again in 10 s" in result.error.message
        status = pool.status()
        assert status["running"] == status["starting"] == status["queued"] == 0  # nothing ran
        assert pool.run_limiter.try_acquire("bob") == 0  # another visitor is not affected
    finally:
        pool.shutdown()


def _as_visitor(visitor: str | None, fn) -> list[object]:
    """Run ``fn(progress)`` for ``visitor``; the throttle waits it was told of."""
    progress = Told(visitor)
    fn(progress)
    return progress.of("throttled")


def test_measurements_are_throttled_per_visitor_by_waiting() -> None:
    clock = FakeClock()
    measure_lock.set_throttle(RateLimiter(2, 60.0, clock=clock).try_acquire, sleep=clock.sleep)
    try:

        def three_measurements(progress: Told) -> None:
            for _ in range(2):
                # Nested: counted once (an inner hold names nobody, as a measurement's own do).
                with measure_lock.exclusive(progress), measure_lock.exclusive():
                    pass
            with measure_lock.exclusive(progress):  # the third in a minute waits its turn
                pass

        notices = _as_visitor("ann", three_measurements)
        assert clock.slept == [pytest.approx(30.0)] and notices == [pytest.approx(30.0)]
        # Another visitor has their own budget; no visitor (a background thread): no throttle.
        assert _as_visitor("bob", three_measurements) == [pytest.approx(30.0)]
        clock.slept.clear()
        for _ in range(5):
            with measure_lock.exclusive():
                pass
        assert clock.slept == []
    finally:
        measure_lock.set_throttle(None)
    assert _as_visitor("ann", three_measurements) == []  # off: no waiting at all
    assert clock.slept == []
    free: list[bool] = []

    def try_lock() -> None:
        got = measure_lock.MEASURE_LOCK.acquire(blocking=False)
        free.append(got)
        if got:
            measure_lock.MEASURE_LOCK.release()

    other = threading.Thread(target=try_lock)
    other.start()
    other.join()
    assert free == [True]  # every exclusive() released the lock


def test_the_server_wide_limit_holds_for_a_new_visitor_every_time() -> None:
    """A scripted client with a fresh session per request still meets the server's limit."""
    clock = FakeClock()
    per_visitor = RateLimiter(30, 60.0, clock=clock)
    server = RateLimiter(4, 60.0, clock=clock)
    measure_lock.set_throttle(publicmode.both_limits(per_visitor, server), sleep=clock.sleep)
    try:

        def one_measurement(progress: Told) -> None:
            with measure_lock.exclusive(progress):
                pass

        waits = [_as_visitor(f"session:{i}", one_measurement) for i in range(6)]
        assert waits[:4] == [[], [], [], []]  # four fresh visitors measure at once
        assert waits[4] == [pytest.approx(15.0)] and waits[5] == [pytest.approx(15.0)]
        # Waiting for the server did not use up the visitor's own budget.
        assert per_visitor._buckets["session:4"].tokens == pytest.approx(29.0)
    finally:
        measure_lock.set_throttle(None)


def test_apply_switches_the_throttle_with_the_mode() -> None:
    try:
        config = publicmode.apply({"JAXPLAY_PUBLIC": "1", "JAXPLAY_BENCHMARKS_PER_MINUTE": "7"})
        assert config.public and config.benchmarks_per_minute == 7
        assert measure_lock._throttle is not None
        assert publicmode.benchmark_limiter(7).capacity == 7
        assert not publicmode.apply({}).public
        assert measure_lock._throttle is None
    finally:
        measure_lock.set_throttle(None)


# --- the app in public mode -------------------------------------------------------------------


@pytest.fixture
def public_env(monkeypatch: pytest.MonkeyPatch):
    """Public mode without bubblewrap; the runner pool is rebuilt from it and removed after."""
    runner.shutdown()
    monkeypatch.setenv("JAXPLAY_PUBLIC", "1")
    monkeypatch.setenv("JAXPLAY_SANDBOX", "process")
    monkeypatch.setenv("JAXPLAY_RUNS_PER_MINUTE", "7")
    try:
        yield
    finally:
        runner.shutdown()
        measure_lock.set_throttle(None)


def test_public_mode_refuses_code_without_the_sandbox(public_env) -> None:
    result = runner.run_code("print('hello')", visitor="ann")
    assert not result.ok and result.error is not None and result.error.kind == "refused"
    assert "JAXPLAY_PUBLIC=1" in result.error.message and "bubblewrap" in result.error.message
    assert runner.status()["spares_ready"] == runner.status()["starting"] == 0  # none started

    at = open_page(catalog.find("code-lab"))
    assert_clean(at)
    assert any("bubblewrap" in e.value for e in at.error)
    assert at.button(key="code_lab_run").disabled
    # The sidebar shows the limits and the live queues.
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "Public server" in sidebar and "7 runs" in sidebar and "30 measurements" in sidebar
    assert f"{runner.Limits.timeout_s:g} s" in sidebar
    assert "0 running, 0 queued" in sidebar and "measurements waiting: 0" in sidebar
    assert measure_lock._throttle is not None


def test_outside_public_mode_the_sidebar_stays_quiet() -> None:
    at = open_page(catalog.HOME)
    assert_clean(at)
    assert not any("Public server" in c.value for c in at.sidebar.caption)
    assert measure_lock._throttle is None


def test_pages_show_errors_and_compiled_code_without_server_paths() -> None:
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        from pages import _ui

        from jaxplay.hosting import catalog

        _ui.show_error(FileNotFoundError(f"{catalog.ROOT}/data.bin"), "**Failed:** ")
        _ui.error_code(f'File "{catalog.ROOT}/jaxplay/x.py", line 1')

    at = AppTest.from_function(script).run()
    assert_clean(at)
    assert at.error[0].value == "**Failed:** `FileNotFoundError: <app>/data.bin`"
    assert at.code[0].value == 'File "<app>/jaxplay/x.py", line 1'

    # The jit page's optimized HLO lists the source files of its stack frames: shown without
    # the server's folders.
    import site

    at = open_page(catalog.find("jit"))
    assert_clean(at)
    shown = "\n".join(c.value for c in at.code)
    # (Which frames appear depends on who measured first: a visitor's script run shows
    # Streamlit's, the server's start-up warm-up thread does not; the app's own always do.)
    assert '"<app>/' in shown
    assert str(ROOT) not in shown and site.getsitepackages()[0] not in shown


def test_streamlit_never_shows_error_details() -> None:
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["showErrorDetails"] == "none"


def test_queue_status_never_starts_a_pool() -> None:
    runner.shutdown()
    assert runner.current_status() is None
    assert runner._shared_pool is None
    assert publicmode.queue_text(None, 0) == "Code runs: no runs yet · measurements waiting: 0"
    status = {"running": 2, "queued": 3}
    assert publicmode.queue_text(status, 1) == (
        "Code runs: 2 running, 3 queued · measurements waiting: 1"
    )


def test_runs_count_against_the_visitor_of_the_script_run(monkeypatch) -> None:
    seen: list[str | None] = []

    class Pool:
        def run(self, source: str, **kwargs: object) -> RunResult:
            seen.append(kwargs["visitor"])  # type: ignore[arg-type]
            return RunResult(ok=True)

    monkeypatch.setattr(runner, "get_pool", Pool)

    def page() -> None:
        runner.current_visitor.set("ip:203.0.113.5")
        runner.run_code("1")  # a page that passes no visitor (the walkthrough's examples)
        runner.run_code("1", visitor="session:abc")  # an explicit one wins

    contextvars.copy_context().run(page)
    runner.run_code("1")  # outside a script run: no visitor
    assert seen == ["ip:203.0.113.5", "session:abc", None]
