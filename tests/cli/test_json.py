"""The JSON writer: json.dumps's indented text, character for character."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformkit.cli._json import dumps

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=())),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=30,
)


class TestDumps:
    """dumps writes what json.dumps(indent=2, ensure_ascii=False) writes."""

    @given(values)
    def test_matches_the_standard_library(self, value: object) -> None:
        """Any JSON data, lone surrogates and empty containers included."""
        assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)

    @pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
    def test_refuses_what_strict_json_cannot_hold(self, number: float) -> None:
        """NaN and the infinities, anywhere: a ValueError, never a report no strict reader takes."""
        for value in (number, [1.0, number], {"report": {"duration": number}}):
            with pytest.raises(ValueError, match="not JSON compliant"):
                dumps(value)

    @pytest.mark.parametrize("value", [{1: "a"}, [b"bytes"], {"a": (1, 2)}, object()])
    def test_refuses_what_is_not_json_data(self, value: object) -> None:
        """Bytes, a tuple, any other object, and a key that is not a string: a TypeError."""
        with pytest.raises(TypeError):
            dumps(value)
