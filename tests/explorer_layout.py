"""The explorer fits the screen: in JupyterLab, in a real Chromium, at 1280 to 1920 px wide.

Called by ``tests/test_lab.py`` on the ``explore`` notebook it has open (one lab, one run of
the notebook). At each window width the page's boxes are read with ``getBoundingClientRect``
and every control of the explorer must be at least its width
(`sizing.report.explorer.CONTROL_WIDTH_PX`), overlap neither the decision card, the no-answer
line, the options table nor a chart, lie inside the output area, and be what the browser finds
at its left, middle and right (``elementFromPoint``: nothing drawn over it, nothing clipped).
A wide table scrolls inside its own box: the output area itself never overflows. Then the
widgets ask for what has no answer (AWS at 1-year commitment prices, which the shipped AWS rows
do not carry) and the same holds with the one line that says why; the widgets then recover an
answer. Every wait is for a condition (generous limits: the machine may be busy).
"""

from __future__ import annotations

import json
from typing import Any

from sizing.report.explorer import CONTROL_WIDTH_PX
from tests.browser import ARTIFACTS, wait_for

WIDTHS = (1280, 1440, 1600, 1920)
HEIGHT = 1000

#: The explorer's boxes: each control (its label, box, and whether the browser finds the
#: control itself at three points across it once scrolled into view; its label's box and the
#: box of what it labels), the boxes no control may overlap, the output area and how far its
#: content overflows it.
_GEOMETRY_JS = """
const first = document.querySelector('.jp-OutputArea-output .widget-slider');
if (!first) return null;
const out = first.closest('.jp-OutputArea-output');
const box = e => { const r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
          height: r.height}; };
const controls = Array.from(out.querySelectorAll(
  '.widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-select-multiple'
)).map(c => {
  c.scrollIntoView({block: 'center', inline: 'nearest'});
  const r = c.getBoundingClientRect();
  const y = r.top + Math.min(r.height / 2, 14);
  const seen = [r.left + 4, (r.left + r.right) / 2, r.right - 4].map(x => {
    const e = document.elementFromPoint(x, y);
    return !!e && c.contains(e);
  });
  const label = c.querySelector('.widget-label');
  const body = Array.from(c.children).find(e => e !== label && e.getBoundingClientRect().width);
  return {label: label ? label.innerText : c.className, box: box(c), seen: seen,
          label_box: label ? box(label) : null, body: body ? box(body) : null};
});
const others = [];
const name = (what, e) => others.push({what: what, box: box(e)});
out.querySelectorAll('.ns-explorer-pane').forEach(e => name('decision pane', e));
out.querySelectorAll('#decision-summary').forEach(e => name('decision card', e));
out.querySelectorAll('.ns-no-answer').forEach(e => name('no-answer line', e));
out.querySelectorAll('.ns-table-box').forEach(e => name('options table', e));
out.querySelectorAll('.js-plotly-plot').forEach(e => name('chart', e));
const browser = document.querySelector('.jp-FileBrowser');
const tables = Array.from(out.querySelectorAll('.ns-table-box')).map(e => ({
  overflow_x: getComputedStyle(e).overflowX, scroll: e.scrollWidth, client: e.clientWidth}));
const reason = out.querySelector('.ns-no-answer');
return {controls: controls, others: others, out: box(out),
        out_scroll: out.scrollWidth, out_client: out.clientWidth,
        shell: document.querySelector('#main').getBoundingClientRect().width,
        browser: browser ? browser.getBoundingClientRect().width : 0,
        tables: tables, reason: reason ? reason.innerText : null,
        card: !!out.querySelector('#decision-summary')};
"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two boxes share more than a pixel's sliver."""
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1 and (
        min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1
    )


def _geometry(d: Any) -> dict[str, Any]:
    """The boxes, once two reads in a row agree (the layout has settled)."""
    last: list[str] = []

    def settled() -> dict[str, Any] | None:
        g = d.execute_script(_GEOMETRY_JS)
        snapshot = json.dumps(g, sort_keys=True)
        same = bool(last) and last[-1] == snapshot
        last.append(snapshot)
        return g if same and g else None

    return dict(wait_for(settled, 120, "the explorer's layout to settle"))


def _resize(d: Any, width: int) -> None:
    d.set_window_size(width, HEIGHT)
    d.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
    )
    wait_for(
        lambda: (
            d.execute_script("return window.innerWidth") == width
            and abs(d.execute_script(_GEOMETRY_JS)["shell"] - width) < 2
        ),
        60,
        f"the lab to lay out at {width} px",
    )


def _check_fits(d: Any, state: str, width: int) -> dict[str, Any]:
    """Fail unless every control is whole, in reach and clear of the card, table and charts."""
    g = _geometry(d)
    where = f"{state} at {width} px"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    d.execute_script("document.querySelector('.ns-explorer').scrollIntoView({block: 'start'});")
    d.save_screenshot(str(ARTIFACTS / f"explorer-{state.replace(' ', '-')}-{width}.png"))
    assert g["browser"] > 150, f"{where}: the file browser is not open ({g['browser']:.0f} px)"
    assert len(g["controls"]) >= 13, (where, [c["label"] for c in g["controls"]])
    out = g["out"]
    _check_labels(g["controls"], where)
    for c in g["controls"]:
        b, label = c["box"], c["label"]
        assert b["width"] >= CONTROL_WIDTH_PX - 0.5, f"{where}: {label} is {b['width']:.0f} px"
        assert out["left"] - 1 <= b["left"] and b["right"] <= out["right"] + 1, (where, label, b)
        assert all(c["seen"]), f"{where}: {label} is covered or clipped ({c['seen']})"
        for o in g["others"]:
            assert not _overlap(b, o["box"]), f"{where}: the {o['what']} covers {label}"
    for o in g["others"]:
        b = o["box"]
        assert out["left"] - 1 <= b["left"] and b["right"] <= out["right"] + 1, (where, o)
    assert g["out_scroll"] <= g["out_client"] + 1, f"{where}: the output overflows: {g}"
    for t in g["tables"]:  # a table wider than its box scrolls inside it
        assert t["scroll"] <= t["client"] + 1 or t["overflow_x"] == "auto", (where, t)
    return g


def _check_labels(controls: list[dict[str, Any]], where: str) -> None:
    """Fail unless every label sits beside what it labels, all of one width."""
    widths = set()
    for c in controls:
        label, body, name = c["label_box"], c["body"], c["label"]
        assert label and body, f"{where}: {name} has no label or nothing beside it"
        assert label["right"] <= body["left"] + 0.5, f"{where}: {name}'s label is not beside it"
        assert label["top"] < body["bottom"] and body["top"] < label["bottom"], (where, name)
        widths.add(round(label["width"]))
    assert len(widths) == 1, f"{where}: labels of widths {sorted(widths)} px"


def check_explorer_fits(d: Any, watch: Any) -> None:
    """Fail unless the explorer (open in the lab) fits at every width, answered or not.

    ``watch`` is the lab's watch over the notebook's kernel (``tests.test_lab._Watch``).
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    wait_for(lambda: (_geometry(d) or {}).get("card"), 120, "the decision card")
    for width in WIDTHS:
        _resize(d, width)
        g = _check_fits(d, "answer", width)
        assert g["tables"] and g["card"], f"answer at {width} px: no card or table"

    def pick(label: str, text: str) -> None:
        dropdown = next(
            s for s in d.find_elements(By.CSS_SELECTOR, ".widget-dropdown") if label in s.text
        )
        Select(dropdown.find_element(By.TAG_NAME, "select")).select_by_visible_text(text)

    def table() -> str:
        return str(
            d.execute_script(
                "const t = document.querySelector('.jp-OutputArea table.ns-table');"
                "return t ? t.innerText : '';"
            )
        )

    pick("provider", "aws")
    # the kernel has answered the provider (the table shows AWS alone) before the next pick,
    # so that the two changes never cross on a busy machine
    watch.until(lambda: "aws" in table() and "gcp" not in table(), 120, "the AWS answer")
    pick("pricing", "1-year commitment")
    watch.until(lambda: bool(_geometry(d)["reason"]), 120, "the no-answer line")
    for width in reversed(WIDTHS):
        _resize(d, width)
        g = _check_fits(d, "no answer", width)
        assert "1y price" in g["reason"] and "\n" not in g["reason"].strip(), g["reason"]
        assert not g["card"] and not g["tables"]
    pick("pricing", "on-demand")  # the controls in reach recover an answer
    watch.until(lambda: _geometry(d)["card"], 120, "an answer again")
    watch.check()
