"""The PRNG claims catch the hard-coded list of three implementations (issue 21, item 8), and
the implementations caption states what the rows show."""

from __future__ import annotations

import pytest

from jaxplay import prng
from jaxplay.core import claims
from jaxplay.prng import _claims, _seeds

REGISTRY = claims.gather(["prng"])


def test_the_page_lists_what_jax_registers() -> None:
    assert REGISTRY["prng.registered_impls"].run().holds
    assert set(_seeds.DOCUMENTED_IMPLS) <= set(prng.IMPLS)
    assert prng.IMPLS[0] == "threefry2x32"


def test_a_hard_coded_list_of_three_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_seeds, "IMPLS", ("threefry2x32", "rbg", "unsafe_rbg"))
    result = REGISTRY["prng.registered_impls"].run()
    assert not result.holds and "philox2x32" in result.observed


def test_jaxs_documented_table_is_read_column_by_column() -> None:
    rows = _claims._documented_rows()
    assert rows["identical across CPU/GPU/TPU"] == {"Threefry", "Threefry*", "Philox"}
    assert {"rbg", "unsafe_rbg"} <= rows["identical across shardings"]
    assert REGISTRY["prng.portable"].run().holds


def test_the_caption_says_fold_in_and_vmap_from_the_rows() -> None:
    infos = prng.impl_infos(9)
    text = prng.explain_impls(infos)
    assert f"{len(prng.IMPLS)} implementations" in text
    assert "`split` and `fold_in`" in text
    assert "differ only" not in text
    by_name = {i.impl: i for i in infos}
    assert not by_name["rbg"].vmap_exact and not by_name["unsafe_rbg"].vmap_exact
    assert by_name["threefry2x32"].vmap_exact and by_name["philox4x32"].vmap_exact
