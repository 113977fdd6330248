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
from core.calibration import Calibrated
from core.memory import GIB, ModelSpec
from core.planner import Plan
from core.sizing import Check, training_seconds
from desktop.presenters.calibration_view import GroupRow
from desktop.presenters.formatting import compact
from desktop.presenters.memory_bars import LABELS, Bar
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
_UNITS = (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


def plan_headers(tokens: float) -> tuple[str, ...]:
    return ("#", "GPU", "Layout", "Changes", "GiB per GPU", "Max batch", "Max sequence",
            "Tokens/s", f"{compact(tokens)} tokens in", "Warnings")


def plan_rows(plans: list[Plan], tokens: float) -> list[tuple[str, ...]]:
    return [(str(i), p.gpu, p.layout, "; ".join(p.changes).replace(" -> ", " → ") or "as asked",
             f"{p.device_gib:.1f} of {p.capacity_gib:g}", f"{p.max_micro_batch:,}",
             f"{p.max_seq_len:,}", compact(p.tokens_per_s),
             duration(training_seconds(tokens, p.tokens_per_s)), " ".join(p.warnings))
            for i, p in enumerate(plans, 1)]


def duration(seconds: float | None) -> str:
    """A training time as people say it: 45 min, 6.2 h, 3.5 days."""
    if seconds is None:
        return "—"
    for unit, size in _UNITS:
        if seconds >= size or unit == "s":
            value = seconds / size
            return f"{value:.0f} {unit}" if value >= 10 or unit == "s" else f"{value:.1f} {unit}"
    return ""


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
    if draft.recommend:
        return f"Headroom's pick of GPU and layout, up to {draft.max_gpus} GPUs"
    gpus = ", ".join(draft.gpus)
    where = f"{draft.per_node} per node × {draft.nodes} nodes" if draft.nodes > 1 else (
        f"{draft.n_gpus} GPU{'s' if draft.n_gpus > 1 else ''}")
    layout = [SHARDING[draft.sharding]] if draft.sharding != "none" else []
    layout += [f"TP {draft.tp}"] * (draft.tp > 1) + [f"PP {draft.pp}"] * (draft.pp > 1)
    return f"{gpus}: {where}" + (f", {', '.join(layout)}" if layout else "")


def analytical_text(check: Check) -> str:
    est = check.estimate
    return (f"{est.device / GIB:.1f} GiB per GPU as nvidia-smi shows it (PyTorch allocated "
            f"{est.allocated / GIB:.1f}, reserved {est.reserved / GIB:.1f}), at the {est.phase}")


def calibrated_text(found: Calibrated) -> str:
    return (f"{found.gib:.1f} GiB per GPU (90 % interval {found.low_gib:.1f}–"
            f"{found.high_gib:.1f}), fitted on the group {found.group}")


def trust_text(group: GroupRow | None) -> str:
    if group is None:
        return ""
    return ("Trusted: " if group.trusted else "Use with care: ") + group.verdict


@dataclass(frozen=True)
class Outcome:
    """What the result page shows, gathered for the report."""

    draft: Draft
    bars: list[Bar]
    primary: Check | None
    reason: str  # why the figures are uncalibrated ("" when they are calibrated)
    group: GroupRow | None
    plans: list[Plan]
    names: dict[int, str]

    @property
    def leaned_on(self) -> list[str]:
        found = self.primary.calibrated if self.primary else None
        return [self.names.get(i, f"run {i}") for i in (found.run_ids if found else ())]


def blocks(outcome: Outcome) -> list[tuple]:
    """The report as (kind, ...) blocks: h1, h2, p, list, table (headers, rows), image."""
    d, spec = outcome.draft, outcome.draft.spec
    model = model_line(spec) + (f"; from {d.origin}" if d.origin else "")
    out: list[tuple] = [
        ("h1", f"Sizing {spec.name}: {METHODS[d.method]}"),
        ("p", f"Headroom {__version__}, {datetime.now():%Y-%m-%d %H:%M}"),
        ("table", ("", ""), [("Model", model), ("Training", setup_line(d)),
                             ("Hardware", hardware_line(d))]),
        ("h2", "Memory per GPU"),
    ]
    out += _figures(outcome)
    out.append(("image", IMAGE_ALT))
    out.append(("table", ("GPU", "Capacity GiB", "Predicted GiB", "Status"),
                [(b.label.replace("\n", ", "), f"{b.capacity_gib:g}", f"{b.device_gib:.1f}",
                  b.status) for b in outcome.bars]))
    if outcome.primary:
        out.append(("table", ("Component", "GiB"), _breakdown(outcome.primary)))
    out.append(("h2", "Plans that fit"))
    if outcome.plans:
        out.append(("table", plan_headers(d.tokens), plan_rows(outcome.plans, d.tokens)))
    else:
        out.append(("p", f"No layout of up to {d.max_gpus} GPUs fits with a "
                         f"{d.margin:.0%} margin."))
    return out


def _figures(outcome: Outcome) -> list[tuple]:
    if outcome.primary is None:
        return []
    out = [("p", "Analytical: " + analytical_text(outcome.primary))]
    found = outcome.primary.calibrated
    if found is None:
        out.append(("p", "Calibrated: " + outcome.reason))
    else:
        out.append(("p", "Calibrated on your runs: " + calibrated_text(found)))
        if trust_text(outcome.group):
            out.append(("p", trust_text(outcome.group)))
        out.append(("list", [f"leaned on: {name}" for name in outcome.leaned_on]))
    notes = list(outcome.primary.estimate.notes)
    if notes:
        out.append(("list", notes))
    return out


def _breakdown(check: Check) -> list[tuple[str, str]]:
    rows = [(LABELS[k], f"{v / GIB:.2f}") for k, v in check.estimate.breakdown.items() if v > 0]
    runtime = (check.estimate.device - check.estimate.allocated) / GIB
    return rows + [(LABELS["runtime"], f"{runtime:.2f}"),
                   ("Total (device)", f"{check.estimate.device / GIB:.2f}")]


def figures_html(outcome: Outcome) -> str:
    """The result page's figures: analytical beside calibrated, runs as links ("run:ID")."""
    check = outcome.primary
    if check is None:
        return ""
    gpu = html.escape(check.gpu.name)
    d = outcome.draft
    parts = [f"<p><b>{html.escape(d.spec.name)}</b>: {html.escape(setup_line(d))}; "
             f"{html.escape(hardware_line(d))}</p>",
             f"<p><b>Analytical</b>: {html.escape(analytical_text(check))}</p>"]
    found = check.calibrated
    if found is None:
        parts.append(f"<p style='color:#8d6e00'><b>Uncalibrated</b>: "
                     f"{html.escape(outcome.reason)}</p>")
    else:
        colour = "#2f7d32" if outcome.group and outcome.group.trusted else "#8d6e00"
        links = ", ".join(f"<a href='run:{i}'>{html.escape(outcome.names.get(i, f'run {i}'))}</a>"
                          for i in found.run_ids)
        parts.append(f"<p><b>Calibrated on your runs</b> (for {gpu}): "
                     f"{html.escape(calibrated_text(found))}"
                     f"<br><span style='color:{colour}'>{html.escape(trust_text(outcome.group))}"
                     f"</span><br>Leaned on: {links}</p>")
    rows = "".join(f"<tr><td>{html.escape(name)}</td><td align='right'>&nbsp;&nbsp;{gib}</td>"
                   "</tr>" for name, gib in _breakdown(check))
    parts.append(f"<p><b>Per GPU, by component</b> (GiB)</p><table>{rows}</table>")
    notes = list(check.estimate.notes) + ([outcome.draft.spec.note] if outcome.draft.spec.note
                                          else [])
    if notes:
        parts.append("<p style='color:#616e7c'>" + "<br>".join(html.escape(n) for n in notes)
                     + "</p>")
    return "".join(parts)


# ---- Renderings


def markdown(report: list[tuple], image: str) -> str:
    """Markdown with the chart as the file ``image`` beside it."""
    lines: list[str] = []
    for kind, *rest in report:
        if kind in ("h1", "h2"):
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
        if kind in ("h1", "h2", "p"):
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
        if kind in ("h1", "h2"):
            underline = "=" if kind == "h1" else "-"
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
