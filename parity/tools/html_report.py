"""``python -m parity report --html PATH``: one self-contained HTML page of the last run's reports.

The page holds, with no external resource (styles inline, images as ``data:image/png;base64``):

- the environment fingerprint the run checked in;
- a summary table of the cases (id, tier, backend, status, time): every case of the last
  ``python -m parity run`` (``last_run.json``), else every report found;
- for each failing case: its first difference, the localisation (the greppable
  ``first divergence: ...`` line and its evidence), legacy-vs-new curves of loss, grad norm and
  LR per step with the divergence step marked, and a heat map of where the first diverging
  tensor's elements differ (ULP distance; block maxima when the tensor is large), drawn with
  matplotlib's Agg backend from what the JSON report stores (``localisation.curves`` and
  ``localisation.tensor``, see ``parity.tools.localise``).

It reads JSON only: it neither imports the framework nor reruns anything.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parity.fileio import write_text_atomic
from parity.report import load_reports, load_run_summary
from parity.select import keyword_matches

__all__ = ["Written", "write_html", "curves_png", "heatmap_png"]

_FAILING = ("fail", "error")
_LEGACY_STYLE = {"color": "#1f77b4", "linestyle": "-", "marker": "o", "markersize": 4, "linewidth": 1.6}
_NEW_STYLE = {"color": "#d62728", "linestyle": "--", "marker": "x", "markersize": 5, "linewidth": 1.4}
_CURVES = (
    ("loss", "loss (reported)"),
    ("grad_norm", "grad norm (before clipping)"),
    ("lr", "LR after the step"),
)


@dataclass
class Written:
    path: Path
    failing: int  # failing cases shown
    images: int  # images embedded
    png_files: list[Path]


# ----------------------------------------------------------------------------- images
def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def curves_png(
    case_id: str, curves: Mapping[str, Any], localisation: Mapping[str, Any] | None
) -> bytes | None:
    """Loss, grad norm and LR per step of both sides (top row) and |new - legacy| (bottom row),
    the first divergent step marked; None when there is nothing to draw."""
    legacy, new = curves.get("legacy") or {}, curves.get("new") or {}
    if not any(legacy.get(k) or new.get(k) for k, _ in _CURVES):
        return None
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 3, figsize=(13, 6.4), sharex="col", gridspec_kw={"height_ratios": [3, 2]})
    step = (localisation or {}).get("step")
    phase = (localisation or {}).get("phase")
    for col, (key, title) in enumerate(_CURVES):
        top, bottom = axes[0][col], axes[1][col]
        xs_l, ys_l = _series(legacy, key)
        xs_n, ys_n = _series(new, key)
        if xs_l:
            top.plot(xs_l, ys_l, label="legacy (LLMTrainer)", **_LEGACY_STYLE)
        if xs_n:
            top.plot(xs_n, ys_n, label="new (HyperTrainer)", **_NEW_STYLE)
        top.set_title(title)
        top.set_ylabel(key.replace("_", " "))
        top.grid(True, alpha=0.3)
        diff_x, diff_y = _abs_diff(xs_l, ys_l, xs_n, ys_n)
        if diff_x:
            bottom.plot(diff_x, diff_y, color="#444444", marker=".", linewidth=1.2)
        bottom.set_ylabel("|new - legacy|")
        bottom.set_xlabel("optimizer step")
        bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
        bottom.grid(True, alpha=0.3)
        if isinstance(step, int):
            for ax in (top, bottom):
                ax.axvline(step, color="#ff7f0e", linestyle=":", linewidth=2)
    if isinstance(step, int):
        axes[0][0].plot(
            [],
            [],
            color="#ff7f0e",
            linestyle=":",
            linewidth=2,
            label=f"first divergence: step {step} ({phase})",
        )
    axes[0][0].legend(loc="best", fontsize=8)
    source = curves.get("source") or ""
    fig.suptitle(f"{case_id}\nlegacy vs new per step ({source})", fontsize=10)
    fig.tight_layout()
    return _png(fig)


def _series(side: Mapping[str, Any], key: str) -> tuple[list[int], list[float]]:
    values = side.get(key) or []
    steps = side.get("step") or list(range(1, len(values) + 1))
    pairs = [(int(s), float(v)) for s, v in zip(steps, values, strict=False) if v is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _abs_diff(
    xl: list[int], yl: list[float], xn: list[int], yn: list[float]
) -> tuple[list[int], list[float]]:
    new = dict(zip(xn, yn, strict=True))
    xs = [x for x in xl if x in new]
    old = dict(zip(xl, yl, strict=True))
    return xs, [abs(new[x] - old[x]) for x in xs]


def heatmap_png(case_id: str, tensor: Mapping[str, Any]) -> bytes | None:
    """Where the first diverging tensor differs: log10(1 + distance) per element (or block)."""
    import numpy as np

    grid = tensor.get("grid")
    if not grid:
        return None
    data = np.log10(1.0 + np.asarray(grid, dtype=np.float64))
    plt = _pyplot()
    rows, cols = data.shape
    width = 8.0
    height = min(7.5, max(2.6, width * rows / max(cols, 1) * 0.8 + 1.6))
    fig, ax = plt.subplots(figsize=(width, height))
    br, bc = (tensor.get("block") or [1, 1])[:2]
    # Axes in element indices (a cell covers br x bc elements when the tensor was reduced).
    extent = (-0.5, cols * bc - 0.5, rows * br - 0.5, -0.5)
    image = ax.imshow(data, cmap="YlOrRd", vmin=0.0, aspect="auto", interpolation="nearest", extent=extent)
    metric = tensor.get("metric", "distance")
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(f"log10(1 + {metric})")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    shape = tensor.get("shape") or []
    if tensor.get("wrapped_width"):
        ax.set_xlabel(f"element index mod {tensor['wrapped_width']}")
        ax.set_ylabel(f"element index // {tensor['wrapped_width']}")
    else:
        ax.set_xlabel(f"index in the last dimension (size {shape[-1] if shape else '?'})")
        lead = " x ".join(str(d) for d in shape[:-1]) or "1"
        ax.set_ylabel(f"row: leading dims ({lead}) flattened")
    block = f" (a cell = max over {br} x {bc} elements)" if br > 1 or bc > 1 else ""
    ax.set_title(
        f"{case_id}\nstep {tensor.get('step')}, {tensor.get('phase')}: {tensor.get('path')} "
        f"[{tensor.get('dtype')} {list(shape)}]\n{tensor.get('differing')} of {tensor.get('numel')} elements "
        f"differ, max {metric} {_num(tensor.get('max'))}{block}",
        fontsize=9,
    )
    fig.tight_layout()
    return _png(fig)


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    return str(value)


# ----------------------------------------------------------------------------- page
_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.0em; margin-bottom: 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.pass { color: #17702b; } td.fail, td.error { color: #b00020; font-weight: bold; } td.skip { color: #8a6d00; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
pre.line { background: #fff4e5; border-color: #f0b060; font-weight: bold; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.4em 0; }
.muted { color: #666; font-size: 0.9em; }
"""


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _anchor(case_id: str, backend: str) -> str:
    return "case-" + "".join(c if c.isalnum() else "-" for c in f"{backend}-{case_id}")


def write_html(
    report_dir: Path, path: Path, *, png_dir: Path | None = None, keyword: str | None = None
) -> Written:
    """Write the page for the reports under ``report_dir`` to ``path`` (and its PNGs to ``png_dir``)."""
    report_dir, path = Path(report_dir), Path(path)
    summary = load_run_summary(report_dir)
    reports = load_reports(report_dir)
    cases = list(summary["cases"]) if summary else []
    failing_keys = {
        (c.get("backend"), c.get("platform"), c.get("case_id")) for c in cases if c.get("status") in _FAILING
    }
    shown: list[dict[str, Any]] = []
    unreadable: list[str] = []
    for _, data, error in reports:
        if error is not None:
            unreadable.append(error)
            continue
        assert data is not None
        key = (data.get("backend"), data.get("platform"), data.get("case_id"))
        if summary is not None and key not in failing_keys:
            continue  # a report left by an earlier run (its case did not run this time)
        if keyword and not keyword_matches(keyword, str(data.get("case_id", ""))):
            continue
        shown.append(data)
    if summary is None:
        cases = [
            {
                "case_id": d.get("case_id"),
                "tier": d.get("tier"),
                "backend": d.get("backend"),
                "platform": d.get("platform"),
                "status": "fail",
                "seconds": None,  # case reports carry no timings (they must not differ between runs)
            }
            for d in shown
        ]
    if keyword:
        cases = [c for c in cases if keyword_matches(keyword, str(c.get("case_id", "")))]
    fingerprint = _fingerprint(summary, shown)
    reported = {(d.get("backend"), d.get("case_id")) for d in shown}

    body: list[str] = []
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    body.append("<h1>parity report</h1>")
    finished = f", last run finished {_esc(summary.get('finished'))}" if summary else ""
    body.append(f'<p class="muted">reports: {_esc(report_dir)}{finished}; page written {_esc(generated)}</p>')
    for error in unreadable:
        body.append(f'<p class="muted">unreadable: {_esc(error)}</p>')

    body.append("<h2>Cases</h2>")
    counts: dict[str, int] = {}
    for c in cases:
        counts[str(c.get("status"))] = counts.get(str(c.get("status")), 0) + 1
    body.append("<p>" + ", ".join(f"{n} {_esc(s)}" for s, n in sorted(counts.items())) + "</p>")
    body.append("<table><tr><th>case</th><th>tier</th><th>backend</th><th>status</th><th>time (s)</th></tr>")
    for c in cases:
        status = str(c.get("status"))
        name = _esc(c.get("case_id"))
        if (c.get("backend"), c.get("case_id")) in reported:
            name = f'<a href="#{_anchor(str(c.get("case_id")), str(c.get("backend")))}">{name}</a>'
        seconds = c.get("seconds")
        body.append(
            f"<tr><td>{name}</td><td>{_esc(c.get('tier'))}</td><td>{_esc(c.get('backend'))}</td>"
            f'<td class="{_esc(status)}">{_esc(status)}</td>'
            f"<td>{'' if seconds is None else f'{float(seconds):.2f}'}</td></tr>"
        )
    body.append("</table>")
    errors = [
        c
        for c in cases
        if c.get("status") == "error" and (c.get("backend"), c.get("case_id")) not in reported
    ]
    for c in errors:
        body.append(f"<h3>{_esc(c.get('case_id'))} (error)</h3><pre>{_esc(c.get('message'))}</pre>")

    images = 0
    png_files: list[Path] = []
    if png_dir is not None:
        Path(png_dir).mkdir(parents=True, exist_ok=True)
    if shown:
        body.append("<h2>Failing cases</h2>")
    for data in shown:
        case_id = str(data.get("case_id"))
        body.append(f'<h2 id="{_anchor(case_id, str(data.get("backend")))}">{_esc(case_id)}</h2>')
        body.append(
            f'<p class="muted">backend {_esc(data.get("backend"))}, platform {_esc(data.get("platform"))}, '
            f"tier {_esc(data.get('tier'))}, kind {_esc(data.get('kind'))}</p>"
        )
        body.append(_first_difference(data))
        localisation = data.get("localisation") or None
        if localisation:
            body.append("<h3>Localisation</h3>")
            body.append(f'<pre class="line">{_esc(localisation.get("line"))}</pre>')
            evidence = localisation.get("evidence") or []
            if evidence:
                body.append("<pre>" + _esc("\n".join(str(e) for e in evidence)) + "</pre>")
            figures = []
            curves = localisation.get("curves") or {}
            if curves:
                figures.append(
                    ("curves", "loss, grad norm and LR per step", curves_png(case_id, curves, localisation))
                )
            tensor = localisation.get("tensor")
            if tensor:
                figures.append(
                    ("heatmap", f"where {tensor.get('path')} differs", heatmap_png(case_id, tensor))
                )
            else:
                body.append(
                    '<p class="muted">no tensor differs in the first divergent step (the divergence is in a '
                    "scalar or a state entry): no heat map</p>"
                )
            for name, alt, png in figures:
                if png is None:
                    continue
                body.append(_img(png, alt))
                images += 1
                if png_dir is not None:
                    target = Path(png_dir) / f"{_file_stem(case_id, str(data.get('backend')))}.{name}.png"
                    target.write_bytes(png)
                    png_files.append(target)
        body.append(f"<h3>Reproduce</h3><pre>{_esc(data.get('reproduce'))}</pre>")

    body.append("<h2>Environment</h2>")
    if fingerprint:
        body.append("<table><tr><th>field</th><th>value</th></tr>")
        for name, value in sorted(fingerprint.items()):
            text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
            body.append(f"<tr><td>{_esc(name)}</td><td>{_esc(text)}</td></tr>")
        body.append("</table>")
    else:
        body.append('<p class="muted">no fingerprint recorded (reports from an older harness)</p>')

    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>parity report</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, page)
    return Written(path=path, failing=len(shown), images=images, png_files=png_files)


def _file_stem(case_id: str, backend: str) -> str:
    return "".join(c if c.isalnum() or c in "._=-" else "_" for c in f"{backend}.{case_id}")


def _fingerprint(summary: Mapping[str, Any] | None, shown: list[dict[str, Any]]) -> dict[str, Any] | None:
    if summary:
        for value in (summary.get("fingerprint") or {}).values():
            if value:
                return dict(value)
    for data in shown:
        if data.get("fingerprint"):
            return dict(data["fingerprint"])
    return None


def _first_difference(data: Mapping[str, Any]) -> str:
    summary = data.get("summary") or {}
    rows = [
        ("error", data.get("error")),
        ("first artifact path", summary.get("artifact_path")),
        ("first index", summary.get("first_index")),
        ("expected (legacy)" if data.get("tier") == "A" else "expected (golden)", summary.get("expected")),
        ("actual (new)" if data.get("tier") == "A" else "actual (produced)", summary.get("actual")),
        ("mismatches", summary.get("mismatch_count")),
        ("max |diff|", summary.get("max_abs_diff")),
        ("max ULP", summary.get("max_ulp")),
    ]
    out = ["<table>"]
    out += [f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows if v is not None]
    out.append("</table>")
    differences = data.get("differences") or []
    if differences:
        lines = [
            f"[{d.get('phase')}] {d.get('kind')} {d.get('path')}: {d.get('message')}"
            for d in differences[:10]
        ]
        total = data.get("differences_total", len(differences))
        if total > 10:
            lines.append(f"... {total - 10} more")
        out.append("<pre>" + _esc("\n".join(lines)) + "</pre>")
    return "\n".join(out)
