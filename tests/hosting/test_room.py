"""Two server processes behind HAProxy (``jaxplay.hosting.serve``): sticky sessions, shared links.

Visitors here speak Streamlit's websocket protocol (``pages/_visitor.py``), no browser. The
proxy's cookie names the process that served the visitor first; a visitor that sends another
process's cookie is sent there, which is how these tests reach a chosen process.
"""

from __future__ import annotations

from pages._visitor import Visitor

import contextlib
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from jaxplay.hosting import catalog, serve
from tests.support.browser import require_haproxy

require_haproxy()

#: Every visitor its own visitor (the tests' connections all come from 127.0.0.1).
ENV = {"JAXPLAY_PUBLIC": "1", "JAXPLAY_VISITOR_KEY": "session"}


def test_the_config_puts_one_cookie_per_process_and_haproxy_accepts_it(tmp_path: Path) -> None:
    config = serve.haproxy_config(8600, [8601, 8602])
    assert f"cookie {serve.COOKIE} insert" in config
    assert "server s0 127.0.0.1:8601 check cookie s0" in config
    assert "server s1 127.0.0.1:8602 check cookie s1" in config
    assert "option httpchk GET /_stcore/health" in config
    assert "cache-use static if static_file" in config
    path = tmp_path / "haproxy.cfg"
    path.write_text(config, encoding="utf-8")
    haproxy = serve.haproxy_path()
    assert haproxy is not None
    checked = subprocess.run([haproxy, "-c", "-f", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[serve.Room]:
    folder = tmp_path_factory.mktemp("room")
    with serve.Room(
        processes=2,
        env=ENV,
        snippet_db=str(folder / "snippets.sqlite3"),
        result_db=str(folder / "results.sqlite3"),
    ) as room:
        assert room.proxied and len(room.pids) == 2
        yield room


def _on(room: serve.Room, process: int) -> Visitor:
    """A visitor the proxy sends to process ``process`` (by its cookie)."""
    visitor = Visitor(room.url)
    visitor.cookie = f"{serve.COOKIE}=s{process}"
    return visitor


def test_the_proxy_spreads_new_visitors_and_sets_its_cookie(room: serve.Room) -> None:
    cookies = set()
    for _ in range(4):
        visitor = Visitor(room.url)
        visitor.connect()
        visitor.close()
        cookies.add(visitor.cookie)
    assert cookies == {f"{serve.COOKIE}=s0", f"{serve.COOKIE}=s1"}


def test_a_session_stays_on_its_process_across_reruns_and_reconnects(room: serve.Room) -> None:
    visitor = Visitor(room.url)
    assert not visitor.open("").errors
    session = visitor.session_id
    assert session and visitor.cookie.startswith(f"{serve.COOKIE}=s")
    for _ in range(3):
        assert not visitor.open("sharp-bits").errors
        assert visitor.session_id == session
    # A reconnect asks for the same session: only the process that holds it can give it back.
    for _ in range(3):
        visitor.reconnect()
        assert not visitor.open("").errors
        assert visitor.session_id == session
    # The same session id sent to the other process is unknown there: a new session begins.
    other = "s1" if visitor.cookie.endswith("s0") else "s0"
    stranger = _on(room, int(other[1]))
    stranger.session_id = session
    stranger.open("")
    assert stranger.session_id != session


def test_a_link_shared_on_one_process_opens_on_the_other(room: serve.Room) -> None:
    author = _on(room, 0)
    author.open("code-lab")
    shared = author.click("code_lab_share")
    assert not shared.errors, shared.errors
    links = [m for t in shared.texts if (m := re.search(r"code-lab\?snippet=(\w+)", t))]
    assert links, shared.texts
    snippet = links[0].group(1)

    reader = _on(room, 1)
    opened = reader.open("code-lab", query_string=f"snippet={snippet}")
    assert not opened.errors, opened.errors
    assert "Loaded the shared snippet." in opened.texts, opened.texts
    # A link nobody made is refused on that process, so the check above can fail.
    missing = _on(room, 1).open("code-lab", query_string="snippet=nosuchsnippet0")
    assert "Loaded the shared snippet." not in missing.texts


def test_a_result_computed_on_one_process_is_read_on_the_other(room: serve.Room) -> None:
    """The launcher gives every process the one result store: the vmap page's result for these
    settings is computed on process 0, and process 1 reads it (its count stays at one)."""
    import sqlite3

    first = _on(room, 0).open("vmap")
    assert not first.errors, first.errors
    db = room.servers[0].env["JAXPLAY_RESULT_DB"]
    assert all(server.env["JAXPLAY_RESULT_DB"] == db for server in room.servers)
    # ... and their measurements take turns where their cores overlap (one lock per core).
    lock = room.servers[0].env["JAXPLAY_MEASURE_LOCK"]
    assert lock and all(server.env["JAXPLAY_MEASURE_LOCK"] == lock for server in room.servers)

    def computations() -> dict[str, int]:
        """The vmap page's results (a public server also measures the jit page's default view
        in the background, into the same store, meanwhile)."""
        with contextlib.closing(sqlite3.connect(db)) as connection:
            query = "SELECT key, computations FROM results WHERE kind LIKE 'vmap.%'"
            rows = connection.execute(query).fetchall()
        return dict(rows)

    computed = computations()
    assert computed and all(n == 1 for n in computed.values()), computed
    second = _on(room, 1).open("vmap")
    assert not second.errors, second.errors
    assert computations() == computed


#: How Streamlit 1.67 marks its hashed static files.
IMMUTABLE = "public, immutable, max-age=31536000"


def _get(url: str, cookie: str | None = None) -> tuple[dict[str, list[str]], bytes]:
    headers = {"Accept-Encoding": "gzip, deflate, br, zstd"}  # as a browser asks
    request = urllib.request.Request(url, headers=headers | ({"Cookie": cookie} if cookie else {}))
    with urllib.request.urlopen(request, timeout=30) as response:
        headers: dict[str, list[str]] = {}
        for name, value in response.headers.items():
            headers.setdefault(name.lower(), []).append(value)
        return headers, response.read()


def test_the_proxy_serves_streamlits_files_from_its_memory_and_never_a_cookie(
    room: serve.Room,
) -> None:
    """A room's browsers each fetch Streamlit's 25 MB of scripts once: the proxy keeps them, so
    the processes' Python serves each file once, and a kept answer carries nobody's cookie."""
    header = serve.CACHE_HEADER.lower()
    page_headers, page = _get(room.url + "/")
    assert header not in page_headers  # the page itself always comes from a process
    assets = re.findall(r'src="\.?/?(static/js/[^"]+\.js)"', page.decode())
    assert assets, "the page names no script"
    asset = room.url + "/" + assets[0]
    first, body = _get(asset)  # no cookie: the process's answer inserts one
    assert "set-cookie" in first
    again, body_again = _get(asset)
    assert again.get(header) == ["hit"], again
    assert "set-cookie" not in again
    assert body_again == body
    for name in ("content-type", "etag"):  # what a browser goes by
        assert again[name] == first[name], name
    # The process's own caching; the first answer also has HAProxy's "private" (``nocache``: it
    # carried the inserted cookie), which the kept one does not.
    assert again["cache-control"] == first["cache-control"][:1] == [IMMUTABLE]
    with_cookie, _ = _get(asset, f"{serve.COOKIE}=s1")
    assert with_cookie.get(header) == ["hit"] and "set-cookie" not in with_cookie
    health, _ = _get(room.url + serve.HEALTH)
    assert header not in health
    # Only /static/: the icon is as cacheable ("public, immutable"), yet always the process's.
    for _ in range(2):
        icon, _ = _get(room.url + "/favicon.png")
        assert "immutable" in icon["cache-control"][0]
        assert header not in icon


def test_the_static_cache_benchmark_loads_what_a_first_view_fetches(room: serve.Room) -> None:
    """``benchmarks/static_cache.py`` keeps working: a first load's files, then all but the page
    served by the proxy."""
    from benchmarks import static_cache

    assert room.proxy is not None and room.proxy.process is not None
    paths = static_cache.files_the_page_names(room.servers[0].url)
    assert paths[0] == "" and any(p.startswith("static/js/PlotlyChart.") for p in paths)
    result = static_cache.measure(room.url, paths, 2, room.pids, room.proxy.process.pid)
    assert result["hits"][-1] == len(paths) - 1  # the page itself is always the process's
    assert result["bytes"] > 1_000_000


def test_the_launcher_shares_the_cores_out_equally_and_disjointly() -> None:
    assert serve.core_shares(range(16), 4) == [set(range(i, i + 4)) for i in (0, 4, 8, 12)]
    assert serve.core_shares([0, 1, 2, 3, 4, 5, 6], 3) == [{0, 1}, {2, 3}, {4, 5}]  # 6 left
    assert serve.core_shares([3, 1], 2) == [{1}, {3}]
    assert serve.core_shares([0, 1], 3) == [] and serve.core_shares(range(8), 1) == []


def _threads_cores(pid: int) -> set[str]:
    """The cores every thread of ``pid`` and of its descendants may run on, as the kernel says."""
    from jaxplay.hosting import settings

    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread or child that ended meanwhile
            found.add(settings.cpu_list(os.sched_getaffinity(int(task.name))))
            for child in (task / "children").read_text().split():
                found |= _threads_cores(int(child))
    return found


def test_each_process_measures_on_cores_of_its_own_and_says_which(room: serve.Room) -> None:
    """Two processes measuring at once never overlap on a core: the launcher pins each to its
    share (every thread, XLA's and the sandbox's included, as the kernel reports them), the
    sidebar of each says which, and their measurement locks are those cores'."""
    from jaxplay.hosting import environment, settings

    if not room.shares:
        pytest.skip("fewer cores than processes: they share every core and take turns")
    assert not room.shares[0] & room.shares[1]
    for i, share in enumerate(room.shares):
        shown = _on(room, i).open("grad")  # runs JAX in that process
        assert not shown.errors, shown.errors
        assert any(environment.cores_text(share) in t for t in shown.texts), shown.texts
        assert _threads_cores(room.pids[i]) == {settings.cpu_list(share)}


def test_an_idle_room_asks_no_browser_to_refresh_the_sidebar(room: serve.Room) -> None:
    """No code run and no measurement waits here: the queue line sets no fragment timer."""
    visitor = Visitor(room.url)
    shown = visitor.open("sharp-bits")
    assert not shown.errors
    assert any("measurements waiting: 0" in t for t in shown.texts), shown.texts
    assert shown.auto_reruns == {} and visitor.timers == {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_launcher_serves_until_sigterm_then_stops_every_process() -> None:
    port = serve.free_port()
    launcher = subprocess.Popen(
        [sys.executable, "-m", "jaxplay.hosting.serve", "--processes", "2", "--port", str(port)],
        cwd=catalog.ROOT,
        env={**os.environ, **ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        line = launcher.stdout.readline()  # printed once the room answers
        assert f"jaxplay on http://127.0.0.1:{port}" in line, line
        assert serve.healthy(f"http://127.0.0.1:{port}")
        children = [
            int(c)
            for c in Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()
        ]
        assert len(children) == 3  # two servers and the proxy
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 0
        assert not any(_alive(pid) for pid in children)
        assert not serve.healthy(f"http://127.0.0.1:{port}", timeout_s=1)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_the_proxy_refuses_the_upload_route(room: serve.Room) -> None:
    """No page takes a file; the proxy answers an upload itself, before any process reads it."""
    request = urllib.request.Request(
        room.url + "/_stcore/upload_file/some-session/some-file", data=b"x" * 1_000, method="PUT"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
