"""Two app instances sharing one PostgreSQL snippet store, as behind a load balancer: a link that
the Code Lab's Share button gives on the first instance opens, with its code, on the second.

The code is put in the Code Lab through the article walkthrough's "Open in Code Lab" button, so
the test does not depend on how the Code Lab's editor is built; Share then stores code that is not
in the database yet (a fresh schema), so only the first instance can have written it.
"""

from __future__ import annotations

import re

import pytest

from jaxplay import article
from jaxplay.hosting import catalog, snippets
from tests.support.browser import exception_texts, require_chromium, streamlit_server, wait_for_run
from tests.support.postgres import Server

pytestmark = pytest.mark.browser

require_chromium()

EXAMPLE = article.by_id("jit-softmax-as-written")
MARKER = "def jitted_softmax(x):"  # a line of EXAMPLE that the Code Lab's default code lacks


def test_a_link_shared_on_one_instance_opens_on_another(page, postgres_server: Server) -> None:
    assert MARKER in EXAMPLE.source
    assert MARKER not in article.by_id(article.DEFAULT_ID).source
    database = postgres_server.new_schema()
    env = {"JAXPLAY_SNIPPET_DB": database, "JAXPLAY_RUNNER_SPARES": "0"}
    walkthrough, lab = catalog.find("article"), catalog.find("code-lab")
    with streamlit_server("app.py", env) as first, streamlit_server("app.py", env) as second:
        # Each instance has had a visitor before, as instances behind a load balancer have. (A
        # fresh server's very first visit to an address whose name differs from its page file,
        # /article or /code-lab, leaves Streamlit's "Page not found" dialog over the right page:
        # a first-visit quirk of its legacy pages/ mode, outside this test's subject.)
        for server in (first, second):
            page.goto(server)
            wait_for_run(page)
            page.locator("h1").first.wait_for(timeout=90_000)

        # First instance: open the example in the Code Lab and share it.
        page.goto(f"{first}/{walkthrough.url_path}")
        wait_for_run(page)
        page.locator(f".st-key-walkthrough_open_{EXAMPLE.id} button").click()
        share = page.locator(".st-key-code_lab_share button")
        share.wait_for(timeout=90_000)
        wait_for_run(page)
        share.click()
        box = page.locator('[data-testid="stCode"]', has_text="?snippet=")
        box.wait_for(timeout=60_000)
        match = re.search(r"\?snippet=(\w+)", box.inner_text())
        assert match, box.inner_text()
        snippet_id = match.group(1)
        assert snippets.is_valid_id(snippet_id)
        assert not exception_texts(page)

        # It is in the shared database ...
        store = snippets.SnippetStore(database)
        try:
            assert store.load(snippet_id).code == EXAMPLE.source
        finally:
            store.close()

        # ... and the second instance, which never saw it, opens the link with its code.
        page.goto(f"{second}/{lab.url_path}?snippet={snippet_id}")
        wait_for_run(page)
        main = page.locator('[data-testid="stMain"]')
        # The Code Lab's editor (a CodeMirror component) holds the snippet's code.
        main.locator(".cm-content", has_text=MARKER).first.wait_for(timeout=60_000)
        text = main.inner_text()
        assert "No snippet" not in text and "cannot be reached" not in text, text
        assert not exception_texts(page)
