"""Plain-text and Markdown tables, shared by the renderers."""

from __future__ import annotations


def text_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    """Columns padded to their widest cell, those in `right` right-aligned."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def md_escape(s: str) -> str:
    """A cell's text that cannot end the cell or open an HTML tag."""
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
