"""The page line: a page with claims says how many of its statements were checked against this
server's JAX, and lists any that did not hold, with what JAX did."""

from __future__ import annotations

import threading

import jax
import pytest

from jaxplay.core import claims
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page

SPEC = catalog.find("vmap")


@pytest.fixture
def checked_here(monkeypatch: pytest.MonkeyPatch):
    """Checking on, as on a server; only the vmap page's claims are run (and synchronously, so
    the line is settled when the page draws), plus one that fails here."""
    monkeypatch.setenv("JAXPLAY_CHECK_CLAIMS", "1")
    false = claims.Claim(
        "vmap.demo_false_rule",
        "`jnp.ones(2).sum()` is 3.",
        lambda _: claims.Verdict(False, "jnp.ones(2).sum() gave 2.0"),
    )
    started: list[tuple[str, ...]] = []

    def start(topics):
        started.append(tuple(topics))
        claims.gather(topics)
        claims.REGISTRY[false.key] = false
        # In a thread of its own, as the server's check runs (nobody's measurement), and done
        # before the page reads the results.
        keys = [k for k in claims.REGISTRY if k.startswith("vmap.")]
        checking = threading.Thread(target=claims.check_all, args=(keys,), name="jaxplay-claims")
        checking.start()
        checking.join()

    monkeypatch.setattr(claims, "start_checking", start)
    yield started
    claims.REGISTRY.pop(false.key, None)
    claims._results.pop(false.key, None)


def test_the_page_line_counts_the_checked_statements_and_lists_the_failed(checked_here) -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert checked_here and "vmap" in checked_here[0]
    keys = [k for k in claims.REGISTRY if k.startswith("vmap.")]
    line = f"{len(keys)} statements on this page were checked against JAX {jax.__version__}"
    captions = [c.value for c in at.caption]
    assert any(line in c and "1 of them did not hold here" in c for c in captions), captions
    failed = [e for e in at.expander if "did not hold" in e.label]
    assert len(failed) == 1
    listed = " ".join(m.value for m in failed[0].markdown)
    assert "`jnp.ones(2).sum()` is 3." in listed  # the statement, as the claim words it
    assert "jnp.ones(2).sum() gave 2.0" in listed.replace("\\", "")  # what JAX did, escaped


def test_no_line_when_checking_is_off() -> None:
    """The tests' default (conftest): no claims checked, no line."""
    at = open_page(SPEC)
    assert not [c.value for c in at.caption if "statements on this page" in c.value]
