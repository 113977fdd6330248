"""The wizard's result in words: the figures, the plans, and the report built from them.

The result page, the exported report (Markdown beside a PNG, or HTML with the
chart inside) and the copied text all come from one list of blocks here, so
they never disagree.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from core import __version__
from core.memory import GIB, ModelSpec
from core.planner import Plan
from desktop.presenters import sizing_plans
from desktop.presenters.memory_bars import LABELS, LEADS, Bar, other_figures
from desktop.presenters.sizing_form import (
    ATTENTION,
    LORA_TARGETS,
    METHODS,
    OPTIMIZERS,
    PRECISIONS,
    RECOMPUTE,
    SHARDING,
    Draft,
)

IMAGE_ALT = "Memory per GPU against each GPU's capacity"


def model_line(spec: ModelSpec) -> str:
    return spec.describe() + (f" ({spec.note})" if spec.note else "")


def setup_line(draft: Draft) -> str:
    goal = METHODS[draft.method]
    if draft.method in ("lora", "qlora"):
        goal += f" rank {draft.lora_rank} on {LORA_TARGETS[draft.lora_targets].lower()}"
    parts = [goal, PRECISIONS[draft.precision], OPTIMIZERS[draft.optimizer],
             f"micro batch {draft.micro_batch} × {draft.seq_len:,} tokens"]
    if draft.grad_accum > 1:
        parts.append(f"gradient accumulation {draft.grad_accum}")
    parts += [f"recompute {RECOMPUTE[draft.recompute].lower()}", ATTENTION[draft.attention]]
    return ", ".join(parts)


def hardware_line(draft: Draft) -> str:
    if draft.mode == "card":
        return f"what your {draft.card_count} × {draft.card_gpu().name} can run"
    if draft.recommend:
        return f"Headroom's pick of GPU and layout, {budget_words(draft.max_gpus)}"
    gpus = ", ".join(draft.gpus)
    where = f"{draft.per_node} per node × {draft.nodes} nodes" if draft.nodes > 1 else (
        f"{draft.n_gpus} GPU{'s' if draft.n_gpus > 1 else ''}")
    layout = [SHARDING[draft.sharding]] if draft.sharding != "none" else []
    layout += [f"TP {draft.tp}"] * (draft.tp > 1) + [f"PP {draft.pp}"] * (draft.pp > 1)
    return f"{gpus}: {where}" + (f", {', '.join(layout)}" if layout else "")


def budget_words(max_gpus: int | None) -> str:
    return f"up to {max_gpus} GPUs" if max_gpus else "on as many GPUs as it takes"


def lead_text(bar: Bar) -> str:
    """The figure the verdict rests on, and what PyTorch would report beside it."""
    est = bar.check.estimate
    text = (f"{bar.device_gib:.1f} GiB per GPU on {bar.check.gpu.name}, from "
            f"{LEADS[bar.lead]}")
    if bar.lead == "analytical":
        text += (f" (PyTorch allocated {est.allocated / GIB:.1f}, reserved "
                 f"{est.reserved / GIB:.1f}; nvidia-smi shows the total), at the {est.phase}")
    return text


@dataclass(frozen=True)
class Outcome:
    """What the result page shows, gathered for the report."""

    draft: Draft
    bars: list[Bar]
    shown: Bar | None  # the bar the figures and breakdown are for (the selected plan's)
    reason: str  # why the figures are uncalibrated ("" when they are calibrated)
    plans: list[Plan]
    names: dict[int, str]
    headline: str

    @property
    def leaned_on(self) -> list[str]:
        found = self.shown.check.calibrated if self.shown else None
        return [self.names.get(i, f"run {i}") for i in (found.run_ids if found else ())]

    @property
    def card(self) -> tuple[str, int] | None:
        d = self.draft
        return (d.card_gpu().name, d.card_count) if d.mode == "card" else None


def blocks(outcome: Outcome) -> list[tuple]:
    """The report as (kind, ...) blocks: h1, h2, h3, p, list, table (headers, rows), image."""
    d, spec = outcome.draft, outcome.draft.spec
    model = model_line(spec) + (f"; from {d.origin}" if d.origin else "")
    out: list[tuple] = [
        ("h1", f"Sizing {spec.name}: {METHODS[d.method]}"),
        ("p", f"Headroom {__version__}, {datetime.now():%Y-%m-%d %H:%M}"),
        ("table", ("", ""), [("Model", model), ("Training", setup_line(d)),
                             ("Data", d.data_line()), ("Hardware", hardware_line(d))]),
        ("p", outcome.headline),
        ("h2", "Memory per GPU"),
    ]
    out += _figures(outcome)
    out.append(("image", IMAGE_ALT))
    out.append(("table", ("GPU", "Capacity GiB", "GiB per GPU", "Status"),
                [(b.caption, f"{b.capacity_gib:g}", f"{b.device_gib:.1f}",
                  b.status) for b in outcome.bars]))
    if outcome.shown:
        out.append(("table", ("Component", "GiB"), _breakdown(outcome.shown)))
    out.append(("h2", "Plans that fit"))
    for section in sizing_plans.sections(outcome.plans, d.tokens, outcome.card):
        out.append(("h3", section.title))
        out.append(("table", sizing_plans.HEADERS, [r.cells for r in section.rows]))
    if not outcome.plans:
        out.append(("p", f"No layout {budget_words(d.max_gpus)} fits with a "
                         f"{d.margin:.0%} margin."))
    return out


def _figures(outcome: Outcome) -> list[tuple]:
    shown = outcome.shown
    if shown is None:
        return []
    out = [("p", f"{shown.caption}: {lead_text(shown)}")]
    other = other_figures(shown.check)
    out.append(("p", other or f"Calibrated: {outcome.reason}"))
    if outcome.leaned_on:
        out.append(("list", [f"leaned on: {name}" for name in outcome.leaned_on]))
    notes = list(shown.check.estimate.notes)
    if notes:
        out.append(("list", notes))
    return out


def _breakdown(bar: Bar) -> list[tuple[str, str]]:
    rows = [(LABELS[k], f"{v:.2f}") for k, v in bar.segments if v > 0]
    return rows + [("Total (device)", f"{bar.device_gib:.2f}")]


def figures_html(outcome: Outcome) -> str:
    """The result page's side panel: the leading figure, the calibrated one's runs as links."""
    shown = outcome.shown
    if shown is None:
        return ""
    d = outcome.draft
    parts = [f"<p><b>{html.escape(d.spec.name)}</b>: {html.escape(setup_line(d))}; "
             f"{html.escape(hardware_line(d))}. Budget: {html.escape(d.data_line())}.</p>",
             f"<p><b>{html.escape(shown.caption)}</b>: "
             f"{html.escape(lead_text(shown))}</p>"]
    found = shown.check.calibrated
    if found is None:
        parts.append(f"<p style='color:#8d6e00'><b>Uncalibrated</b>: "
                     f"{html.escape(outcome.reason)}</p>")
    else:
        links = ", ".join(f"<a href='run:{i}'>{html.escape(outcome.names.get(i, f'run {i}'))}</a>"
                          for i in found.run_ids)
        trust = "trusted" if found.trusted else "not trusted"
        parts.append(f"<p><b>Calibrated on your runs</b> ({trust}, group "
                     f"{html.escape(found.group)}): {found.gib:.1f} GiB, 90 % interval "
                     f"{found.low_gib:.1f}–{found.high_gib:.1f}; leaned on {links}</p>")
    scaled = " (the analytical split, scaled to the calibrated total)" * (shown.lead !=
                                                                          "analytical")
    rows = "".join(f"<tr><td>{html.escape(name)}</td><td align='right'>&nbsp;&nbsp;{gib}</td>"
                   "</tr>" for name, gib in _breakdown(shown))
    parts.append(f"<p><b>Per GPU, by component</b> (GiB){scaled}</p><table>{rows}</table>")
    notes = list(shown.check.estimate.notes) + ([d.spec.note] if d.spec.note else [])
    if notes:
        parts.append("<p style='color:#616e7c'>" + "<br>".join(html.escape(n) for n in notes)
                     + "</p>")
    return "".join(parts)


# ---- Renderings


def markdown(report: list[tuple], image: str) -> str:
    """Markdown with the chart as the file ``image`` beside it."""
    lines: list[str] = []
    for kind, *rest in report:
        if kind in ("h1", "h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + rest[0], ""]
        elif kind == "p":
            lines += [rest[0], ""]
        elif kind == "list":
            lines += [f"- {item}" for item in rest[0]] + [""]
        elif kind == "table":
            headers, rows = rest
            lines += [_md_row(headers), _md_row(["---"] * len(headers))]
            lines += [_md_row(r) for r in rows] + [""]
        elif kind == "image":
            lines += [f"![{rest[0]}]({image})", ""]
    return "\n".join(lines)


def write_report(path: Path, report: list[tuple], png: bytes) -> None:
    """HTML with the chart inside, or Markdown with the chart as a PNG beside it."""
    if path.suffix.lower() in (".html", ".htm"):
        path.write_text(html_page(report, png), encoding="utf-8")
        return
    image = path.with_name(f"{path.stem}-chart.png")
    image.write_bytes(png)
    path.write_text(markdown(report, image.name), encoding="utf-8")


def _md_row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def html_page(report: list[tuple], png: bytes) -> str:
    """One self-contained HTML file: the chart is inside it as a data URI."""
    body: list[str] = []
    for kind, *rest in report:
        if kind in ("h1", "h2", "h3", "p"):
            body.append(f"<{kind}>{html.escape(rest[0])}</{kind}>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in rest[0]) + "</ul>")
        elif kind == "table":
            headers, rows = rest
            head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
            cells = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r)
                            + "</tr>" for r in rows)
            body.append(f"<table><tr>{head}</tr>{cells}</table>")
        elif kind == "image":
            data = base64.b64encode(png).decode("ascii")
            body.append(f'<img alt="{html.escape(rest[0])}" src="data:image/png;base64,{data}">')
    return _HTML.format(title=html.escape(report[0][1]), body="\n".join(body))


def text(report: list[tuple]) -> str:
    """Plain text with aligned columns, for the clipboard."""
    lines: list[str] = []
    for kind, *rest in report:
        if kind in ("h1", "h2", "h3"):
            underline = {"h1": "=", "h2": "-", "h3": "·"}[kind]
            lines += [rest[0], underline * len(rest[0]), ""]
        elif kind == "p":
            lines += [rest[0], ""]
        elif kind == "list":
            lines += [f"  - {item}" for item in rest[0]] + [""]
        elif kind == "table":
            lines += _text_table(*rest) + [""]
    return "\n".join(lines)


def _text_table(headers, rows) -> list[str]:
    table = [tuple(map(str, headers)), *(tuple(map(str, r)) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
           for row in table]
    if any(headers):
        out.insert(1, "  ".join("-" * w for w in widths))
    return out if any(headers) else out[1:]


_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #1f2933; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.2em; }}
th, td {{ border: 1px solid #cbd2d9; padding: 3px 8px; text-align: left; font-size: 14px; }}
th {{ background: #f0f4f8; }}
img {{ max-width: 100%; }}
</style></head>
<body>
{body}
</body></html>
"""
