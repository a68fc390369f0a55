"""jaxplay: the logic behind the JAX transforms playground.

Everything here is plain, typed Python that returns data (numpy arrays, strings, frozen
dataclasses, plotly figures). The Streamlit pages in ``pages/`` render what these modules compute;
this package never imports streamlit, so every result a page shows can be checked by a unit test.

Its subpackages are layers, lowest first: :mod:`jaxplay.core` (the shared machinery),
:mod:`jaxplay.hosting` (settings, public mode, the page registry), :mod:`jaxplay.sandbox` (the
runner for visitors' code), :mod:`jaxplay.article` (the article's code), then one topic per page
(:mod:`jaxplay.jit`, :mod:`jaxplay.grad`, ..., :mod:`jaxplay.code_lab`). A layer imports only the
layers below it, and topics never import each other (``tests/repo/test_architecture.py``).

Import :mod:`jaxplay.hosting.environment` and call :func:`jaxplay.hosting.environment.configure`
before anything touches JAX's backend: the number of simulated CPU devices can only be chosen
before that.
"""

__version__ = "0.1.0"
