"""The room's warm-up: which views it opens, when it runs, and that a room's first visits then
find their results computed (counted in the result store, not timed)."""

from __future__ import annotations

from pages._visitor import Visitor

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from jaxplay.hosting import catalog, serve, warm_up
from jaxplay.hosting.warm_up import Choices, Seen, View

#: A made-up page: three tabs (the second reveals two more) and a preset box of three choices,
#: shown on every view.
PRESETS = {"p_preset": Choices("one", ("one", "two", "three"))}


def _site(view: View) -> Seen:
    params = dict(view.params)
    tabs = {"p_tab": Choices("A", ("A", "B", "C"))}
    if params.get("p_tab") == "B":
        tabs["p_inner"] = Choices("x", ("x", "y"))
    return Seen(tabs=tabs, boxes={**PRESETS, "p_size": Choices("1", ("1", "2"))})


def test_the_tour_opens_every_tab_and_each_presets_first_view_once() -> None:
    opened: list[str] = []

    def open_view(view: View) -> Seen:
        opened.append(str(view))
        return _site(view)

    report = warm_up.tour(open_view, ["p"])
    assert opened == [
        "p",
        "p?p_tab=B",
        "p?p_tab=C",
        "p?p_preset=two",
        "p?p_preset=three",
        "p?p_inner=y&p_tab=B",
    ]
    # A select box that is not a preset box (p_size) is left at its default.
    assert not any("p_size" in v for v in opened)
    assert report.left == 0 and not report.failed
    assert report.summary().startswith("warm-up: 6 views opened in ")


def test_the_tour_is_bounded_and_reports_failures() -> None:
    def open_view(view: View) -> Seen:
        seen = _site(view)
        return Seen(seen.tabs, seen.boxes, ("exception: boom",) if view.params else ())

    report = warm_up.tour(open_view, ["p", "q"], max_views=3)
    assert [str(v) for v, _ in report.opened] == ["p", "q", "p?p_tab=B"]
    assert report.left > 0 and len(report.failed) == 1
    assert "1 failed" in report.summary() and "left out" in report.summary()


@pytest.mark.parametrize(
    "value,public,expected",
    [
        ("", False, ()),
        ("auto", True, tuple(s.url_path for s in catalog.PAGES)),
        ("on", False, tuple(s.url_path for s in catalog.PAGES)),
        ("OFF", True, ()),
        ("vmap, jit,nosuchpage", False, ("jit", "vmap")),  # in the navigation's order
    ],
)
def test_the_setting_names_the_pages(value: str, public: bool, expected: tuple) -> None:
    environ = {"JAXPLAY_WARM_UP": value, "JAXPLAY_PUBLIC": "1" if public else "0"}
    assert warm_up.pages_to_warm(environ) == expected


def test_one_warm_up_per_host(tmp_path: Path) -> None:
    lock = str(tmp_path / "measure.lock.warm-up")
    assert warm_up.lock_file({"JAXPLAY_MEASURE_LOCK": str(tmp_path / "measure.lock")}) == lock
    assert warm_up.lock_file({}) is None
    with warm_up.host_turn(lock) as first:
        assert first
        turns: list[bool] = []

        def other() -> None:  # another process's warm-up, meanwhile (flock is per open file)
            with warm_up.host_turn(lock) as ours:
                turns.append(ours)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert turns == [False]
    with warm_up.host_turn(lock) as again:
        assert again
    with warm_up.host_turn(None) as alone:
        assert alone


def test_a_server_is_warmed_where_it_listens() -> None:
    assert warm_up.server_url("0.0.0.0", 8501) == "http://127.0.0.1:8501"
    assert warm_up.server_url("", 8502, "/jaxplay/") == "http://127.0.0.1:8502/jaxplay"
    assert warm_up.server_url("::1", 8503) == "http://[::1]:8503"
    assert warm_up.server_url("10.0.0.5", 80) == "http://10.0.0.5:80"


def _computations(db: str, page: str) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        rows = connection.execute(
            "SELECT key, computations FROM results WHERE kind LIKE ? AND state = 'done'",
            (f"{page}.%",),
        ).fetchall()
    return dict(rows)


@pytest.mark.timeout(600)
def test_a_room_warms_its_pages_before_anyone_comes(tmp_path: Path) -> None:
    """The launcher starts the warm-up as soon as the room answers; afterwards a visitor's every
    vmap tab reads what the warm-up stored (no result computed a second time)."""
    db = str(tmp_path / "results.sqlite3")
    with serve.Room(1, env={"JAXPLAY_WARM_UP": "vmap"}, result_db=db) as room:
        assert room.warming is not None
        assert room.warming.wait(timeout=540) == 0
        computed = _computations(db, "vmap")
        assert computed and all(n == 1 for n in computed.values()), computed
        visitor = Visitor(room.url)
        first = visitor.open("vmap")
        assert not first.errors, first.errors
        bar = first.tabs["vmap_tab"]
        assert len(bar.labels) > 1 and bar.default == bar.labels[0]
        for label in bar.labels[1:]:
            shown = Visitor(room.url).open("vmap", f"vmap_tab={label}")
            assert not shown.errors, (label, shown.errors)
        assert _computations(db, "vmap") == computed


@pytest.mark.timeout(300)
def test_a_server_on_its_own_warms_when_its_first_visitor_comes(tmp_path: Path) -> None:
    """``streamlit run app.py`` alone: the first run starts the warm-up, once (its log says so)."""
    log = tmp_path / "server.log"
    with log.open("wb") as out, serve.Server(env={"JAXPLAY_WARM_UP": "sharp-bits"}, log=out) as s:
        for _ in range(2):
            assert not Visitor(s.url).open("").errors
        started = time.monotonic()
        while "warm-up: 1 views opened" not in log.read_text(errors="replace"):
            assert time.monotonic() - started < 240, log.read_text(errors="replace")[-2000:]
            time.sleep(0.5)
    text = log.read_text(errors="replace")
    assert text.count("warm-up: sharp-bits ") == 1, text[-2000:]


def test_a_bar_within_the_default_tab_is_not_crossed_with_its_neighbours() -> None:
    """The tracing page's shape: a view bar inside its first tab, shown with the page's bar."""

    def open_view(view: View) -> Seen:
        tabs = {"t_tab": Choices("S", ("S", "T"))}
        if dict(view.params).get("t_tab", "S") == "S":
            tabs["t_view"] = Choices("E", ("E", "G"))
        return Seen(tabs=tabs)

    report = warm_up.tour(open_view, ["t"])
    assert [str(v) for v, _ in report.opened] == ["t", "t?t_tab=T", "t?t_view=G"]


def test_a_view_that_raises_is_reported_and_the_tour_goes_on() -> None:
    def open_view(view: View) -> Seen:
        if view.params == (("p_tab", "B"),):
            raise ConnectionResetError("the server went away")
        return _site(view)

    report = warm_up.tour(open_view, ["p"])
    assert len(report.opened) == 5  # every view but the inner tabs only "B" reveals
    [(view, failed)] = report.failed
    assert str(view) == "p?p_tab=B"
    assert failed.errors == ("ConnectionResetError: the server went away",)


class _FakeVisitor:
    """Records what the warm-up's opener asks of a visitor."""

    calls: list[tuple] = []

    def __init__(self, url: str, timeout_s: float) -> None:
        pass

    def open(self, page: str, query_string: str = ""):
        self.calls.append(("open", page, query_string))
        from pages._visitor import Run

        return Run(seconds=1.0)

    def change(self, key: str, value: object):
        self.calls.append(("change", key, value))
        from pages._visitor import Run

        return Run(seconds=2.0)

    def close(self) -> None:
        self.calls.append(("close",))


def test_a_preset_view_is_opened_as_a_visitor_chooses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page may apply a preset only when its box changes (Compose's ``on_change``): the view is
    the one it came from, then the choice made in the box, in one session."""
    import pages._warm_up as command

    _FakeVisitor.calls = []
    monkeypatch.setattr(command, "Visitor", _FakeVisitor)
    open_view = command.opener("http://127.0.0.1:9")
    seen = open_view(View("compose", (("compose_preset", "hessian"), ("compose_tab", "Builder"))))
    assert _FakeVisitor.calls == [
        ("open", "compose", "compose_tab=Builder"),
        ("change", "compose_preset", "hessian"),
        ("close",),
    ]
    assert seen.seconds == 3.0 and not seen.errors
    _FakeVisitor.calls = []
    open_view(View("jit", (("jit_tab", "Sweep"),)))
    assert _FakeVisitor.calls == [("open", "jit", "jit_tab=Sweep"), ("close",)]


def test_a_warm_up_that_cannot_start_is_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tries = []

    def launch(*args: object) -> None:
        tries.append(args)
        raise OSError("Resource temporarily unavailable")

    monkeypatch.setattr(warm_up, "_started", None)
    monkeypatch.setattr(warm_up, "_start_failed", False)
    monkeypatch.setattr(warm_up, "launch", launch)
    environ = {"JAXPLAY_WARM_UP": "on"}
    assert warm_up.start("http://127.0.0.1:9", environ) is None
    assert warm_up.start("http://127.0.0.1:9", environ) is None
    assert len(tries) == 1
    assert capsys.readouterr().err.count("warm-up: could not start") == 1


def test_a_lock_file_that_cannot_be_opened_skips_the_warm_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pages._warm_up as command

    missing = tmp_path / "no-such-folder" / "measure.lock.warm-up"
    assert command.main(["--url", "http://127.0.0.1:9", "--lock", str(missing)]) == 1
    assert "cannot open the lock file" in capsys.readouterr().err
