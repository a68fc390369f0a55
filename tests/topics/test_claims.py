"""Every statement about JAX's behaviour is a claim whose check asks JAX, and every check holds.

A claim's check compares the statement with what JAX did (shard shapes, exceptions, the jaxpr,
``memory_analysis``...); this runs each on every case the page offers. Sentence builders (functions
of the topic packages named as such, or returning a string that holds a line of prose) must
declare the claims they rest on, or say why they state nothing about JAX.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap

import pytest

from jaxplay.core import claims
from jaxplay.hosting import catalog

TOPICS = tuple(sorted({spec.url_path.replace("-", "_") for spec in catalog.TOPICS} - {"article"}))
REGISTRY = claims.gather(TOPICS)

#: What a sentence builder is called: ``explain_*``/``describe_*`` and ``*_sentence``/``*_story``/
#: ``*_verdict``/``*_words``/``*_summary``/``*_explanation``/``*_note``/``*_intro``.
BUILDER = re.compile(
    r"^_?(explain|describe)(_|$)"
    r"|_(sentence|sentences|story|verdict|words|summary|explanation|note|intro)$"
)
#: A run of five words in a string constant: prose, not a format or a name.
PROSE = re.compile(r"[A-Za-z]+(?: [A-Za-z`',()]+){4,}")


def _writes_prose(fn: object) -> bool:
    """A function that returns ``str`` (or strings: ``list[str]``, ``str | None``) and holds a
    line of prose (a string constant of five
    words or more, not its docstring): a sentence builder, whatever its name."""
    returns = inspect.signature(fn).return_annotation  # type: ignore[arg-type]
    if returns is not str and not re.search(r"\bstr\b", str(returns)):  # list[str], str | None
        return False
    body = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]  # type: ignore[arg-type]
    doc = ast.get_docstring(body)  # type: ignore[arg-type]
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value != doc
        and "\n" not in node.value
        and PROSE.search(node.value) is not None
        for node in ast.walk(body)
    )


def test_every_topic_states_checked_claims() -> None:
    """The registry covers every topic package that builds sentences about JAX."""
    with_claims = {item.topic for item in REGISTRY.values()}
    missing = [topic for topic in TOPICS if topic not in with_claims and topic != "code_lab"]
    assert not missing, f"topics with no registered claim: {missing}"


def test_claim_keys_name_their_topic() -> None:
    for key, item in REGISTRY.items():
        assert item.topic in TOPICS, key
        assert item.statement.strip(), key


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_claim_holds_on_this_jax(key: str) -> None:
    result = REGISTRY[key].run()
    assert result.holds, f"{key} failed for case {result.case}: {result.observed}"


def _builders() -> list[tuple[str, object]]:
    found = []
    for topic in TOPICS:
        package = importlib.import_module(f"jaxplay.{topic}")
        root = package.__path__[0] if hasattr(package, "__path__") else None
        modules = [package]
        if root:
            for path in sorted(catalog.ROOT.joinpath("jaxplay", topic).glob("*.py")):
                if path.stem not in ("__init__", "_claims"):  # the checks, not the sentences
                    modules.append(importlib.import_module(f"jaxplay.{topic}.{path.stem}"))
        for module in modules:
            for name, value in vars(module).items():
                if (
                    inspect.isfunction(value)
                    and value.__module__ == module.__name__
                    and (BUILDER.search(name) or _writes_prose(value))
                ):
                    found.append((f"{module.__name__}.{name}", value))
    return found


def test_every_sentence_builder_declares_its_claims() -> None:
    unmarked = [name for name, fn in _builders() if claims.claims_of(fn) is None]
    assert not unmarked, (
        "sentence builders with neither @claims.states(...) nor @claims.states_nothing(why): "
        f"{unmarked}"
    )


def test_a_sentence_builder_is_found_by_what_it_writes() -> None:
    """The names missed real builders (``_read_auto`` wrote finding 1's sentence): a function
    returning a string with a line of prose is one, a number format is not."""

    def says(n: int) -> str:
        return f"axis {n} is whole on every device"

    def formats(n: int) -> str:
        return f"{n:,} B"

    def lists(n: int) -> list[str]:
        return [f"axis {n} is whole on every device"]

    assert _writes_prose(says) and not _writes_prose(formats) and _writes_prose(lists)
    assert "jaxplay.compose._builder.pipeline_notes" in dict(_builders())
    found = dict(_builders())
    assert "jaxplay.devices._explicit._read_auto" in found
    assert "jaxplay.jit._stopwatch.article_explanation" in found


def test_declared_claims_are_registered() -> None:
    unknown = [
        (name, key)
        for name, fn in _builders()
        for key in claims.claims_of(fn) or ()
        if key not in REGISTRY
    ]
    assert not unknown, unknown


def test_a_failing_claim_is_shown_as_not_true_here() -> None:
    """On a JAX where the check fails, the sentence says so with what JAX did."""
    made = claims.Claim(
        "demo.false_rule", "jnp.ones(2).sum() is 3", lambda _: claims.Verdict(False, "it gave 2")
    )
    claims.REGISTRY[made.key] = made
    try:
        claims.check_all([made.key])
        text = claims.qualify(made.key, "The sum is 3.")
        assert text.startswith("(Not true on JAX ")
        assert "it gave 2" in text and text.endswith("The sum is 3.")
        mark = claims.page_mark("demo")
        assert mark.checked == 1 and len(mark.failed) == 1
        assert "did not hold here" in mark.line
    finally:
        del claims.REGISTRY[made.key]
        claims._results.pop(made.key, None)


def test_a_check_that_raises_is_a_failed_claim() -> None:
    def broken(_: object) -> claims.Verdict:
        raise RuntimeError("boom")

    result = claims.Claim("demo.broken", "x", broken).run()
    assert not result.holds and "RuntimeError" in result.observed


#: Claims whose cases place arrays on other devices or meshes: on a host of one device (the
#: one-GPU VM the hosting guide describes) two of them did not hold, so the page said its own
#: true sentence was "not true here".
PLACING = ("jit.signature_includes_structure_and_placement", "devices.")


def test_the_placing_claims_and_the_pmap_example_hold_on_a_host_of_one_device() -> None:
    """Also the article's pmap example: its text said the leading axis is split one row per
    device, where a host of one device takes the snippet's ``else`` branch."""
    from jaxplay import article
    from tests.support.devices import result_on

    script = (
        "from jaxplay.hosting import environment; environment.configure()\n"
        "import json, jax\n"
        "from jaxplay.core import claims\n"
        "claims.gather(['devices', 'jit'])\n"
        f"keys = [k for k in claims.REGISTRY if k.startswith({PLACING!r})]\n"
        "failed = {}\n"
        "for key in keys:\n"
        "    item = claims.REGISTRY[key]\n"
        "    for case in item.cases:\n"
        "        v = item.check(case)\n"
        "        if not v.holds: failed[f'{key} {case!r}'] = v.observed\n"
        "import contextlib, io\n"
        "from jaxplay import article\n"
        "printed = io.StringIO()\n"
        "with contextlib.redirect_stdout(printed):\n"
        "    exec(article.by_id('devices-pmap').source, {})\n"
        "found = [len(jax.devices()), len(keys), failed, printed.getvalue()]\n"
        "print('RESULT ' + json.dumps(found))\n"
    )
    devices, checked, failed, printed = result_on(1, script)
    assert devices == 1 and checked >= 8
    assert failed == {}
    assert printed.startswith("Single device detected")
    assert (
        "one device the snippet takes its `else` branch"
        in article.by_id("devices-pmap").explanation
    )
