"""A report's notebook and PDF reach their folder by an atomic write, never through a link."""

from __future__ import annotations

import pytest

from sizing.report.execute import _publish, to_pdf


def test_pdf_onto_a_planted_link_is_refused_and_the_target_untouched(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    page = tmp_path / "r.html"
    page.write_text("<html><body>report</body></html>")
    link = tmp_path / "r.pdf"
    link.symlink_to(target)
    with pytest.raises(OSError):
        to_pdf(page, link)
    assert target.read_text() == "keep" and link.is_symlink()
    assert not list(tmp_path.glob(".print-*"))  # the print copy is removed too


def test_an_executed_notebook_is_published_atomically_and_never_through_a_link(tmp_path):
    made = tmp_path / "private.ipynb"
    made.write_text('{"cells": []}')
    out = tmp_path / "out" / "report.ipynb"
    out.parent.mkdir()
    _publish(made, out)
    assert out.read_text() == '{"cells": []}' and not out.is_symlink()
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    out.unlink()
    out.symlink_to(target)
    with pytest.raises(OSError):
        _publish(made, out)
    assert target.read_text() == "keep"
    _publish(tmp_path / "never-made.ipynb", tmp_path / "out" / "other.ipynb")
    assert not (tmp_path / "out" / "other.ipynb").exists()
