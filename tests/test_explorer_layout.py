"""The explorer's no-answer state, as data: one line saying why, the rest folded, escaped.

The layout in a real browser at 1280 to 1920 px is checked by ``tests/test_lab.py``
(``tests/explorer_layout.py``) on the lab's own run of the ``explore`` notebook.
"""

from __future__ import annotations

from sizing.report.explorer import (
    ExploreResult,
    decision_html,
    explore,
    reason_line,
)
from sizing.request import SizingRequest


def test_no_answer_is_one_line_saying_why() -> None:
    """The first clause is the line; the notes after it fold under "details"; data escaped."""
    result = explore(SizingRequest(providers="aws", pricing="1y"))
    assert result.answer is None
    line, rest = reason_line(result.error)
    assert line.startswith("no candidate instance type has a 1y price (") and line.endswith(")")
    assert "left out" in rest and "left out" not in line
    pane = decision_html(result)
    assert pane.count('class="ns-no-answer"') == 1 and "<details" in pane
    assert f"No answer: {line}</div>" in pane
    hostile = decision_html(ExploreResult(None, [], "bad <script>x</script>\n(a; b); c"))
    assert "<script>" not in hostile and "&lt;script&gt;" in hostile
    assert reason_line("bad\n(a; b); c") == ("bad (a; b)", "c")
