"""Public mode (``JAXPLAY_PUBLIC=1``): what changes when the app is open to a room or the web.

A server that others reach must (1) never run code outside the bubblewrap sandbox (the runner
refuses, see :meth:`jaxplay.sandbox.WorkerPool.refusal`), (2) keep one visitor from
starving the others (per-visitor rate limits on Code Lab runs, enforced in the runner, and on timed
measurements, enforced in :func:`jaxplay.core.measure_lock.exclusive`), (3) say what its limits and
queues are, and (4) never show where its files live: error texts from JAX, from Python and from
sandbox workers carry absolute paths (``.../site-packages/jax/_src/...``), which tell an attacker
the layout of the machine. :func:`scrub_paths` replaces them with short placeholders.

This module is pure (no Streamlit): ``app.py`` calls :func:`apply` at the start of each run and
``pages/_ui.py`` turns the request's address into a visitor id with :func:`visitor_from`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import site
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from jaxplay.core import measure_lock
from jaxplay.core.i18n import _
from jaxplay.hosting import catalog, settings
from jaxplay.hosting.ratelimit import RateLimiter


def _forms(path: str | Path) -> set[str]:
    """A path as written and as resolved (symlinks), without a trailing slash."""
    text = str(path).rstrip("/")
    forms = {text}
    with contextlib.suppress(OSError, ValueError):
        forms.add(os.path.realpath(text).rstrip("/"))
    return {f for f in forms if len(f) > 1}


@functools.cache
def _replacements() -> tuple[tuple[re.Pattern[str], str], ...]:
    """(pattern, placeholder) pairs, longest path first so the most specific one wins."""
    places: dict[str, str] = {}

    def add(path: str | Path | None, placeholder: str) -> None:
        if path:
            for form in _forms(path):
                places.setdefault(form, placeholder)

    site_dirs = [*site.getsitepackages(), site.getusersitepackages()]
    site_dirs += [sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib")]
    for directory in site_dirs:
        add(directory, "<site-packages>")
    add(sysconfig.get_paths().get("stdlib"), "<python>")
    add(catalog.ROOT, "<app>")
    add(sys.prefix, "<venv>")
    if sys.base_prefix != sys.prefix and sys.base_prefix not in ("/usr", "/usr/local"):
        add(sys.base_prefix, "<python>")
    add(tempfile.gettempdir(), "<tmp>")
    add(os.path.expanduser("~"), "~")
    ordered = sorted(places.items(), key=lambda item: len(item[0]), reverse=True)
    return tuple(
        (re.compile(rf"(?<![\w.-]){re.escape(path)}(?=/|\\|$|[^\w.-])"), placeholder)
        for path, placeholder in ordered
    )


def scrub_paths(text: str) -> str:
    """``text`` with the server's own paths replaced by placeholders.

    The repository becomes ``<app>``, the virtualenv ``<venv>``, its site-packages
    ``<site-packages>``, Python's standard library ``<python>``, the temp dir ``<tmp>`` and the
    home directory ``~``. Only whole path components match (``/tmpfile`` stays as it is), and
    the most specific place wins (site-packages inside the virtualenv inside the home).
    """
    if not text or "/" not in text:
        return text
    for pattern, placeholder in _replacements():
        text = pattern.sub(placeholder, text)
    return text


# --- rate limits ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublicConfig:
    """The public-mode settings in force (see :mod:`jaxplay.hosting.settings`)."""

    public: bool
    runs_per_minute: int
    benchmarks_per_minute: int
    server_benchmarks_per_minute: int
    visitor_key: str
    trusted_proxy: bool

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PublicConfig:
        return cls(
            public=settings.public_mode(environ),
            runs_per_minute=settings.runs_per_minute(environ),
            benchmarks_per_minute=settings.benchmarks_per_minute(environ),
            server_benchmarks_per_minute=settings.server_benchmarks_per_minute(environ),
            visitor_key=settings.visitor_key(environ),
            trusted_proxy=settings.trusted_proxy(environ),
        )


_limiters: dict[tuple[int, bool], RateLimiter] = {}
_limiters_lock = threading.Lock()
#: The one "visitor" of the server-wide bucket.
SERVER = "*server*"


def benchmark_limiter(per_minute: int, server: bool = False) -> RateLimiter:
    """The process-wide limiter of measurements at ``per_minute`` (kept across script runs):
    per visitor, or (``server``) one bucket for everyone."""
    with _limiters_lock:
        if (per_minute, server) not in _limiters:
            _limiters[per_minute, server] = RateLimiter(per_minute, 60.0)
        return _limiters[per_minute, server]


def apply(environ: Mapping[str, str] | None = None) -> PublicConfig:
    """Read the settings and switch the measurement throttle on (public) or off, and the
    host-wide measurement turn (``JAXPLAY_MEASURE_LOCK``) on or off.

    ``app.py`` calls this at the start of every script run, so the throttle always follows the
    environment (a test that sets ``JAXPLAY_PUBLIC`` and then unsets it leaves no throttle on).
    """
    config = PublicConfig.from_env(environ)
    measure_lock.share_with_host(settings.measure_lock(environ) or None)
    if config.public:
        measure_lock.set_throttle(
            both_limits(
                benchmark_limiter(config.benchmarks_per_minute),
                benchmark_limiter(config.server_benchmarks_per_minute, server=True),
            )
        )
    else:
        measure_lock.set_throttle(None)
    return config


def both_limits(per_visitor: RateLimiter, server: RateLimiter) -> Callable[[str], float]:
    """A throttle that waits for the visitor's own limit and then for the server's.

    The server-wide bucket is what holds for a scripted client that comes back as a new visitor
    every time (``JAXPLAY_VISITOR_KEY=session``); a visitor's token is given back when the
    server's limit makes them wait, so waiting does not count against them.
    """

    def try_acquire(visitor: str) -> float:
        wait = per_visitor.try_acquire(visitor)
        if wait > 0:
            return wait
        wait = server.try_acquire(SERVER)
        if wait > 0:
            per_visitor.refund(visitor)
        return wait

    return try_acquire


# --- visitors ---------------------------------------------------------------------------------


def visitor_from(
    *,
    address: str | None,
    forwarded_for: list[str],
    session_id: str,
    config: PublicConfig,
) -> str:
    """Who is asking, as a key for the rate limits and the runner's one-run-per-visitor rule.

    Arguments:
        address: the connection's address (Streamlit's ``st.context.ip_address``: ``None`` on
            localhost).
        forwarded_for: every ``X-Forwarded-For`` header of the request, in order.
        session_id: a random id kept in the browser session, the fallback.
        config: :class:`PublicConfig`; ``visitor_key="session"`` always uses ``session_id``.

    Behind a trusted proxy (``JAXPLAY_TRUSTED_PROXY=1``) the client is the *last* address of
    ``X-Forwarded-For``: the one the proxy itself saw and appended; earlier entries are whatever
    the client chose to send and prove nothing. Without a trusted proxy the header is ignored.
    """
    if config.visitor_key == "address":
        if config.trusted_proxy:
            entries = [e.strip() for h in forwarded_for for e in h.split(",") if e.strip()]
            if entries:
                return f"ip:{entries[-1]}"
        elif address:
            return f"ip:{address}"
    return f"session:{session_id}"


# --- what the sidebar shows -------------------------------------------------------------------


def limits_text(config: PublicConfig, timeout_s: float, cpu_s: float, memory_mb: int) -> str:
    """One Markdown line with every limit a visitor meets on this server."""
    return _(
        "Each code run: {timeout} s, {cpu} CPU s, {memory} MB memory. "
        "Per visitor: {runs} runs and {measurements} measurements a minute; "
        "the whole server: {server} measurements a minute."
    ).format(
        timeout=f"{timeout_s:g}",
        cpu=f"{cpu_s:g}",
        memory=f"{memory_mb:,}",
        runs=config.runs_per_minute,
        measurements=config.benchmarks_per_minute,
        server=config.server_benchmarks_per_minute,
    )


def queue_text(runner_status: Mapping[str, object] | None, measurements_waiting: int) -> str:
    """The live queues: Code Lab runs running and waiting, measurements waiting for the lock."""
    if runner_status is None:
        runs = _("no runs yet")
    else:
        runs = _("{running} running, {queued} queued").format(
            running=runner_status.get("running", 0), queued=runner_status.get("queued", 0)
        )
    return _("Code runs: {runs} · measurements waiting: {waiting}").format(
        runs=runs, waiting=measurements_waiting
    )


#: How often the sidebar's queue line refreshes itself while there is a queue to watch.
QUEUE_REFRESH_S = 5.0


def queue_refresh_s(
    runner_status: Mapping[str, object] | None, measurements_waiting: int
) -> float | None:
    """Seconds between refreshes of the queue line, or ``None``: drawn once per run.

    Only while code runs or measurements are running or waiting: an idle room's sessions then
    cost the server nothing between their own runs (every refresh is a script run).
    """
    status = runner_status or {}
    counts = [status.get(name, 0) for name in ("running", "queued")]
    busy = any(isinstance(n, int) and n > 0 for n in counts)
    return QUEUE_REFRESH_S if busy or measurements_waiting else None
