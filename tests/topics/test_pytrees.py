"""The pytrees package: the literal reader's limits, what JAX sees in a tree, registered and
unregistered classes, static fields against jit's cache, and params through grad and vmap."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxplay import pytrees
from jaxplay.pytrees import _classes


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "type a Python literal"),
        ("x", "not a Python literal"),
        ("__import__('os').system('true')", "not a Python literal"),
        ("[1] * 3", "not a Python literal"),
        ("2 ** 40", "not a Python literal"),
        ("[" * 100 + "]" * 100, "levels below its outermost container"),
        ("[" * 200, "levels below its outermost container"),
        (str(list(range(70))), "at most 60"),
        ("1" * 400, "at most 300"),
        ("2147483648", "int32"),
        ("1e999", "finite"),
        ("'text'", "a str is not accepted"),
        ("{1, 2}", "a set is not accepted"),
        ("(1+2j)", "a complex is not accepted"),
        ("{1: 2, 'a': 3}", "cannot sort strings among numbers"),
        # JAX sorts these; the box's own rule refuses them, and says it is its own.
        ("{(1, 2): 1, (0, 5): 2}", "this box takes dict keys"),
        ("{2: 1, 1.5: 2}", "this box takes dict keys"),
        ("{'![px](http://127.0.0.1:9/p.png)': 1}", "string keys are Python names"),
        ("{'<a href=x>': 1}", "string keys are Python names"),
    ],
)
def test_bad_literals_are_refused_with_a_reason(text: str, fragment: str) -> None:
    with pytest.raises(pytrees.LiteralError) as err:
        pytrees.parse_literal(text)
    assert fragment in str(err.value)


def test_good_literals_are_read_without_running_anything() -> None:
    assert pytrees.parse_literal(pytrees.DEFAULT_LITERAL) == {
        "b": [1, 2.5],
        "a": (None, [], 3),
        "c": {"z": -1},
    }
    assert pytrees.parse_literal("{1: [True, None], 2: ()}") == {1: [True, None], 2: ()}
    assert pytrees.parse_literal(" -2147483647 ") == -2147483647


@pytest.mark.parametrize("value", [-(2**31) - 1, -(2**31), 2**31 - 1, 2**31])
def test_the_box_takes_the_integers_jax_takes(value: int) -> None:
    """The box's integer range is JAX's: it took -2**31 for out of range ("±2,147,483,647")."""
    import jax.numpy as jnp

    try:
        jax_takes = int(jnp.array(value)) == value
    except OverflowError:
        jax_takes = False
    if jax_takes:
        assert pytrees.parse_literal(str(value)) == value
    else:
        with pytest.raises(pytrees.LiteralError, match="-2,147,483,648 to 2,147,483,647"):
            pytrees.parse_literal(str(value))


def _describe(text: str, fn: str = "double") -> pytrees.Anatomy:
    return pytrees.describe(pytrees.parse_literal(text), pytrees.MAP_FUNCTIONS[fn])


def test_describe_counts_what_jax_sees() -> None:
    found = _describe(pytrees.DEFAULT_LITERAL)
    assert found.n_leaves == len(jax.tree.leaves(pytrees.parse_literal(pytrees.DEFAULT_LITERAL)))
    assert found.n_leaves == 4
    assert found.n_empty == 2  # None and []
    assert found.leaf_paths == ("['a'][2]", "['b'][0]", "['b'][1]", "['c']['z']")
    assert found.positions == "{'a': (None, [], 0), 'b': [1, 2], 'c': {'z': 3}}"
    assert found.mapped == "{'a': (None, [], 6), 'b': [2, 5.0], 'c': {'z': -2}}"
    assert found.structure == "PyTreeDef({'a': (None, [], *), 'b': [*, *], 'c': {'z': *}})"
    # The dict was written b, a, c: flatten sorts it.
    assert found.dict_orders == (("the root", ("'b'", "'a'", "'c'"), ("'a'", "'b'", "'c'")),)
    leaves = [n for n in found.nodes if n.kind == "leaf"]
    assert [n.leaf_index for n in leaves] == [0, 1, 2, 3]


def test_other_input_other_counts() -> None:
    found = _describe("[1, [2, 3], ()]", "size")
    assert (found.n_leaves, found.n_empty, found.dict_orders) == (3, 1, ())
    assert found.mapped == "[1, [1, 1], ()]"
    assert _describe("5").n_leaves == 1 and _describe("None").n_leaves == 0


def test_examples_build_and_mlp_keys_come_out_sorted() -> None:
    for example in pytrees.EXAMPLES:
        assert pytrees.describe(example.build(), pytrees.MAP_FUNCTIONS["double"]).nodes
    mlp = pytrees.describe(pytrees.find_example("mlp").build(), pytrees.MAP_FUNCTIONS["double"])
    assert mlp.leaf_paths[:2] == ("['hidden']['b']", "['hidden']['w']")
    assert mlp.n_leaves == 4


def test_tree_figure_draws_every_node_with_leaves_numbered() -> None:
    found = _describe(pytrees.DEFAULT_LITERAL)
    fig = pytrees.tree_figure(found.nodes, "t")
    drawn = [t for trace in fig.data if trace.text for t in trace.text]
    assert len(drawn) == len(found.nodes)
    assert sum(t.startswith("#") for t in drawn) == found.n_leaves


def test_registered_classes_work_everywhere() -> None:
    for key, cls in (("dataclass", _classes.Dense), ("pytree_node", _classes.Affine)):
        demo = pytrees.class_demo(key)
        assert demo.n_leaves == 2, key
        assert all(o.ok for _, o in demo.outcomes), [o.headline for _, o in demo.outcomes]
        grad = demo.outcomes[-1][1]
        assert grad.value.startswith(cls.__name__ + "(")  # grad returns the same class
    assert "Dense[('dense',)]" in pytrees.class_demo("dataclass").structure


def test_an_unregistered_class_is_one_leaf_and_jit_raises_type_error() -> None:
    demo = pytrees.class_demo("plain")
    assert demo.n_leaves == 1 and demo.structure == "PyTreeDef(*)"
    errors = {text.split("(")[0]: o.error_type for text, o in demo.outcomes}
    assert errors == {
        "jax.tree.leaves": None,
        "jax.tree.map": "TypeError",
        "jax.jit": "TypeError",
        "jax.grad": "TypeError",
    }
    # The same error straight from JAX, not through the page's capture.
    with pytest.raises(TypeError):
        jax.jit(pytrees.affine)(_classes.Plain(jnp.ones((3, 2)), jnp.zeros(2)), jnp.ones(3))


def test_a_dynamic_field_reuses_the_program_a_static_one_recompiles() -> None:
    dynamic = pytrees.static_lab("dynamic", 5)
    assert dynamic.compilations == 1 and dynamic.distinct_dynamic == 5
    assert [r.compiled for r in dynamic.rows] == [True, False, False, False, False]
    for distinct in (1, 2, 3):
        static = pytrees.static_lab("static", 6, distinct)
        assert static.distinct_static == distinct
        assert static.compilations == distinct


def test_a_python_float_gets_a_program_of_its_own() -> None:
    lab = pytrees.static_lab("weak", 4)
    assert lab.distinct_types == 2 and lab.compilations == 2


def test_an_array_in_a_static_field_raises_jaxs_own_error() -> None:
    """JAX's ValueError from comparing meta fields, never our demo's dict lookup (TypeError).

    The first call is accepted in a fresh process only: once any call with such a layer is
    cached, every call compares against it and raises."""
    lab = pytrees.static_lab("array", 3)
    kinds = [(r.error or "ok").split(":")[0] for r in lab.rows]
    assert kinds[1:] == ["ValueError", "ValueError"] and kinds[0] in ("ok", "ValueError")
    assert all("arrays cannot be passed as metadata fields" in r.error for r in lab.rows[1:])
    assert lab.failed is next(r for r in lab.rows if r.error)
    sentence = pytrees.explain_failure(lab)
    assert "compared the meta fields" in sentence and "TypeError" not in sentence


def test_static_lab_bounds_its_sizes() -> None:
    with pytest.raises(ValueError):
        pytrees.static_lab("dynamic", pytrees.MAX_CALLS + 1)
    with pytest.raises(ValueError):
        pytrees.static_lab("static", 2, len(pytrees.ACTIVATIONS) + 1)


def test_grad_returns_the_params_tree_and_vmap_maps_what_in_axes_says() -> None:
    run = pytrees.params_run("shared", 3, 4, 5, 2)
    assert run.grad_same_structure and run.grad_same_shapes
    assert run.vmap.ok and run.vmap.value == "(5,)"
    assert [r.axis for r in run.rows] == ["not mapped"] * 4 + ["axis 0"]
    assert pytrees.params_run("shared", 3, 4, 7, 2).vmap.value == "(7,)"
    ensemble = pytrees.params_run("ensemble", 3, 4, 5, 3)
    assert ensemble.vmap.value == "(3,)"
    shapes = {r.path: r.shape for r in ensemble.rows}
    assert shapes["params['hidden']['w']"] == (3, 3, 4)


@pytest.mark.parametrize(("axes", "fragment"), [("all-zero", "axis 0"), ("not-a-prefix", "prefix")])
def test_wrong_in_axes_raise_value_error(axes: str, fragment: str) -> None:
    run = pytrees.params_run(axes, 3, 4, 5, 2)
    assert run.vmap.error_type == "ValueError"
    assert fragment in run.vmap.message


def test_none_and_empty_containers_hold_no_leaves_unless_is_leaf_says() -> None:
    plain = pytrees.empty_demo(False)
    assert len(plain.leaves) == 1 and plain.calls == 1
    assert plain.grads.startswith("{'bias': None, 'cache': {}, 'extras': [], 'state': ()")
    as_leaf = pytrees.empty_demo(True)
    assert len(as_leaf.leaves) == 2 and as_leaf.calls == 2
    assert "'bias': 'None'" in as_leaf.described


def test_a_literal_accepts_what_python_names_and_says_the_real_limits() -> None:
    """A Chinese dict key is a Python name; a deep list is refused for its depth, by number."""
    from jaxplay.pytrees._examples import LiteralError, parse_literal

    assert parse_literal("{'中文键': 1}") == {"中文键": 1}
    with pytest.raises(LiteralError, match="nests 149 levels below its outermost container"):
        parse_literal("[" * 150 + "]" * 150)
    with pytest.raises(LiteralError, match="type ASCII"):
        parse_literal("（1，2）")
    with pytest.raises(LiteralError, match="not accepted: string keys are Python names"):
        parse_literal("{'a b': 1}")


def test_a_container_holding_only_empty_ones_counts_as_holding_no_leaf() -> None:
    """``[[]]``: the outer list is not empty (one child), yet holds no leaf, and the page
    counts it with the empty ones; its sentence said "`None` or an empty container"."""
    tree = pytrees.parse_literal("[[]]")
    assert jax.tree.leaves(tree) == [] and len(tree) == 1
    assert _describe("[[]]").n_empty == 2
    from jaxplay.pytrees import _figures

    assert "below" in _figures._NAMES["empty"]
