"""Helpers the tests share; no tests here.

- :mod:`tests.support.apptest`: open a page through ``app.py`` in an ``AppTest``, read its editor;
- :mod:`tests.support.browser`: ``streamlit run`` on a free port, waits on a real chromium page;
- :mod:`tests.support.markdown_check`, :mod:`tests.support.page_texts`: Markdown as Streamlit
  renders it, and the hostile links a run's texts would show;
- :mod:`tests.support.postgres`: a throwaway PostgreSQL server;
- :mod:`tests.support.devices`: a script run on a host of fewer devices (a fresh process);
- :mod:`tests.support.stores`: what a room's processes do with the result store, started at once
  by the tests (it imports no JAX: each spawned process imports it).

What the benchmarks use too lives in ``jaxplay.hosting`` (``chromium``, ``hostile_links``, the
launcher ``serve``), in ``pages/_visitor.py`` (the protocol client the warm-up drives) and in
``benchmarks/_browser.py``: benchmarks never import from ``tests/``.
"""
