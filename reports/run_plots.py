"""Plots of one run, from its history: the message timeline (swimlanes) and delivery lateness per level."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from model.stats import lateness_by_label
from model.topics import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, TIMER_TOPIC  # noqa: F401 (re-exported)

from .style import BLUE, BROWN, GREEN, GREY, ORANGE, PURPLE, RED, SKY, figure, note, save, time_unit

MAX_LANES = 36


@dataclass
class Lane:
    msg_id: str
    index: int                       # position among all sent messages
    send_t: int
    delay_level: int = 0
    timer: bool = False
    status: str = "SEND_OK"
    events: list = field(default_factory=list)

    @property
    def end_t(self) -> int:
        return self.events[-1]["t_ms"] if self.events else self.send_t


def message_lanes(events: list[dict]) -> list[Lane]:
    """Every sent message with its own events (send, store, deliver, consume, send_back, dlq), in send order; and
    (run --from-store) every message the store held that the run delivered or consumed, from the run's start."""
    lanes: dict[str, Lane] = {}
    early: dict[str, list[dict]] = {}  # the store of the first copy is recorded before its send
    preloaded: dict[str, dict] = {}  # run --from-store: a message the store held, given a lane when the run moves it
    for e in events:
        msg_id = e.get("msg_id")
        if e["kind"] == "preloaded" and (msg_id not in preloaded or e["state"] == "pending"):
            preloaded[msg_id] = e
            if e["state"] == "pending" and msg_id not in lanes:  # still waiting: drawn, delivered or not
                lanes[msg_id] = _preloaded_lane(e, len(lanes))
        if msg_id is None or e["kind"] not in ("send", "store", "deliver", "consume", "send_back", "dlq"):
            continue
        if e["kind"] != "send" and msg_id not in lanes and msg_id in preloaded:
            lanes[msg_id] = _preloaded_lane(preloaded[msg_id], len(lanes))
        if e["kind"] == "send" and msg_id not in lanes:
            lanes[msg_id] = Lane(msg_id, len(lanes), e["t_ms"], e.get("delay_level") or 0,
                                 e.get("timer_delay_ms") is not None, e.get("status", "SEND_OK"))
            lanes[msg_id].events.extend(early.pop(msg_id, []))
        if msg_id in lanes:
            lanes[msg_id].events.append(e)
        else:
            early.setdefault(msg_id, []).append(e)
    return list(lanes.values())


def _preloaded_lane(p: dict, index: int) -> Lane:
    pending = p["state"] == "pending"
    return Lane(p["msg_id"], index, p["t_ms"], p["delay_level"] if pending else 0, pending and p["topic"] == TIMER_TOPIC)


def _fault_times(events: list[dict]) -> list[int]:
    return [e["t_ms"] for e in events if e["kind"] in ("crash", "cq_truncate")
            or (e["kind"] == "fault" and e.get("site") == "clock")]


def violating_ids(summary: dict) -> list[str]:
    """The messages the summary's invariant violations name, in summary order, each once."""
    out: dict[str, None] = {}
    for result in (summary.get("invariants") or {}).values():
        for violation in result.get("violations") or ():
            if violation.get("msg_id"):
                out.setdefault(violation["msg_id"], None)
    return list(out)


def select_lanes(lanes: list[Lane], events: list[dict], limit: int = MAX_LANES,
                 violating: list[str] | tuple = ()) -> tuple[list[Lane], str]:
    """Every message a violation names, first and always (even beyond ``limit``); then up to ``limit`` in all:
    those with retries, duplicates, a DLQ, a failed send or in flight at a crash first (two thirds of the lanes
    at most), then the earliest, in send order. Returns the lanes and a note."""
    bad = set(violating)
    if bad:
        first = [lane for lane in lanes if lane.msg_id in bad]
        rest, why = select_lanes([lane for lane in lanes if lane.msg_id not in bad], events,
                                 max(limit - len(first), 0))
        return first + rest, f"{len(first)} violating message{'s' if len(first) != 1 else ''} first (red); of the others, {why}"
    if len(lanes) <= limit:
        return lanes, f"all {len(lanes)} message{'s' if len(lanes) != 1 else ''}"
    faults = _fault_times(events)

    def interesting(lane: Lane) -> bool:
        consumes = [e for e in lane.events if e["kind"] == "consume"]
        ok = [(e["group"], e["client_id"]) for e in consumes if e["status"] == "CONSUME_SUCCESS"]
        if len(consumes) != len(ok) or len(ok) != len(set(ok)):
            return True
        if any(e["kind"] == "dlq" for e in lane.events):
            return True
        return any(lane.send_t <= t <= lane.end_t for t in faults)

    failed_sends = [lane for lane in lanes if lane.status != "SEND_OK"][:3]
    picked = ([lane for lane in lanes if lane.status == "SEND_OK" and interesting(lane)]
              [: (2 * limit) // 3 - len(failed_sends)] + failed_sends)
    chosen = {lane.msg_id for lane in picked}
    for lane in lanes:
        if len(chosen) >= limit:
            break
        chosen.add(lane.msg_id)
    out = [lane for lane in lanes if lane.msg_id in chosen]
    why = (f"{len(out)} of {len(lanes)} messages shown: those with retries, duplicates, a DLQ or in flight at a "
           f"fault first, then the earliest" if picked else f"the first {len(out)} of {len(lanes)} messages shown")
    return out, why


def _lane_label(lane: Lane) -> str:
    kind = "timer" if lane.timer else (f"L{lane.delay_level}" if lane.delay_level else "plain")
    return f"#{lane.index} {kind}"


def _log_axis(lanes: list[Lane], end_ms: int) -> bool:
    """A log time axis when the waits span seconds to hours: a linear axis squeezes the short ones to nothing."""
    waits = [e["t_ms"] for lane in lanes for e in lane.events if e["kind"] == "deliver"]
    return end_ms >= 600_000 and bool(waits) and min(waits) * 100 < end_ms


def plot_timeline(events: list[dict], summary: dict, path: str | None = None, limit: int = MAX_LANES,
                  ax=None) -> str | list[Lane]:
    """Swimlanes, one per message: sent -> waiting in a schedule queue / the timer wheel -> delivered ->
    consumed (or failed -> waiting for a retry -> ...) -> %DLQ%, with crashes and faults across all lanes.
    Each stored copy is labelled with its level and reconsumeTimes (``L3 r1``); messages a violation names are
    drawn first, in red, with the invariant's name. With ``ax`` it draws there and returns the lanes drawn."""
    violating = violating_ids(summary)
    lanes, why = select_lanes(message_lanes(events), events, limit, violating)
    height = 2.9 + 0.24 * max(len(lanes), 3)
    own_figure = ax is None
    if own_figure:
        fig = figure(12, height)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    title = f"Message timeline of {summary.get('scenario', '?')} (seed {summary.get('seed', '?')})\n{why}"
    ax.set_title(title, loc="left")
    if not lanes:
        note(ax, "no message was sent in this run")
        return save(fig, path) if own_figure else lanes
    end_ms = max([e["t_ms"] for e in events] + [1])
    log_axis = _log_axis(lanes, end_ms)
    unit, per = ("s", 1000.0) if log_axis else time_unit(end_ms)
    names = {}
    for inv, result in (summary.get("invariants") or {}).items():
        for violation in result.get("violations") or ():
            names.setdefault(violation.get("msg_id"), inv)
    groups = sorted({e["group"] for lane in lanes for e in lane.events if e["kind"] == "consume"})
    shapes = dict(zip(groups, ["o", "s", "D", "^", "v", "P"], strict=False))
    used: set[str] = set()
    for y, lane in enumerate(lanes):
        wait_start, wait_color = None, None
        topic_since = None
        last_deliver = None
        for e in lane.events:
            t = e["t_ms"] / per
            kind = e["kind"]
            if kind == "send" and e.get("status", "SEND_OK") != "SEND_OK":
                ax.plot([t], [y], marker="x", color=RED, markersize=7, zorder=4)
                ax.annotate(e["status"][:60], (t, y), xytext=(8, 0), textcoords="offset points", va="center",
                            fontsize=8, color=RED)
                used.add("send_failed")
            elif kind == "send":
                ax.plot([t], [y], marker="|", color="black", markersize=9, zorder=4)
                used.add("sent")
            elif kind == "store":
                hop = _hop_label(e)
                if hop:  # alternate above and below the lane: close hops (a log axis's long levels) stay legible
                    above = sum(1 for x in lane.events if x["kind"] == "store" and x["seq"] < e["seq"] and _hop_label(x)) % 2
                    ax.annotate(hop, (t, y), xytext=(2, 5 if above else -11), textcoords="offset points",
                                fontsize=6.5, color=GREY, zorder=6)
                if e["topic"] == SCHEDULE_TOPIC:
                    wait_start = t
                    wait_color = ORANGE if (e.get("reconsume_times") or 0) > 0 else BLUE
                elif e["topic"] == TIMER_TOPIC:
                    wait_start, wait_color = t, PURPLE
                elif e["topic"].startswith(DLQ_PREFIX):
                    pass
                elif topic_since is None:
                    topic_since = t
            elif kind == "deliver":
                if e.get("topic", "").startswith(RETRY_PREFIX):
                    wait_color = ORANGE
                if wait_start is None and last_deliver is not None:
                    # delivered again without a new store: a redelivery after a crash (duplicate)
                    ax.plot([last_deliver, t], [y, y], color=RED, linewidth=1.5, linestyle=(0, (2, 1)), zorder=2)
                    ax.plot([t], [y], marker=">", color=RED, markersize=5, zorder=4)
                    used.add("again")
                else:
                    start = wait_start if wait_start is not None else lane.send_t / per
                    color = wait_color or (PURPLE if e.get("level") == "timer" else BLUE)
                    ax.plot([start, t], [y, y], color=color, linewidth=5, solid_capstyle="butt", alpha=0.75, zorder=2)
                    ax.plot([t], [y], marker=">", color=color, markersize=5, zorder=4)
                    used.add({BLUE: "schedule", ORANGE: "retry", PURPLE: "timer"}[color])
                wait_start, wait_color, topic_since, last_deliver = None, None, t, t
            elif kind == "consume":
                if topic_since is not None:
                    ax.plot([topic_since, t], [y, y], color=GREY, linewidth=1, zorder=1)
                    used.add("topic")
                ok = e["status"] == "CONSUME_SUCCESS"
                ax.plot([t], [y], marker=shapes.get(e["group"], "o") if ok else "X", color=GREEN if ok else RED,
                        markersize=6 if ok else 7, markeredgecolor="white", markeredgewidth=0.5, zorder=5)
                used.add(f"ok:{e['group']}" if ok else "failed")
                topic_since = None
            elif kind == "dlq":
                ax.plot([t], [y], marker="s", color="black", markersize=7, zorder=6)
                used.add("dlq")
    catalogue = [
        ("sent", Line2D([], [], marker="|", color="black", linestyle="none", markersize=9, label="sent")),
        ("send_failed", Line2D([], [], marker="x", color=RED, linestyle="none",
                               label="send failed (not stored; the producer got the error)")),
        ("schedule", Patch(color=BLUE, alpha=0.75, label="waiting in SCHEDULE_TOPIC_XXXX (its delay level)")),
        ("retry", Patch(color=ORANGE, alpha=0.75, label="waiting for a retry (level 3 + reconsumeTimes)")),
        ("timer", Patch(color=PURPLE, alpha=0.75, label="waiting in the timer wheel")),
        ("again", Line2D([], [], color=RED, linestyle=(0, (2, 1)), marker=">", markersize=5,
                         label="delivered again (duplicate after a crash)")),
        ("topic", Line2D([], [], color=GREY, linewidth=1, label="in its topic until consumed")),
        ("failed", Line2D([], [], marker="X", color=RED, linestyle="none", label="consume failed (RECONSUME_LATER)")),
        ("dlq", Line2D([], [], marker="s", color="black", linestyle="none", label="stored in %DLQ%<group>")),
    ]
    for group in groups:
        label = f"consumed by {group}" if len(groups) > 1 else "consumed (CONSUME_SUCCESS)"
        catalogue.append((f"ok:{group}", Line2D([], [], marker=shapes[group], color=GREEN, linestyle="none",
                                                 label=label)))
    legend = [handle for key, handle in catalogue if key in used]
    seen_styles = set()

    def vline(t_ms, color, style, label, width=1.4):
        ax.axvline(t_ms / per, color=color, linestyle=style, linewidth=width, zorder=3, alpha=0.9)
        if label not in seen_styles:
            seen_styles.add(label)
            legend.append(Line2D([], [], color=color, linestyle=style, linewidth=width, label=label))

    put_fail_ts = []
    for e in events:
        kind = e["kind"]
        if kind == "crash":
            target = e.get("target", "broker")
            what = e.get("crash_kind", "process")
            if what == "shutdown":
                vline(e["t_ms"], BROWN, "-", f"{target} graceful shutdown")
            else:
                site = e.get("site")
                at = f", at {site}" if site and site != "plan" else ""
                vline(e["t_ms"], RED, "-", f"{target} crash ({'power failure' if what == 'power' else 'kill -9'}{at})")
        elif kind == "restart":
            vline(e["t_ms"], GREEN, "--", f"{e.get('target', 'broker')} restart")
        elif kind == "cq_truncate":
            vline(e["t_ms"], BROWN, "-.", "consume queue truncated")
        elif kind == "fault" and e.get("site") == "clock":
            by = e.get("by_ms", 0)
            vline(e["t_ms"], PURPLE, ":", f"broker clock steps {'back' if by < 0 else 'forward'} {abs(by) / 1000:g} s", 2)
        elif kind == "fault" and e.get("action") == "fail":
            put_fail_ts.append(e["t_ms"] / per)
        elif kind == "drain":
            vline(e["t_ms"], SKY, "--", "drain phase starts (no sends, no faults)", 1.2)
    if put_fail_ts:
        ax.plot(put_fail_ts, [-0.9] * len(put_fail_ts), marker="|", color=RED, linestyle="none", markersize=8)
        legend.append(Line2D([], [], marker="|", color=RED, linestyle="none", markersize=8,
                             label=f"injected put / send-back failure ({len(put_fail_ts)}, any message)"))
    for y, lane in enumerate(lanes):
        if lane.msg_id in names:
            ax.axhspan(y - 0.45, y + 0.45, color=RED, alpha=0.08, zorder=0)
            ax.annotate(f"VIOLATES {names[lane.msg_id]}", (1.0, y), xycoords=("axes fraction", "data"),
                        xytext=(-4, 0), textcoords="offset points", ha="right", va="center", fontsize=7.5,
                        color=RED, fontweight="bold", zorder=7)
    ax.set_yticks(range(len(lanes)), [("✗ " if lane.msg_id in names else "") + _lane_label(lane) for lane in lanes])
    for tick, lane in zip(ax.get_yticklabels(), lanes, strict=True):
        if lane.msg_id in names:
            tick.set_color(RED)
    ax.set_ylim(len(lanes) - 0.4, -1.4 if put_fail_ts else -0.6)
    if log_axis:
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(0, end_ms / per * 1.3)
        ax.set_xlabel("virtual time since the run started (s, log scale past 1 s: waits span seconds to hours)")
    else:
        ax.set_xlim(-end_ms / per * 0.01, end_ms / per * 1.01)
        ax.set_xlabel(f"virtual time since the run started ({unit})")
    ax.set_ylabel("message" if len(lanes) < 4 else "message (#index, delay level)")
    ax.grid(axis="y", alpha=0.15)
    if names:
        legend.append(Patch(color=RED, alpha=0.15, label="✗ a message an invariant violation names"))
    if not own_figure:
        ax.legend(handles=legend, loc="lower center", fontsize=7, ncol=3, frameon=False)
        return lanes
    fig.legend(handles=legend, loc="outside lower center", ncol=3, frameon=False)
    return save(fig, path)


def _hop_label(store: dict) -> str:
    """The label of a stored copy: its delay level (schedule queue n holds level n + 1), the timer wheel, the
    dead-letter topic (a %RETRY% copy is where its delivery lands: the ▸ marks it), with reconsumeTimes when it is not 0."""
    topic = store.get("topic", "")
    r = store.get("reconsume_times") or 0
    if topic == SCHEDULE_TOPIC:
        where = f"L{store['queue_id'] + 1}"
    elif topic == TIMER_TOPIC:
        where = "wheel"
    elif topic.startswith(DLQ_PREFIX):
        where = "DLQ"
    else:
        return ""
    return f"{where} r{r}" if r else where


def lateness_by_level(events: list[dict]) -> dict[str, list[tuple[int, bool]]]:
    """Level label -> [(lateness ms, is a retry)] for every scheduled delivery (``model.stats.delivery_lateness``:
    the same numbers as summary.json's stats and the bounded_lateness invariant)."""
    return {label: [(r.lateness_ms, r.retry) for r in records] for label, records in lateness_by_label(events).items()}


def _level_order(label: str) -> tuple[int, int]:
    return (1, 0) if label == "timer" else (0, int(label[1:]))


def plot_lateness(events: list[dict], summary: dict, path: str | None = None, ax=None) -> str | None:
    """Delivery lateness (ms from the due time to the delivery, ``model.stats``) per delay level: box + points.
    None (no plot) when nothing scheduled was delivered; with ``ax`` it draws there and returns None."""
    data = lateness_by_level(events)
    if not data:
        return None
    own_figure = ax is None
    if own_figure:
        fig = figure(12, 4.6)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    title = f"Delivery lateness per delay level — {summary.get('scenario', '?')} (seed {summary.get('seed', '?')})"
    ax.set_title(title, loc="left")
    labels = sorted(data, key=_level_order)
    values = [[v for v, _ in data[label]] for label in labels]
    ax.boxplot(values, positions=range(len(labels)), widths=0.55, showfliers=False,
               medianprops={"color": "black"}, boxprops={"color": GREY}, whiskerprops={"color": GREY},
               capprops={"color": GREY})
    rng = random.Random(0)
    for i, label in enumerate(labels):
        pts = data[label]
        if len(pts) > 400:
            pts = rng.sample(pts, 400)
        for retry in (False, True):
            ys = [v for v, r in pts if r == retry]
            if ys:
                xs = [i + rng.uniform(-0.22, 0.22) for _ in ys]
                ax.scatter(xs, ys, s=9, alpha=0.55, color=ORANGE if retry else BLUE, linewidths=0, zorder=3)
    lo = min(min(v) for v in values)
    hi = max(max(v) for v in values)
    if hi - lo > 2000 or lo < -100:
        ax.set_yscale("symlog", linthresh=100)
        ax.set_ylabel("lateness (ms, symmetric log scale)")
    else:
        ax.set_ylabel("lateness (ms)")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), [f"{label}\nn={len(data[label])}" for label in labels])
    ax.set_xlabel("delay level (Ln) or timer wheel; n = deliveries")
    handles = [Line2D([], [], marker="o", color=BLUE, linestyle="none", label="first delivery (real topic)")]
    if any(r for pts in data.values() for _, r in pts):
        handles.append(Line2D([], [], marker="o", color=ORANGE, linestyle="none", label="retry (%RETRY%<group>)"))
    handles.append(Line2D([], [], color="black", label="median; box: quartiles"))
    fig.legend(handles=handles, loc="outside upper right", ncol=3, frameon=False)
    steps = [e for e in events if e["kind"] == "fault" and e.get("site") == "clock"]
    if steps:
        moved = ", ".join(f"{e.get('by_ms', 0) / 1000:+g} s at t={e['t_ms'] / 1000:g} s" for e in steps[:3])
        ax.set_title(f"{title}\nthe broker clock stepped ({moved}): lateness is measured on the simulator's clock, "
                     f"so a step shows", loc="left")
    if lo < 0:
        why = ("negative: delivered before its due time after the broker clock stepped (see the title)" if steps
               else "negative: delivered BEFORE its due time (no clock step explains it: see no_early_delivery)")
        ax.annotate(why, (0.01, 0.02), xycoords="axes fraction", fontsize=8, color=RED)
    if not own_figure:
        return None
    return save(fig, path)
