"""Every environment variable jaxplay reads, in one table: its name, default and meaning.

Why one table: an operator hosting the app for a room needs one place that lists every knob, and
the README must not drift from the code. The README's "Configuration" table is
:func:`markdown_table`'s output pasted between ``<!-- settings:start -->`` and
``<!-- settings:end -->``; a test greps the sources for ``JAXPLAY_*`` names and compares the
README's block with this table, so a new setting cannot go undocumented.

The readers of the settings (the runner, :mod:`jaxplay.hosting.environment`,
:mod:`jaxplay.hosting.snippets`, :mod:`jaxplay.hosting.publicmode`) keep their own parsing; the
defaults shown here come from the same constants they use wherever one exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from jaxplay.hosting import environment
from jaxplay.sandbox._results import Limits

#: Runs a visitor may start per minute in public mode (a burst of this many, then refilled).
DEFAULT_RUNS_PER_MINUTE = 20
#: Measurements (timed benchmarks) a visitor may start per minute in public mode.
DEFAULT_BENCHMARKS_PER_MINUTE = 30
#: Shares (snippets saved) one visitor may make per minute, on each app instance.
DEFAULT_SHARES_PER_MINUTE = 10
#: New snippets the whole snippet store accepts per hour (every visitor and instance together).
DEFAULT_SNIPPETS_PER_HOUR = 500
#: Total size of the stored snippets, in MB (MiB).
DEFAULT_SNIPPET_STORE_MB = 200
#: Days after which a snippet that nobody opened or shared again is deleted.
DEFAULT_SNIPPET_EXPIRY_DAYS = 30
#: Connections to a PostgreSQL snippet store each app instance opens at most.
DEFAULT_SNIPPET_DB_POOL = 4


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, its default (as text) and what it does."""

    name: str
    default: str
    meaning: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "JAXPLAY_PUBLIC",
        "0",
        "`1` for a server that others reach: running code is refused unless the bubblewrap "
        "sandbox is available, runs and benchmarks are rate-limited per visitor, the sidebar "
        "shows the limits and the queues, and error texts show no server paths.",
    ),
    Setting(
        "JAXPLAY_SANDBOX",
        "auto",
        "How Code Lab runs are isolated: `bwrap` (bubblewrap: no network, no server files), "
        "`process` (a plain child process: laptops only) or `auto` (bwrap when "
        "`/usr/bin/bwrap` exists).",
    ),
    Setting(
        "JAXPLAY_RUNNER_SPARES",
        "2",
        "Sandbox workers kept started and waiting (each a Python process with JAX imported), so "
        "a run does not pay JAX's start-up.",
    ),
    Setting(
        "JAXPLAY_RUNNER_CONCURRENCY",
        "CPU cores",
        "Code Lab runs executing at once; further runs wait in a first-come queue.",
    ),
    Setting(
        "JAXPLAY_RUN_TIMEOUT_S",
        f"{Limits.timeout_s:g}",
        "Wall-clock seconds one run may take.",
    ),
    Setting(
        "JAXPLAY_RUN_CPU_S",
        f"{Limits.cpu_s:g}",
        "CPU seconds one run may use, over all its threads.",
    ),
    Setting(
        "JAXPLAY_RUN_MEMORY_MB",
        f"{Limits.memory_mb}",
        "Memory (MB) one run may add on top of a started worker (CPU memory; GPU memory is "
        "bounded by `XLA_PYTHON_CLIENT_MEM_FRACTION`).",
    ),
    Setting(
        "JAXPLAY_RUNS_PER_MINUTE",
        f"{DEFAULT_RUNS_PER_MINUTE}",
        "Public mode: Code Lab runs one visitor may start per minute; more are refused with the "
        "time to wait.",
    ),
    Setting(
        "JAXPLAY_BENCHMARKS_PER_MINUTE",
        f"{DEFAULT_BENCHMARKS_PER_MINUTE}",
        "Public mode: timed measurements one visitor may start per minute; more wait their "
        "turn (the page says for how long).",
    ),
    Setting(
        "JAXPLAY_VISITOR_KEY",
        "address",
        "What counts as one visitor for the rate limits and the one-run-at-a-time rule: "
        "`address` (the client's IP address; a browser session where none is known) or "
        "`session` (each browser session: use it when a whole room reaches the server through "
        "one NAT address).",
    ),
    Setting(
        "JAXPLAY_TRUSTED_PROXY",
        "0",
        "`1` when the app sits behind your own reverse proxy: the client address is the last "
        "entry of `X-Forwarded-For` (only a proxy you run may set it).",
    ),
    Setting(
        "JAXPLAY_SNIPPET_DB",
        "`~/.local/share/jaxplay/snippets.sqlite3`",
        "Where the Code Lab's shared snippets are stored: a SQLite file (created on first use) "
        "or a `postgresql://user:password@host/database` URL, which several app instances can "
        "share (its tables are created on first use).",
    ),
    Setting(
        "JAXPLAY_SHARES_PER_MINUTE",
        f"{DEFAULT_SHARES_PER_MINUTE}",
        "Snippets one visitor may share per minute (counted by each app instance on its own); "
        "more are refused with the time to wait.",
    ),
    Setting(
        "JAXPLAY_SNIPPETS_PER_HOUR",
        f"{DEFAULT_SNIPPETS_PER_HOUR}",
        "New snippets the snippet store accepts per hour from all visitors together (counted in "
        "the database, so every instance sharing it shares this limit); sharing code that is "
        "already stored does not count.",
    ),
    Setting(
        "JAXPLAY_SNIPPET_STORE_MB",
        f"{DEFAULT_SNIPPET_STORE_MB}",
        "Total size (MB) of the stored snippets; when it is reached, Share is refused until old "
        "snippets expire.",
    ),
    Setting(
        "JAXPLAY_SNIPPET_EXPIRY_DAYS",
        f"{DEFAULT_SNIPPET_EXPIRY_DAYS}",
        "A snippet nobody has opened or shared for this many days is deleted; opening its link "
        "starts the count again.",
    ),
    Setting(
        "JAXPLAY_SNIPPET_DB_POOL",
        f"{DEFAULT_SNIPPET_DB_POOL}",
        "PostgreSQL snippet store only: connections each app instance opens to it at most.",
    ),
    Setting(
        "JAXPLAY_CPU_DEVICES",
        f"{environment.DEFAULT_CPU_DEVICES}",
        "Simulated CPU devices for the sharding demos (1 to "
        f"{environment.MAX_CPU_DEVICES}); set before JAX starts.",
    ),
    Setting(
        "XLA_PYTHON_CLIENT_PREALLOCATE",
        "false",
        "Set to `false` by the app unless given: the server and the sandbox workers share one "
        "GPU, so no process grabs most of its memory up front.",
    ),
    Setting(
        "XLA_PYTHON_CLIENT_MEM_FRACTION",
        "unset (JAX's 0.75)",
        "Largest share of GPU memory one process may take; passed on to every sandbox worker, "
        "so one run cannot take the memory other visitors' runs need.",
    ),
    Setting(
        "JAX_PLATFORMS",
        "unset (all)",
        "JAX's backend choice (e.g. `cpu`); passed on to the sandbox workers.",
    ),
    Setting(
        "CUDA_VISIBLE_DEVICES",
        "unset (all)",
        "The GPUs JAX may use; passed on to the sandbox workers.",
    ),
    Setting(
        "JAX_ENABLE_X64",
        "unset (false)",
        "JAX's 64-bit mode; passed on to the sandbox workers (the pages assume float32).",
    ),
)


def names() -> tuple[str, ...]:
    """The names of every setting, in table order."""
    return tuple(s.name for s in SETTINGS)


def markdown_table() -> str:
    """The settings as a Markdown table (what the README shows between its settings markers)."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for s in SETTINGS:
        default = s.default if s.default.startswith("`") else f"`{s.default}`"
        if s.default.startswith(("unset", "CPU cores")):
            default = s.default
        rows.append(f"| `{s.name}` | {default} | {s.meaning} |")
    return "\n".join(rows)


def flag(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """A yes/no setting: ``1``, ``true``, ``yes`` or ``on`` (any case) mean yes."""
    env = os.environ if environ is None else environ
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def positive_int(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """A whole number above zero; a missing, malformed or non-positive value gives ``default``.

    A typo in a deployment's environment must not stop the app from starting.
    """
    env = os.environ if environ is None else environ
    try:
        value = int(env.get(name, "").strip() or default)
    except ValueError:
        return default
    return value if value > 0 else default


def choice(name: str, options: tuple[str, ...], environ: Mapping[str, str] | None = None) -> str:
    """One of ``options`` (the first is the default; anything else falls back to it)."""
    env = os.environ if environ is None else environ
    value = env.get(name, "").strip().lower()
    return value if value in options else options[0]


def public_mode(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``JAXPLAY_PUBLIC`` asks for public mode."""
    return flag("JAXPLAY_PUBLIC", environ)
