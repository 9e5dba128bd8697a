"""One self-contained HTML page: sections of text, tables and PNG plots embedded as base64."""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass, field

CSS = """
body { font-family: -apple-system, 'Segoe UI', 'DejaVu Sans', Helvetica, Arial, sans-serif; color: #222;
       max-width: 1280px; margin: 0 auto; padding: 16px 28px 60px; line-height: 1.45; }
h1 { font-size: 26px; margin: 10px 0 4px; } h2 { font-size: 20px; margin: 34px 0 6px;
     border-bottom: 1px solid #ddd; padding-bottom: 3px; } h3 { font-size: 16px; margin: 22px 0 4px; }
p.lead { font-size: 15px; color: #444; margin-top: 4px; }
p.what { color: #333; margin: 4px 0 8px; max-width: 1100px; }
p.note { color: #777; font-style: italic; }
img.plot { width: 100%; max-width: 1200px; border: 1px solid #eee; margin: 6px 0 10px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f7f7f7; padding: 8px 10px; overflow-x: auto; border-radius: 4px; }
.ok { color: #0a7a2f; font-weight: 600; } .bad { color: #c0392b; font-weight: 600; }
nav { background: #fafafa; border: 1px solid #eee; padding: 6px 12px; border-radius: 4px; font-size: 14px; }
nav a { margin-right: 14px; }
"""


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def img(path: str, alt: str) -> str:
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def table(headers: list[str], rows: list[list], numeric: set[int] | None = None, raw: set[int] | None = None) -> str:
    """An HTML table; cells are escaped unless their column is in ``raw``."""
    numeric, raw = numeric or set(), raw or set()
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"]
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            text = value if i in raw else esc("" if value is None else value)
            cells.append(f'<td class="num">{text}</td>' if i in numeric else f"<td>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</table>"


def verdict(holds) -> str:
    if holds is None:
        return '<span class="note">not checked</span>'
    return '<span class="ok">holds</span>' if holds else '<span class="bad">VIOLATED</span>'


@dataclass
class Section:
    title: str
    anchor: str
    body: list[str] = field(default_factory=list)   # HTML fragments
    level: int = 2
    plots: int = 0

    def text(self, paragraph: str, cls: str = "what") -> Section:
        self.body.append(f'<p class="{cls}">{paragraph}</p>')
        return self

    def plot(self, path: str | None, alt: str, explanation: str, missing: str | None = None) -> Section:
        """A plot with the sentence that says what it shows; ``missing`` when ``path`` is None."""
        if path is None:
            if missing:
                self.body.append(f'<p class="note">{esc(missing)}</p>')
            return self
        self.body.append(f'<p class="what">{explanation}</p>')
        self.body.append(img(path, alt))
        self.plots += 1
        return self

    def html(self) -> str:
        tag = f"h{self.level}"
        return f'<section id="{esc(self.anchor)}"><{tag}>{esc(self.title)}</{tag}>' + "\n".join(self.body) + "</section>"


def page(title: str, lead: str, sections: list[Section], nav: bool = True) -> str:
    links = ""
    if nav and len(sections) > 2:
        links = "<nav>" + "".join(f'<a href="#{esc(s.anchor)}">{esc(s.title)}</a>' for s in sections if s.level == 2) + "</nav>"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1><p class=\"lead\">{lead}</p>{links}\n"
            + "\n".join(s.html() for s in sections) + "\n</body></html>\n")


def write_page(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
