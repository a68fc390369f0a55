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
#: A 500 kB PartitionSpec: its tokenizer copied the rest of the text per token (58 s of CPU).
SPEC_500K = "P(" + "'x', " * 100_000 + ")"
#: 4 MB of code, as a client can set the Code Lab editor's component value (not a link: the
#: editor's text travels in a widget message); ast.parse of it took 2 GB on every rerun.
EDITOR_CODE = "x = 1\n" * 700_000


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

#: (what it is, path and query) — work the cost model used to misprice, and pages that measured
#: on load (the hardening issue's third item): a sort priced as a few flops, nested sorts, and
#: the memory page's largest size and depth.
BUDGET_LINKS: tuple[tuple[str, str], ...] = (
    (
        "jit: sort of 2×1,000,000",
        "/jit?jit_preset=Your+formula&jit_rows=2&jit_cols=1000000&jit_formula=" + _q("jnp.sort(x)"),
    ),
    (
        "jit: 30 nested sorts",
        "/jit?jit_preset=Your+formula&jit_rows=2&jit_cols=200000&jit_formula="
        + _q("jnp.sort(" * 30 + "x" + ")" * 30),
    ),
    (
        "memory: the largest size and depth",
        "/memory?memory_model=mlp&memory_loop=unrolled&memory_size=512&memory_depth=12",
    ),
)

#: (what it is, links opened at once) — in-server compute per link: each new seed trains anew.
CONCURRENT_LINKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "state: four new seeds at once",
        tuple(f"/state?state_seed={seed}" for seed in (1001, 1002, 1003, 1004)),
    ),
)


#: Links longer than the HTTP server reads: uvicorn answers them with an error before any of the
#: app runs (chromium shows ERR_HTTP_RESPONSE_CODE_FAILURE), so a browser never delivers them;
#: the parser's own cap is tested with the same text through AppTest
#: (``tests/pages/test_text_caps.py``). Kept for the benchmark, which reports how they end.
TOO_LONG_LINKS: tuple[tuple[str, str], ...] = (
    (
        "devices: a 500 kB PartitionSpec",
        "/devices?devices_tab=Sharding&devices_spec=" + _q(SPEC_500K),
    ),
)
