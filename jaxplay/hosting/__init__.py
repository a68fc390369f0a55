"""Running jaxplay as a server that others reach; imports only :mod:`jaxplay.core`.

Why a layer of its own: these decide *where and for whom* the app runs, not what it teaches:
:mod:`~jaxplay.hosting.settings` (the table of every environment variable and its one reader),
:mod:`~jaxplay.hosting.environment` (JAX's process flags, set before JAX starts),
:mod:`~jaxplay.hosting.publicmode` (rate limits, visitors, no server paths in error texts),
:mod:`~jaxplay.hosting.ratelimit`, :mod:`~jaxplay.hosting.links` (shared links),
:mod:`~jaxplay.hosting.catalog` (the registry of pages), :mod:`~jaxplay.hosting.protocol` (the
client messages a public server ignores), :mod:`~jaxplay.hosting.snippets` (the
Code Lab's shared snippets), :mod:`~jaxplay.hosting.results` (results computed once for every
process), :mod:`~jaxplay.hosting.serve` (a room of processes behind a proxy) and
:mod:`~jaxplay.hosting.warm_up` (every page's views opened before the room arrives).

The modules are the public names (``from jaxplay.hosting import catalog``); this ``__init__``
imports none of them, so ``app.py`` can import :mod:`~jaxplay.hosting.environment` and configure
JAX before anything else loads.
"""
