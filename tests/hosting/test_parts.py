"""A page's parts (``pages._ui.part``: every tab body is one) rerun alone, over Streamlit's
protocol as a browser asks: a widget inside a tab reruns that tab, not ``app.py`` and the page,
and its rerun keeps the visitor's language and the visitor its sandboxed runs count against."""

from __future__ import annotations

from pages._visitor import Visitor

import re
from urllib.parse import quote_plus

from jaxplay.hosting import catalog
from tests.support.browser import streamlit_server


def test_a_parts_own_rerun_keeps_the_visitor_and_the_language() -> None:
    """The fixture's part and a bare fragment, opened in Chinese: in the full run both know the
    visitor; pressed, each reruns alone, and only the part still knows who and which language
    (the bare fragment shows what the part's wrapper is for: the check can fail)."""
    with streamlit_server("tests/fixtures/part_app.py") as url:
        visitor = Visitor(url)
        full = visitor.open("", "lang=zh")
        assert not full.errors, full.errors
        said = [t for t in full.texts if t.startswith(("part:", "bare:"))]
        who = re.search(r"visitor (\S+),", said[0])
        assert who and who.group(1) != "None", said
        assert said == [f"{w}: visitor {who.group(1)}, language zh" for w in ("part", "bare")]
        fragments = {visitor.widgets[k].fragment_id for k in ("part_again", "bare_again")}
        assert len(fragments) == 2 and "" not in fragments

        part = visitor.click("part_again")
        assert not part.errors and "full run" not in part.texts, part.texts
        assert part.texts == [f"part: visitor {who.group(1)}, language zh"]
        bare = visitor.click("bare_again")
        assert "full run" not in bare.texts, bare.texts
        assert bare.texts == ["bare: visitor None, language en"], bare.texts


def test_a_widget_in_a_tab_reruns_the_tab_alone_as_the_full_page_would_draw_it() -> None:
    """The PRNG page's number of keys, in its tab, in Chinese: its rerun sends the tab only (no
    sidebar, no page title), and what it sends is what the whole page shows for that value."""
    tab = "prng_tab=" + quote_plus("并行随机数流")  # the tab's label in Chinese
    with streamlit_server("app.py") as url:
        visitor = Visitor(url)
        page = catalog.page_name("prng")
        shown = visitor.open(page, f"lang=zh&{tab}")
        assert not shown.errors, shown.errors
        assert visitor.widgets["prng_n_keys"].fragment_id
        rerun = visitor.change("prng_n_keys", 500)
        assert not rerun.errors, rerun.errors
        assert rerun.texts, "the tab drew nothing"
        sidebar = [t for t in shown.texts if "jax " in t and "·" in t]
        assert sidebar and not set(sidebar) & set(rerun.texts), rerun.texts
        whole = Visitor(url).open(page, f"lang=zh&{tab}&prng_n_keys=500")
        assert not whole.errors, whole.errors
        assert set(rerun.texts) <= set(whole.texts), set(rerun.texts) - set(whole.texts)
        label = rerun.widgets["prng_n_keys"].element.label  # drawn again, in Chinese
        assert re.search("[\u4e00-\u9fff]", label), label
