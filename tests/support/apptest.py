"""Opening a page as a visitor would, in Streamlit's ``AppTest`` (no server, no browser)."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from jaxplay.hosting import catalog

APP_TIMEOUT_S = 120


def open_page(spec: catalog.PageSpec, **session: object) -> AppTest:
    """Run ``app.py``, switch to ``spec`` and run it, as a visitor clicking its link would.

    Keyword arguments are put into ``session_state`` before the page runs (widget values by key).
    """
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(spec.path)
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    return at


def editor(at: AppTest, key: str = "code_lab_editor") -> dict[str, Any]:
    """What the page sent to the code editor ``key`` (``pages/_editor.py``) in the last run.

    AppTest runs no JavaScript, so a custom component is opaque to it; this is the component's
    data: ``doc`` (the code the editor shows), ``revision`` and ``error_line``.
    """
    found = [e for e in at.get("bidi_component") if e.key == key]
    assert len(found) == 1, f"{len(found)} editors with key {key!r}"
    return json.loads(found[0].proto.json)


def editor_text(at: AppTest, key: str = "code_lab_editor") -> str:
    """The code the editor ``key`` shows after the last run (the browser has no edits of its own
    in an AppTest)."""
    return editor(at, key)["doc"]


def assert_clean(at: AppTest) -> None:
    """No exception element and no uncaught error on the page."""
    assert not at.exception, [e.value for e in at.exception]


def timed_calls(monkeypatch: Any) -> list[str]:
    """The names of the functions the page hands to ``sandbox.timed`` (where timed work runs:
    the compute worker), collected as the page runs; the calls still go through."""
    from jaxplay import sandbox

    ran: list[str] = []
    timed = sandbox.timed

    def spy(function: Any, *args: Any, **kwargs: Any) -> Any:
        ran.append(function.__name__)
        return timed(function, *args, **kwargs)

    monkeypatch.setattr(sandbox, "timed", spy)
    return ran
