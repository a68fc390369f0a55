"""The one registry of the app's pages.

``app.py`` builds ``st.navigation`` from it, the home page draws its topic cards from it, and the
tests parametrize over it, so a page exists in all three places or in none. The order of
:data:`TOPICS` is the navigation's. A page's file is named as its address (``pages/code-lab.py``
is ``/code-lab``): on a fresh server's first run Streamlit infers addresses from file names (see
``pages/_startup.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jaxplay.core.i18n import N_

ROOT = Path(__file__).resolve().parent.parent.parent

#: The navigation's sections (marked for the catalog; shown with ``i18n._``, as are titles and
#: summaries: the registry is built once per process, for visitors of every language).
SECTIONS: tuple[str, ...] = (
    N_("Transforms"),
    N_("Under the hood"),
    N_("Beyond the article"),
    N_("Playground"),
)


@dataclass(frozen=True)
class PageSpec:
    """A page of the app.

    Attributes:
        path: the page file, relative to the repository root: ``pages/<url_path>.py``.
        title: the title in the navigation and on the page.
        icon: a Material icon name (``:material/...:``) for the navigation.
        section: one of :data:`SECTIONS`; ``None`` for the home page.
        summary: one line, "what you will see", for the home page's card.
        url_path: the page's address (``/jit``), also used by shared links and browser tests.
    """

    path: str
    title: str
    icon: str
    section: str | None
    summary: str
    url_path: str

    @property
    def file(self) -> Path:
        """The absolute path of the page's file."""
        return ROOT / self.path


HOME = PageSpec(
    path="pages/home.py",
    title=N_("Home"),
    icon=":material/home:",
    section=None,
    summary=N_("What jaxplay is, the topics, and the JAX this server runs."),
    url_path="home",
)

#: The topic pages, in navigation order.
TOPICS: tuple[PageSpec, ...] = (
    PageSpec(
        path="pages/jit.py",
        title="jit",
        icon=":material/speed:",
        section="Transforms",
        summary=N_(
            "Each stage of jit timed, eager vs jit honestly, where jit pays, and recompiles."
        ),
        url_path="jit",
    ),
    PageSpec(
        path="pages/grad.py",
        title="grad",
        icon=":material/trending_up:",
        section="Transforms",
        summary=N_(
            "f, f′, f″ drawn with their kinks, autodiff vs finite differences, jvp vs vjp, "
            "custom_vjp rules you can break, gradient pytrees and the Hessian diagonal."
        ),
        url_path="grad",
    ),
    PageSpec(
        path="pages/vmap.py",
        title="vmap",
        icon=":material/view_column:",
        section="Transforms",
        summary=N_(
            "An in_axes editor with shapes and JAX's verdict, loop vs vmap vs jit(vmap) "
            "timed, a nested-vmap convolution checked, and the batched jaxpr."
        ),
        url_path="vmap",
    ),
    PageSpec(
        path="pages/compose.py",
        title=N_("Compose"),
        icon=":material/stacks:",
        section="Transforms",
        summary=N_(
            "Stack jit, vmap, grad, jacfwd, jacrev, hessian, checkpoint in any order; "
            "per-sample gradients, jacfwd vs jacrev and HVPs, as written and fixed."
        ),
        url_path="compose",
    ),
    PageSpec(
        path="pages/prng.py",
        title=N_("PRNG keys"),
        icon=":material/casino:",
        section="Under the hood",
        summary=N_(
            "Seeds under x64 off and on, key trees, typed keys, and what reusing a key does."
        ),
        url_path="prng",
    ),
    PageSpec(
        path="pages/tracing.py",
        title=N_("Tracing & jaxpr"),
        icon=":material/account_tree:",
        section="Under the hood",
        summary=N_(
            "One function as Python, jaxpr, StableHLO and optimized HLO, line by line; "
            "tracer errors, recompilations and loops."
        ),
        url_path="tracing",
    ),
    PageSpec(
        path="pages/devices.py",
        title=N_("Devices & sharding"),
        icon=":material/grid_view:",
        section="Under the hood",
        summary=N_(
            "Devices, placement and transfer speeds, sharding drawn, collectives, and a real "
            "multi-process run."
        ),
        url_path="devices",
    ),
    PageSpec(
        path="pages/memory.py",
        title=N_("Memory & fusion"),
        icon=":material/memory:",
        section="Under the hood",
        summary=N_(
            "What gradient checkpointing saves and costs, and what jit fuses into one kernel."
        ),
        url_path="memory",
    ),
    PageSpec(
        path="pages/pytrees.py",
        title=N_("Pytrees"),
        icon=":material/park:",
        section="Beyond the article",
        summary=N_(
            "What JAX sees in nested containers: leaves and structure drawn, tree.map and "
            "flatten, your own classes registered, static fields and jit's cache, params through "
            "grad and vmap."
        ),
        url_path="pytrees",
    ),
    PageSpec(
        path="pages/sharp-bits.py",
        title=N_("Sharp bits"),
        icon=":material/report:",
        section="Beyond the article",
        summary=N_(
            "JAX's gotchas run for real: hidden state under jit, .at[] updates, "
            "out-of-bounds indexing, NaN gradients, debug_nans, checkify, debug.print, weak types."
        ),
        url_path="sharp-bits",
    ),
    PageSpec(
        path="pages/state.py",
        title=N_("Stateful computations"),
        icon=":material/model_training:",
        section="Beyond the article",
        summary=N_(
            "A training loop that threads params, optimizer state and the PRNG key "
            "through a jitted step, beside the hidden-state version that never learns."
        ),
        url_path="state",
    ),
    PageSpec(
        path="pages/code-lab.py",
        title=N_("Code Lab"),
        icon=":material/terminal:",
        section="Playground",
        summary=N_(
            "Type any JAX code and run it in a sandbox: output, values, arrays, jaxpr, timing."
        ),
        url_path="code-lab",
    ),
    PageSpec(
        path="pages/article.py",
        title=N_("Article walkthrough"),
        icon=":material/menu_book:",
        section="Playground",
        summary=N_("The tutorial's eight sections, every snippet runnable, the broken ones fixed."),
        url_path="article",
    ),
)

PAGES: tuple[PageSpec, ...] = (HOME, *TOPICS)


def pages_by_section() -> dict[str, list[PageSpec]]:
    """Topic pages grouped by section, in :data:`SECTIONS` order, empty sections left out."""
    grouped: dict[str, list[PageSpec]] = {}
    for section in SECTIONS:
        members = [p for p in TOPICS if p.section == section]
        if members:
            grouped[section] = members
    return grouped


def page_name(url_path: str) -> str:
    """What a browser's ``ClientState.page_name`` says for a page: the home page is the
    navigation's default, ``""``."""
    return "" if url_path == HOME.url_path else url_path


def find(url_path: str) -> PageSpec:
    """The page registered under ``url_path``; ``KeyError`` if none is."""
    for page in PAGES:
        if page.url_path == url_path:
            return page
    raise KeyError(url_path)
