"""``python -m parity report --html PATH``: one self-contained HTML page of the last run's reports.

The page holds, with no external resource (styles inline, images as ``data:image/png;base64``),
in the order a reader needs them:

- the verdict (how many cases fail, and whether legacy and new disagree: ``parity.verdict``), the
  environment in one line, and which run this is (the last ``python -m parity run``,
  ``parity.report.load_last_run``: the same reports ``parity report`` prints, never those of an
  earlier run);
- the failures by cause, one item per cause (``parity.verdict``: the step and component where a
  localised group first diverged, its shared ``first divergence`` line once), its cases collapsed;
- the failing cases, cause by cause, most telling first in each (a localised end-to-end failure
  in the artifact where its recipe first diverged, then that recipe's downstream artifacts, then
  the rest), each with its first difference in decimal and hex, the localisation (the greppable
  ``first divergence: ...`` line and its evidence, at the first case of its cause only), and a
  heat map of where the first diverging tensor's elements differ (ULP distance; block maxima when
  the tensor is large); legacy-vs-new curves of loss, grad norm and LR per step, once per recipe,
  with the divergence step marked; drawn with matplotlib's Agg backend from what the JSON report
  stores (``localisation.curves`` and ``localisation.tensor``, see ``parity.tools.localise``);
- the table of every case (id, tier, backend, status, time) and the full fingerprint, collapsed.

``scripts/screenshot_report.sh`` renders a page in headless Chromium to check it by eye.

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
from parity.report import load_last_run, with_decimal
from parity.select import keyword_matches
from parity.verdict import Failure, Verdict, run_failures, verdict

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
h1.red { color: #b00020; } h1.green { color: #17702b; }
p.verdict { font-weight: bold; }
p.env { font-family: monospace; background: #f3f3f3; padding: 0.4em; }
details { margin: 1em 0; } summary { cursor: pointer; font-weight: bold; }
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
    """Write the page for the last run's reports under ``report_dir`` to ``path`` (and its PNGs
    to ``png_dir``). The page opens on the verdict: the environment in one line, then the failing
    cases, most telling first; the table of every case comes last, collapsed."""
    report_dir, path = Path(report_dir), Path(path)
    last = load_last_run(report_dir)  # the same run `parity report` prints
    summary = last.summary
    cases = list(summary["cases"]) if summary else []
    shown: list[dict[str, Any]] = []
    unreadable: list[str] = []
    for _, data, error in last.reports:
        if error is not None:
            unreadable.append(error)
            continue
        assert data is not None
        if keyword and not keyword_matches(keyword, str(data.get("case_id", ""))):
            continue
        shown.append(data)
    shown.sort(key=_telling)
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
    errors = [
        c
        for c in cases
        if c.get("status") == "error" and (c.get("backend"), c.get("case_id")) not in reported
    ]
    failing = len(shown) + len(errors)
    judged = verdict(run_failures(shown, errors), total=len(cases) or None)
    # The case sections follow the causes: each group's cases together, most telling first in it.
    group_of = {(f.backend, f.case_id): judged.group_of(f) for f in judged.failures}
    shown.sort(key=lambda d: (group_of.get((str(d.get("backend")), str(d.get("case_id"))), 0), _telling(d)))

    body: list[str] = []
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    verdict_text = f"{failing} failing of {len(cases)}" if failing else f"all {len(cases)} cases pass"
    body.append(f'<h1 class="{"red" if failing else "green"}">parity: {_esc(verdict_text)}</h1>')
    if failing:
        body.append(f'<p class="verdict">{_esc(judged.line)}</p>')
    body.append(f'<p class="env">{_esc(_environment_line(fingerprint))}</p>')
    body.append(
        f'<p class="muted">{_esc(last.stamp)}; reports: {_esc(report_dir)}; page written {_esc(generated)}</p>'
    )
    for error in unreadable:
        body.append(f'<p class="muted">unreadable: {_esc(error)}</p>')

    images = 0
    png_files: list[Path] = []
    if png_dir is not None:
        Path(png_dir).mkdir(parents=True, exist_ok=True)

    def embed(png: bytes | None, alt: str, stem: str) -> None:
        nonlocal images
        if png is None:
            return
        body.append(_img(png, alt))
        images += 1
        if png_dir is not None:
            target = Path(png_dir) / f"{stem}.png"
            target.write_bytes(png)
            png_files.append(target)

    if judged.groups:
        body.extend(_causes(judged))
    figures_of: set[str] = set()  # recipes whose curves and heat map are drawn (once per recipe)
    for data in shown:
        case_id, backend = str(data.get("case_id")), str(data.get("backend"))
        body.append(f'<h3 id="{_anchor(case_id, backend)}">{_esc(case_id)}</h3>')
        body.append(
            f'<p class="muted">backend {_esc(backend)}, platform {_esc(data.get("platform"))}, '
            f"tier {_esc(data.get('tier'))}, kind {_esc(data.get('kind'))}</p>"
        )
        body.append(_first_difference(data))
        localisation = data.get("localisation") or None
        index = group_of.get((backend, case_id), 0)
        first = judged.groups[index].failures[0] if judged.groups else None
        if localisation and first is not None and (first.backend, first.case_id) != (backend, case_id):
            # Every case of a cause shares its localisation: it is shown once, at the first one.
            body.append(
                f'<p class="muted">first divergence: as cause {index + 1}, shown at '
                f'<a href="#{_anchor(first.case_id, first.backend)}">{_esc(first.case_id)}</a></p>'
            )
        elif localisation:
            body.append(f'<pre class="line">{_esc(localisation.get("line"))}</pre>')
            evidence = localisation.get("evidence") or []
            if evidence:
                body.append("<pre>" + _esc("\n".join(str(e) for e in evidence)) + "</pre>")
            recipe = str(localisation.get("recipe") or case_id)
            if recipe in figures_of:  # the recipe's replay is one: its figures are drawn once
                body.append(
                    f'<p class="muted">figures: see the first case of recipe {_esc(recipe)} above</p>'
                )
            else:
                figures_of.add(recipe)
                curves = localisation.get("curves") or {}
                if curves:
                    embed(
                        curves_png(f"recipe {recipe}", curves, localisation),
                        f"loss, grad norm and LR per step of recipe {recipe}",
                        f"{_file_stem(case_id, backend)}.curves",
                    )
                tensor = localisation.get("tensor")
                if tensor:
                    embed(
                        heatmap_png(case_id, tensor),
                        f"where {tensor.get('path')} differs",
                        f"{_file_stem(case_id, backend)}.heatmap",
                    )
        body.append(f"<pre>{_esc(data.get('reproduce'))}</pre>")
    for c in errors:
        body.append(f"<h3>{_esc(c.get('case_id'))} (error)</h3><pre>{_esc(c.get('message'))}</pre>")

    counts: dict[str, int] = {}
    for c in cases:
        counts[str(c.get("status"))] = counts.get(str(c.get("status")), 0) + 1
    tally = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    body.append(f"<details><summary>All {len(cases)} cases ({_esc(tally)})</summary>")
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
    body.append("</table></details>")
    body.extend(mutation_section(report_dir / "mutation.json"))
    body.append("<details><summary>Environment fingerprint</summary>")
    if fingerprint:
        body.append("<table><tr><th>field</th><th>value</th></tr>")
        for name, value in sorted(fingerprint.items()):
            text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
            body.append(f"<tr><td>{_esc(name)}</td><td>{_esc(text)}</td></tr>")
        body.append("</table>")
    else:
        body.append('<p class="muted">no fingerprint recorded (reports from an older harness)</p>')
    body.append("</details>")

    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>parity report</title>'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, page)
    return Written(path=path, failing=len(shown), images=images, png_files=png_files)


def _causes(judged: Verdict) -> list[str]:
    """The failures by cause (``parity.verdict``): one item per cause with its headline, its shared
    ``first divergence`` line when localised, and its cases collapsed."""
    out = ["<h2>Failures by cause</h2>", "<ol>"]
    for group in judged.groups:
        out.append(f"<li><b>{_esc(judged.headline(group))}</b>")
        if group.localisation_line:
            out.append(f'<pre class="line">{_esc(group.localisation_line)}</pre>')
        out.append(f"<details><summary>{len(group)} case(s)</summary><ul>")
        for f in group.failures:
            name = _esc(f.case_id)
            if f.status != "error":  # a case that raised has no report, so no section to link to
                name = f'<a href="#{_anchor(f.case_id, f.backend)}">{name}</a>'
            out.append(f'<li>{name} ({_esc(f.backend)}) <span class="muted">{_esc(_reason(f))}</span></li>')
        out.append("</ul></details></li>")
    out.append("</ol>")
    return out


def _reason(failure: Failure) -> str:
    """The failure's own first difference or error, in a few words."""
    return failure.error or failure.first_path or ""


def mutation_section(path: Path) -> list[str]:
    """The last ``parity mutation`` run (``mutation.json`` beside the reports): the score per
    area and every survivor as ``file:function:line operator``; nothing when there was none."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        total = data["total"]
    except (OSError, ValueError, KeyError) as exc:
        return [f'<p class="muted">unreadable: {_esc(path)} ({_esc(exc)})</p>']

    def pct(x: Any) -> str:
        return "-" if x is None else f"{100 * float(x):.1f}%"

    lo, hi = total["ci95"]
    drawn = (
        f"{data['sample']} drawn of {data['population']}" if data.get("sample") else str(data["population"])
    )
    out = [
        "<h2>Mutation score</h2>",
        f"<p>{_esc(pct(total['score']))} of judged mutants killed (95% CI {_esc(pct(lo))}-{_esc(pct(hi))}); "
        f"{total['timeout']} timeouts and {total['harness_error']} harness errors counted apart; mutants "
        f"{_esc(drawn)} ({_esc(data['scope'])}), {len(data.get('reviewed', []))} listed as equivalent; "
        f"written {_esc(data.get('written'))}</p>",
        "<table><tr><th>area</th><th>run</th><th>killed</th><th>survived</th><th>not covered</th>"
        "<th>timeout</th><th>harness error</th><th>score</th></tr>",
    ]
    for area, c in data["by_area"].items():
        out.append(
            f"<tr><td>{_esc(area)}</td><td>{c['run']}</td><td>{c['killed']}</td><td>{c['survived']}</td>"
            f"<td>{c['not_covered']}</td><td>{c['timeout']}</td><td>{c['harness_error']}</td>"
            f"<td>{_esc(pct(c['score']))}</td></tr>"
        )
    out.append("</table>")
    survivors = data.get("survivors", [])
    out.append(f"<details><summary>{len(survivors)} survivors</summary><ul>")
    for row in survivors:
        out.append(
            f"<li><code>{_esc(row['path'])}:{_esc(row['qualname'])}:{row['line']}</code> "
            f'{_esc(row["operator"])} <span class="muted">({_esc(row["status"])})</span></li>'
        )
    out.append("</ul></details>")
    return out


def _telling(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """Sort key, most telling first: a localised end-to-end failure in the artifact where its
    recipe first diverged, then that recipe's downstream artifacts, then other tier A failures,
    then goldens; earlier divergence steps first, then by id."""
    loc = data.get("localisation") or {}
    if loc.get("status") == "diverged":
        rank = 0 if loc.get("case_artifact") in (None, loc.get("artifact")) else 1
    else:
        rank = 2 if data.get("tier") == "A" else 3
    step = loc.get("step")
    return (
        rank,
        step if isinstance(step, int) else 1 << 30,
        str(loc.get("recipe") or ""),
        str(data.get("case_id")),
    )


# One line, in this order, of what decides the bits (the full fingerprint is at the end of the page).
_ENV_FIELDS = (
    "platform",
    "cpu_profile",
    "backend",
    "torch",
    "mindspore",
    "cpu_capability",
    "cpu_vendor",
    "threads",
    "numpy",
    "python",
    "libc",
)


def _environment_line(fingerprint: Mapping[str, Any] | None) -> str:
    if not fingerprint:
        return "environment: not recorded (reports from an older harness)"
    parts = [f"{name} {fingerprint[name]}" for name in _ENV_FIELDS if fingerprint.get(name) not in (None, "")]
    return "environment: " + ", ".join(parts)


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
        (
            "expected (legacy)" if data.get("tier") == "A" else "expected (golden)",
            with_decimal(summary.get("expected")),
        ),
        (
            "actual (new)" if data.get("tier") == "A" else "actual (produced)",
            with_decimal(summary.get("actual")),
        ),
        ("mismatches", summary.get("mismatch_count")),
        ("max |diff|", summary.get("max_abs_diff")),
        ("max ULP", summary.get("max_ulp")),
        ("max rel diff (sign changed or infinite)", summary.get("max_rel_diff")),
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
