"""The answers of `tests/golden.py`, byte for byte as recorded (re-record on purpose only)."""

from __future__ import annotations

import pytest
from golden import ANSWERS, answer, held, recorded


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_answer_is_as_recorded(name):
    assert held(answer(name)) == recorded(name).read_text()
