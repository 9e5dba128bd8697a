"""Plots of a sweep: the what-if plot of its ``[report]`` (a metric against one parameter), violation-rate heatmap, duplicates and lateness against a parameter, time to DLQ,
and a comparison of RocketMQ eras. Each ``draw_*``/``plot_metric`` function draws on an ``Axes`` it is given
(tests read back what was drawn); each ``plot_*`` function lays the panels out on a figure and returns the
PNG path, or None when the sweep has nothing to show for that plot (the HTML page then says why)."""

from __future__ import annotations

import math

from matplotlib import colormaps
from matplotlib.lines import Line2D

from .style import BLUE, GREY, SERIES, figure, save, time_unit
from .sweep_data import ERA_KEY, SweepData, metric_sentence, metric_table, numeric_axis, summarize
from .sweep_metrics import ALL_GROUPS, METRICS


def _short(key: str) -> str:
    return key.split(".", 1)[1] if "." in key else key


def _x_axis(ax, data: SweepData, key: str, positions: list[float], labels: list[str], unit: str) -> None:
    ax.set_xlabel(f"{key}{f' ({unit})' if unit else ''}")
    positive = [p for p in positions if p > 0]
    if not data.categorical(key) and positive and max(positive) / min(positive) > 20:
        if min(positions) > 0:
            ax.set_xscale("log")
        else:
            ax.set_xscale("symlog", linthresh=min(positive))
    ax.set_xticks(positions, labels)
    ax.minorticks_off()
    ax.margins(x=0.08)


def draw_series(ax, positions, means, los, his, *, categorical: bool, color: str, label: str,
                offset: float = 0.0, floor: float | None = None) -> None:
    """One series with its 95% interval: a line with a shaded band for an ordered parameter; for a
    categorical one, points with error bars, shifted by ``offset`` so that groups stand side by side and
    never joined by a line."""
    if floor is not None:
        los = [max(floor, v) if not math.isnan(v) else v for v in los]
    if categorical:
        xs = [p + offset for p in positions]
        err = [[0 if math.isnan(m) else max(0.0, m - lo) for m, lo in zip(means, los, strict=True)],
               [0 if math.isnan(m) else max(0.0, hi - m) for m, hi in zip(means, his, strict=True)]]
        ax.errorbar(xs, means, yerr=err, fmt="o", linestyle="none", color=color, label=label, capsize=4,
                    markersize=6, elinewidth=1.4)
    else:
        ax.plot(positions, means, marker="o", color=color, label=label, linewidth=1.8)
        ax.fill_between(positions, los, his, color=color, alpha=0.18, linewidth=0)


def plot_metric(ax, data: SweepData, metric: str, by: str) -> str:
    """The what-if plot: ``metric`` against the parameter ``by``, one series per consumer group (per-group
    metrics), with the 95% interval (Wilson for rates; normal over the seed replicates for means). Draws on
    ``ax`` and returns the generated sentence that states the result."""
    m = METRICS[metric]
    table = metric_table(data, metric, by)
    sentence = metric_sentence(data, table, metric, by)
    xs = data.values(by)
    pos, unit = numeric_axis(xs)
    categorical = data.categorical(by)
    positions = list(range(len(xs))) if categorical or pos is None else pos
    groups = list(dict.fromkeys(table["group"])) if not table.empty else []
    width = 0.5 / max(len(groups), 1)
    for i, group in enumerate(groups):
        sub = table[table["group"] == group]
        order = [sub[sub["value"] == x] for x in xs]
        means = [r.iloc[0]["estimate"] if not r.empty and r.iloc[0]["estimate"] is not None else math.nan
                 for r in order]
        los = [r.iloc[0]["lo"] if not r.empty and r.iloc[0]["lo"] is not None else math.nan for r in order]
        his = [r.iloc[0]["hi"] if not r.empty and r.iloc[0]["hi"] is not None else math.nan for r in order]
        label = "all runs" if group == ALL_GROUPS else f"group {group}"
        draw_series(ax, positions, [float(v) for v in means], [float(v) for v in los], [float(v) for v in his],
                    categorical=categorical, color=SERIES[i % len(SERIES)], label=label,
                    offset=(i - (len(groups) - 1) / 2) * width if categorical else 0.0,
                    floor=0.0 if m.kind == "rate" or metric != "p99_lateness_ms" else None)
    _x_axis(ax, data, by, positions, xs, unit)
    ax.set_ylabel(f"{metric} ({m.unit})")
    if m.kind == "rate":
        ax.set_ylim(bottom=0)
    band = "Wilson 95% interval" if m.kind == "rate" else "95% interval of the mean over seeds"
    ax.set_title(f"{metric} against {by} ({'points' if categorical else 'line'}: estimate; "
                 f"{'bars' if categorical else 'band'}: {band})", loc="left")
    if groups:
        ax.legend(loc="best", frameon=False)
    return sentence


def plot_whatif(data: SweepData, path: str) -> tuple[str | None, str]:
    """The page's first plot (the sweep's ``[report]``): (PNG path or None, the sentence)."""
    report = data.meta.get("report") or {}
    if not report or data.ok.empty:
        return None, ""
    fig = figure(10, 4.6)
    sentence = plot_metric(fig.add_subplot(), data, report["metric"], report["by"])
    return save(fig, path), sentence


def heatmap_layout(data: SweepData) -> tuple[str | None, str | None, str | None]:
    """(x key, y key, facet key) for the violation-rate heatmap."""
    keys = data.keys
    others = [k for k in keys if k != ERA_KEY]
    era = ERA_KEY if ERA_KEY in keys else None
    if len(others) >= 2:
        facet = era
        if facet is None and len(others) >= 3 and len(data.values(others[2])) <= 4:
            facet = others[2]
        return others[0], others[1], facet
    if len(others) == 1:
        return others[0], era, None
    if era:
        return era, None, None
    return None, None, None


def draw_heatmap(ax, data: SweepData, table, xk: str, yk: str | None, fk: str | None, facet, first: bool = True):
    """One panel of the heatmap on ``ax``: the violation rate of each (x, y) cell with its Wilson interval
    and n written in it. Returns the image (for the colour bar)."""
    xs = data.values(xk)
    ys = data.values(yk) if yk else [""]
    grid = [[math.nan] * len(xs) for _ in ys]
    for yi, yv in enumerate(ys):
        for xi, xv in enumerate(xs):
            sel = table[xk] == xv
            if yk:
                sel &= table[yk] == yv
            if fk:
                sel &= table[fk] == facet
            rows = table[sel]
            if rows.empty or rows.iloc[0]["checked"] == 0:
                ax.text(xi, yi, "no runs", ha="center", va="center", fontsize=8, color=GREY)
                continue
            r = rows.iloc[0]
            grid[yi][xi] = r["rate"]
            dark = r["rate"] > 0.55
            ax.text(xi, yi, f"{r['rate']:.2f}\n[{r['rate_lo']:.2f}, {r['rate_hi']:.2f}]\nn={int(r['checked'])}",
                    ha="center", va="center", fontsize=9, color="white" if dark else "black", linespacing=1.15)
    image = ax.imshow(grid, cmap=colormaps["Reds"], vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(xs)), xs)
    ax.set_yticks(range(len(ys)), ys if yk else [""])
    ax.set_xlabel(xk)
    if first:
        ax.set_ylabel(yk or "")
    else:
        ax.set_yticklabels([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if fk:
        ax.set_title(f"{fk} = {facet}")
    return image


def plot_heatmap(data: SweepData, path: str) -> str | None:
    """Violation rate (share of runs with any invariant violated) over two parameters, Wilson 95% CI."""
    if not data.checked:
        return None
    xk, yk, fk = heatmap_layout(data)
    if xk is None:
        return None
    xs = data.values(xk)
    ys = data.values(yk) if yk else [""]
    facets = data.values(fk) if fk else [None]
    keys = [k for k in (xk, yk, fk) if k]
    table = summarize(data, keys)
    cell_w, cell_h = max(1.25, min(2.2, 9.0 / max(len(xs) * len(facets), 1))), 0.85
    width = min(16.0, 2.6 + len(facets) * (len(xs) * cell_w + 0.6))
    height = 2.2 + len(ys) * cell_h
    fig = figure(width, height)
    axes = fig.subplots(1, len(facets), squeeze=False)[0]
    image = None
    for ax, facet in zip(axes, facets, strict=True):
        image = draw_heatmap(ax, data, table, xk, yk, fk, facet, first=ax is axes[0])
    fig.colorbar(image, ax=list(axes), label="violation rate (share of runs)", shrink=0.9, pad=0.02)
    pooled = [k for k in data.keys if k not in keys]
    sub = f"; pooled over {', '.join(pooled)}" if pooled else ""
    fig.suptitle(f"Violation rate over {xk}{' and ' + yk if yk else ''} — cell: rate [Wilson 95% CI], "
                 f"n = checked runs{sub}", x=0.01, ha="left", fontsize=11)
    return save(fig, path)


def _hue_key(data: SweepData, x_key: str) -> str | None:
    for candidate in (ERA_KEY, "mutant"):
        if candidate in data.keys and candidate != x_key and len(data.values(candidate)) <= 6:
            return candidate
    return None


def curve_keys(data: SweepData) -> list[str]:
    return [k for k in data.keys if k != ERA_KEY and len(data.values(k)) >= 2][:3]


CURVE_METRICS = (("duplicates", "duplicates per run"), ("lateness_p99_ms", "delivery lateness p99 per run (ms)"))


def draw_curve(ax, data: SweepData, key: str, metric: str, label: str, handles: dict | None = None) -> None:
    """``metric`` (a per-run statistic) against ``key`` on ``ax``: the mean with its 95% interval, one
    series per era (or mutant) when the sweep varies it; a line and band for an ordered parameter,
    grouped points for a categorical one."""
    xs = data.values(key)
    pos, unit = numeric_axis(xs)
    hue = _hue_key(data, key)
    hues = data.values(hue) if hue else [None]
    table = summarize(data, [key] + ([hue] if hue else []))
    categorical = data.categorical(key)
    positions = list(range(len(xs))) if categorical or pos is None else pos
    width = 0.5 / max(len(hues), 1)
    for i, hv in enumerate(hues):
        color = SERIES[i % len(SERIES)]
        sub = table if hv is None else table[table[hue] == hv]
        order = [sub[sub[key] == x] for x in xs]
        means = [r.iloc[0][f"{metric}_mean"] if not r.empty else math.nan for r in order]
        los = [r.iloc[0][f"{metric}_lo"] if not r.empty else math.nan for r in order]
        his = [r.iloc[0][f"{metric}_hi"] if not r.empty else math.nan for r in order]
        name = f"{hue} = {hv}" if hue else "mean"
        draw_series(ax, positions, means, los, his, categorical=categorical, color=color, label=name,
                    offset=(i - (len(hues) - 1) / 2) * width, floor=0.0 if metric == "duplicates" else None)
        if handles is not None:
            handles.setdefault(name, Line2D([], [], color=color, marker="o", label=name))
    ax.set_ylabel(label)
    _x_axis(ax, data, key, positions, xs, unit)
    ax.set_ylim(bottom=0 if metric == "duplicates" else None)


def plot_curves(data: SweepData, path: str) -> str | None:
    """Duplicates per run and delivery-lateness p99 per run against each parameter: mean with a 95%
    confidence band, one curve per era (or mutant) when the sweep varies it."""
    keys = curve_keys(data)
    if not keys or data.ok.empty:
        return None
    fig = figure(12, 3.3 * len(keys) + 0.6)
    axes = fig.subplots(len(keys), 2, squeeze=False)
    handles = {}
    for row, key in enumerate(keys):
        for col, (metric, label) in enumerate(CURVE_METRICS):
            draw_curve(axes[row][col], data, key, metric, label, handles)
    handles["band"] = Line2D([], [], color=GREY, linewidth=8, alpha=0.3, label="95% confidence band of the mean")
    fig.legend(handles=list(handles.values()), loc="outside lower center", ncol=min(4, len(handles)), frameon=False)
    fig.suptitle("Duplicates and delivery lateness against each parameter (pooled over the others)",
                 x=0.01, ha="left", fontsize=11)
    return save(fig, path)


def draw_time_to_dlq(ax, data: SweepData) -> bool:
    """Histogram (steps) of the time from first send to the %DLQ% copy on ``ax``, one series per era (or a
    small parameter), dashed medians. False (nothing drawn) when no message reached a DLQ."""
    ok = data.ok
    if ok.empty or "time_to_dlq_ms" not in ok:
        return False
    hue = ERA_KEY if ERA_KEY in data.keys else next((k for k in data.keys if 2 <= len(data.values(k)) <= 4), None)
    hues = data.values(hue) if hue else [None]
    series = []
    for hv in hues:
        frame = ok if hv is None else ok[ok[data.column(hue)] == hv]
        values = [v for arr in frame["time_to_dlq_ms"] if arr is not None for v in arr]
        series.append((hv, values))
    everything = [v for _, vals in series for v in vals]
    if not everything:
        return False
    unit, per = time_unit(max(everything))
    lo, hi = min(everything) / per, max(everything) / per
    bins = 40 if hi > lo else 5
    edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)] if hi > lo else None
    for i, (hv, values) in enumerate(series):
        if not values:
            continue
        color = SERIES[i % len(SERIES)] if hv is not None else BLUE
        scaled = [v / per for v in values]
        median = sorted(scaled)[len(scaled) // 2]
        name = f"{hue} = {hv}" if hv is not None else "all runs"
        ax.hist(scaled, bins=edges or bins, histtype="step", linewidth=1.8, color=color,
                label=f"{name}: {len(scaled)} messages, median {median:.3g} {unit}")
        ax.axvline(median, color=color, linestyle="--", linewidth=1)
    ax.set_xlabel(f"time from first send to the %DLQ% copy ({unit}, virtual)")
    ax.set_ylabel("messages")
    ax.legend(loc="upper right", frameon=False)
    ax.set_title("Time to the dead-letter queue (dashed: medians)", loc="left")
    return True


def plot_time_to_dlq(data: SweepData, path: str) -> str | None:
    """Distribution of the time from a message's first send to its %DLQ% copy, over every run."""
    fig = figure(12, 4.4)
    if not draw_time_to_dlq(fig.add_subplot(), data):
        return None
    return save(fig, path)


ERA_METRICS = (("rate", "violation rate (share of runs)"), ("duplicates", "duplicates per run"),
               ("lateness_p99_ms", "lateness p99 per run (ms)"), ("dlq", "DLQ messages per run (all groups)"))


def draw_eras(ax, data: SweepData, metric: str, label: str) -> None:
    """One era-comparison panel on ``ax``: a bar per era (per value of the first other parameter), with
    its 95% interval (Wilson for the rate, normal for the means)."""
    eras = data.values(ERA_KEY)
    others = [k for k in data.keys if k != ERA_KEY and len(data.values(k)) <= 6]
    group = others[0] if others else None
    groups = data.values(group) if group else [None]
    table = summarize(data, [ERA_KEY] + ([group] if group else []))
    width = 0.8 / max(len(eras), 1)
    mean_col, lo_col, hi_col = ((metric, "rate_lo", "rate_hi") if metric == "rate"
                                else (f"{metric}_mean", f"{metric}_lo", f"{metric}_hi"))
    for ei, era in enumerate(eras):
        heights, errs_lo, errs_hi = [], [], []
        for g in groups:
            sel = table[ERA_KEY] == era
            if group:
                sel &= table[group] == g
            rows = table[sel]
            value = rows.iloc[0][mean_col] if not rows.empty else math.nan
            lo = rows.iloc[0][lo_col] if not rows.empty else math.nan
            hi = rows.iloc[0][hi_col] if not rows.empty else math.nan
            if metric in ("duplicates", "dlq") and not math.isnan(lo):
                lo = max(0.0, lo)  # counts: the interval of the mean stops at zero
            heights.append(value)
            errs_lo.append(0 if math.isnan(value) else max(0.0, value - lo))
            errs_hi.append(0 if math.isnan(value) else max(0.0, hi - value))
        xs = [gi + (ei - (len(eras) - 1) / 2) * width for gi in range(len(groups))]
        ax.bar(xs, heights, width=width * 0.92, color=SERIES[ei % len(SERIES)], label=f"era {era}",
               yerr=[errs_lo, errs_hi], capsize=3, error_kw={"elinewidth": 1, "ecolor": "black"})
    ax.set_xticks(range(len(groups)), groups if group else ["all runs"])
    if group:
        ax.set_xlabel(group)
    ax.set_ylabel(label)
    if metric == "rate" and not data.checked:
        ax.text(0.5, 0.5, "no invariant verdicts in this sweep", transform=ax.transAxes, ha="center", color=GREY)


def plot_eras(data: SweepData, path: str) -> str | None:
    """RocketMQ 5.3.3 against 4.9.8: violation rate, duplicates, lateness p99 and DLQ per run, by the
    first other parameter when there is one."""
    if ERA_KEY not in data.keys or data.ok.empty:
        return None
    eras = data.values(ERA_KEY)
    others = [k for k in data.keys if k != ERA_KEY and len(data.values(k)) <= 6]
    group = others[0] if others else None
    fig = figure(12, 6.4)
    axes = fig.subplots(2, 2).flatten()
    for ax, (metric, label) in zip(axes, ERA_METRICS, strict=True):
        draw_eras(ax, data, metric, label)
    handles = [Line2D([], [], color=SERIES[i % len(SERIES)], linewidth=8, label=f"era {era}")
               for i, era in enumerate(eras)]
    handles.append(Line2D([], [], color="black", linewidth=1, label="95% confidence interval"))
    fig.legend(handles=handles, loc="outside upper right", ncol=len(handles), frameon=False)
    fig.suptitle("RocketMQ eras compared" + (f", by {group}" if group else ""), x=0.01, ha="left", fontsize=11)
    return save(fig, path)
