"""Running jaxplay as a server that others reach: settings, the environment, public mode, rate
limits, shared links, the page registry and the snippet store.

Why a layer of its own: these decide *where and for whom* the app runs, not what it teaches. They
import only :mod:`jaxplay.core`, so the sandbox and every topic can read them.
"""
