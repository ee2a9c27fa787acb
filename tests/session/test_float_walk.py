"""The seed check's path-free float walk (``jsonutil._floats_ok``, one nested level inline) must judge every value
exactly as the path-naming walk (``_find_bad_float``) does: -0.0, NaN and ±Infinity at any depth, in objects
and arrays, beside every kind of leaf."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.session import jsonutil

_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.text(max_size=3),
                    st.sampled_from([0.0, -0.0, 1.5, -2.5, math.nan, math.inf, -math.inf]))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=2), inner, max_size=4)),
                       max_leaves=20)


@settings(max_examples=600, deadline=None)
@given(_VALUES)
def test_the_fast_float_walk_agrees_with_the_path_walk(value):
    assert jsonutil._floats_ok(value) == (jsonutil._find_bad_float(value, "data") is None)


def test_a_bad_float_is_found_at_every_depth_of_objects_and_arrays():
    for bad in (-0.0, math.nan, math.inf, -math.inf):
        for value in ({"a": bad}, {"a": {"b": bad}}, {"a": {"b": {"c": bad}}}, {"a": [{"b": bad}]},
                      [{"a": bad}], [[bad]], {"a": {"b": [bad]}}, {"a": "s", "b": 1, "c": {"d": "x", "e": bad}}):
            assert not jsonutil._floats_ok(value), value
            assert jsonutil.find_bad_float(value) is not None
    assert jsonutil._floats_ok({"a": {"b": [0.0, 1.5, {"c": -1.0}]}, "d": "-0.0", "e": True, "f": None})
