"""jaxplay: the logic behind the JAX transforms playground.

Everything here is plain, typed Python that returns data (numpy arrays, strings, frozen
dataclasses, plotly figures). The Streamlit pages in ``pages/`` render what these modules compute;
this package never imports streamlit, so every result a page shows can be checked by a unit test.

Import :mod:`jaxplay.hosting.environment` and call :func:`jaxplay.hosting.environment.configure`
before anything touches JAX's backend: the number of simulated CPU devices can only be chosen
before that.
"""

__version__ = "0.1.0"
