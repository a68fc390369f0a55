"""Links a hostile visitor might post in a workshop chat, for the tests and the benchmark.

Each one reproduced a freeze, a flood or a dressed-up message on the first public build (see
the hardening issue): a formula that builds a huge Python integer or list while holding the
server's GIL, one that compiles for minutes, sizes whose intermediates or LAPACK calls were not
counted, and Markdown (images, links) in text the app echoes back.
"""

from __future__ import annotations

from urllib.parse import quote

#: A formula allowed by the language that takes minutes to differentiate to order 4.
NESTED_TANH = "jnp.tanh(" * 45 + "x" + ")" * 45
#: An image on a server the attacker controls (never reached: nothing listens on port 9).
IMAGE = "![px](http://127.0.0.1:9/p.png)"
LINK = "[sign in](http://127.0.0.1:9/login)"


def _q(text: str) -> str:
    return quote(text, safe="")


#: (what it is, path and query) — formulas and sizes.
HEAVY_LINKS: tuple[tuple[str, str], ...] = (
    (
        "grad: chained integer powers",
        "/grad?grad_preset=type+a+formula&grad_formula=" + _q("((9**1024)**1024)**64 + x"),
    ),
    (
        "grad: a 600-million-item list",
        "/grad?grad_preset=type+a+formula&grad_formula=" + _q("jnp.sum([0] * (6 * 10**8)) + x"),
    ),
    (
        "grad: 45 nested tanh to order 4",
        "/grad?grad_preset=type+a+formula&grad_order=4&grad_formula=" + _q(NESTED_TANH),
    ),
    (
        "compose: 45 nested tanh under hessian(hessian)",
        "/compose?compose_function=type+a+formula&compose_t0=hessian&compose_t1=hessian"
        "&compose_formula=" + _q("jnp.sum(" + NESTED_TANH + ")"),
    ),
    (
        "jit: a 17 GB intermediate",
        "/jit?jit_preset=Your+formula&jit_rows=256&jit_cols=4096&jit_formula="
        + _q("jnp.sum(x[:, :, None] * x[:, None, :])"),
    ),
    (
        "jit: inv of 4000×4000",
        "/jit?jit_preset=Your+formula&jit_rows=4000&jit_cols=4000&jit_formula="
        + _q("jnp.linalg.inv(x)"),
    ),
)

#: (what it is, path and query) — Markdown that must show as text.
MARKDOWN_LINKS: tuple[tuple[str, str], ...] = (
    ("home: an unknown parameter named with an image", "/?" + _q(IMAGE) + "=1"),
    ("prng: a seed that leaves its backticks", "/prng?prng_seed=" + _q("1` " + IMAGE + " `")),
    (
        "devices: mesh axis names",
        "/devices?devices_tab=Sharding&devices_axes=" + _q(LINK + ", " + IMAGE),
    ),
    (
        "grad: a formula with a link",
        "/grad?grad_preset=type+a+formula&grad_formula=" + _q("x + " + LINK),
    ),
)
