"""Present mode (``?present=1``): on for the session, across page switches, kept in the address so
a copied link carries it, off with ``?present=0`` or the sidebar's switch; never "ignored"."""

from __future__ import annotations

from pages import _ui

from typing import Any

from streamlit.testing.v1 import AppTest

from jaxplay.hosting import catalog
from tests.support.apptest import APP_TIMEOUT_S, assert_clean

PRNG = catalog.find("prng")


def _open(spec: catalog.PageSpec, **params: str) -> AppTest:
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(spec.path)
    at.query_params.update(params)
    at.run()
    return at


def styled(at: AppTest) -> bool:
    """Whether the run sent the present-mode styles."""
    return any(_ui.PRESENT_CSS.strip() in h.proto.body for h in at.get("html"))


def param(at: AppTest, name: str) -> str | None:
    """A query parameter's value (AppTest keeps a link's as lists, the script's as strings)."""
    value = at.query_params.get(name)
    return value[-1] if isinstance(value, list) else value


def _ignored(at: Any) -> list[str]:
    return [w.value for w in at.warning if "ignored" in w.value]


def test_a_present_link_turns_it_on_and_page_switches_keep_it() -> None:
    at = _open(catalog.HOME, present="1")
    assert_clean(at)
    assert styled(at) and at.session_state[_ui.PRESENT_KEY]
    assert at.toggle(key=_ui.PRESENT_KEY).value
    assert not _ignored(at)

    # A page switch through the navigation drops the query string; the session puts it back.
    at.query_params.clear()
    at.switch_page(PRNG.path).run()
    assert_clean(at)
    assert styled(at)
    assert param(at, _ui.PRESENT_PARAM) == "1"


def test_without_the_parameter_the_page_is_as_usual() -> None:
    at = _open(PRNG)
    assert not styled(at)
    assert _ui.PRESENT_PARAM not in at.query_params
    assert not at.toggle(key=_ui.PRESENT_KEY).value


def test_present_0_and_the_switch_turn_it_off() -> None:
    at = _open(catalog.HOME, present="1")
    at.query_params[_ui.PRESENT_PARAM] = "0"
    at.run()
    assert not styled(at)
    assert _ui.PRESENT_PARAM not in at.query_params

    at = _open(catalog.HOME, present="1")
    at.toggle(key=_ui.PRESENT_KEY).set_value(False).run()
    assert not styled(at)
    assert _ui.PRESENT_PARAM not in at.query_params
    at.switch_page(PRNG.path).run()
    assert not styled(at)

    at.toggle(key=_ui.PRESENT_KEY).set_value(True).run()
    assert styled(at)
    assert param(at, _ui.PRESENT_PARAM) == "1"


def test_the_readme_shows_every_page_in_present_mode() -> None:
    """Each registered page has its projector screenshot, linked from the README."""
    readme = (catalog.ROOT / "README.md").read_text(encoding="utf-8")
    for spec in catalog.PAGES:
        shot = f"docs/screens/{spec.url_path}.png"
        assert f"({shot})" in readme, shot
        missing = f"{shot}: run tests/browser/test_present.py with JAXPLAY_UPDATE_SCREENS=1"
        assert (catalog.ROOT / shot).is_file(), missing
