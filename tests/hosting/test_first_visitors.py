"""A room opening links on a freshly started server at the same moment.

A fresh server starts in Streamlit's legacy ``pages/`` mode and has not imported JAX yet: its
first runs race to do the process's start-up (``pages/_startup.py``). Several visitors, each on
its own socket, ask for their link at once; every one must get its page through ``app.py``
(the sidebar's caption is app.py's), with its link's query string kept and no error. Before the
start-up was one import under Python's import lock, such a burst got "This app has encountered
an error" (an ``ImportError`` from JAX's modules half-imported by another thread, or from the
legacy switch raising inside an import) or pages drawn without ``app.py``.
"""

from __future__ import annotations

from pages._visitor import Run, Visitor

import threading
from pathlib import Path

from jaxplay.hosting import catalog, serve

#: The links the room opens at once (deep links, the home page, one page twice), each with a text
#: only the view it names shows (the Parallel streams tab shows the article's code for it).
LINKS = [
    ("prng", "prng_tab=Parallel+streams", "def article_parallel("),
    ("jit", "", ""),
    ("", "", ""),
    ("sharp-bits", "", ""),
    ("prng", "", ""),
]
ENV = {
    "JAXPLAY_PUBLIC": "1",
    "JAXPLAY_VISITOR_KEY": "session",
    "JAXPLAY_WARM_UP": "off",
    "JAXPLAY_CHECK_CLAIMS": "0",
}


def test_a_burst_of_first_visitors_gets_every_page_through_the_app(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log, serve.Room(1, env=ENV, log=log) as room:
        visitors = [Visitor(room.url, timeout_s=120) for _ in LINKS]
        for visitor in visitors:
            visitor.connect()  # the sockets first, so the runs are asked for at once
        runs: dict[int, Run] = {}
        failures: dict[int, BaseException] = {}
        start = threading.Barrier(len(LINKS))

        def open_link(i: int) -> None:
            page, query, _shows = LINKS[i]
            start.wait()
            try:
                runs[i] = visitors[i].open(catalog.page_name(page) if page else "", query)
            except BaseException as err:  # reported below, with the server's log
                failures[i] = err

        threads = [threading.Thread(target=open_link, args=(i,)) for i in range(len(LINKS))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    server_log = log_path.read_text(encoding="utf-8", errors="replace")
    assert not failures, f"{failures}\n{server_log[-4000:]}"
    for i, (page, query, shows) in enumerate(LINKS):
        run = runs[i]
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.errors, (page, run.errors)
        assert any(text.startswith("Source: ") for text in run.texts), f"{page}: not via app.py"
        assert any(shows in text for text in run.texts), f"{page}?{query}: the link's view lost"
    assert "Traceback" not in server_log, server_log[-4000:]
