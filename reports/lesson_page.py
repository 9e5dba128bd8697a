"""A lesson's self-contained page: the idea, then one message's journey with the bug and as fixed, side by side,
and a question whose answer hides behind ``<details>``. Reads only histories and summaries (result data)."""

from __future__ import annotations

import os

from model.journey import journey, outcome
from reports.html import Section, esc, img, page, table, verdict
from reports.run_plots import plot_timeline
from reports.style import figure, save
from reports.trace_text import render

_CSS = """
<style>
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.pair > div { min-width: 0; } .pair pre { font-size: 11px; max-height: 520px; }
details { background: #f4f8ff; border: 1px solid #d6e2f5; border-radius: 4px; padding: 8px 12px; margin: 8px 0; }
summary { cursor: pointer; font-weight: 600; }
</style>
"""

_JOURNEY_CONTEXT = ("crash", "restart", "fault", "cq_truncate", "store_rollback")


def message_events(events: list[dict], msg_id: str) -> list[dict]:
    """The message's own events plus the faults drawn across every lane: what its journey plot shows."""
    return [e for e in events if e.get("msg_id") == msg_id or e.get("kind") in _JOURNEY_CONTEXT]


def plot_message(events: list[dict], summary: dict, msg_id: str, invariant: str, why: str | None,
                 path: str | None = None, ax=None, label: str = ""):
    """One message's lane (red, with the invariant's name, when ``why`` says a violation names it).
    With ``ax`` it draws there and returns the lanes drawn; else it saves a PNG to ``path``."""
    named = {"invariants": {invariant: {"violations": [{"msg_id": msg_id, "explanation": why}]}}} if why else {}
    shown = {"scenario": summary.get("scenario"), "seed": summary.get("seed"), **named}
    fig = None
    if ax is None:
        fig = figure(12, 3.4)
        ax = fig.add_subplot()
    lanes = plot_timeline(message_events(events, msg_id), shown, limit=1, ax=ax)
    ax.set_title(f"message {msg_id}, {label}" if label else f"message {msg_id}", loc="left")
    return save(fig, path) if fig is not None else lanes


def _column(label: str, events: list[dict], summary: dict, msg_id: str, invariant: str, why: str | None,
            png: str) -> str:
    result = summary["invariants"][invariant]
    hops = journey(events, msg_id)
    head = (f"<h3>{esc(label)}</h3><p>{esc(invariant)}: {verdict(result['holds'])}, "
            f"{result['checked']} checked; the message was {esc(outcome(hops))}.</p>")
    if why:
        head += f'<p class="bad">{esc(why)}</p>'
    plot = img(plot_message(events, summary, msg_id, invariant, why, path=png, label=label), f"journey of {msg_id}, {label}")
    return f"<div>{head}{plot}<pre>{esc(render(msg_id, hops, why))}</pre></div>"


def lesson_page(text: dict, bug_events: list[dict], bug_summary: dict, fixed_events: list[dict],
                fixed_summary: dict, msg_id: str | None, why: str | None, work_dir: str) -> str:
    """The page as HTML; the two plots are written to ``work_dir`` and embedded."""
    os.makedirs(work_dir, exist_ok=True)
    idea = Section("The idea", "idea")
    for paragraph in text["idea"]:
        idea.text(paragraph)
    run = Section("The run", "run").text(esc(text["description"]))
    run.text(f"Scenario <code>{esc(text['scenario'])}</code> at seed {text['seed']}, run twice: with the bug "
             f"<code>{esc(text['mutant'])}</code> put back (<i>{esc(text['bug'])}</i>) and as RocketMQ fixed it. "
             f"Both runs are in <code>{esc(text['name'])}/bug</code> and <code>{esc(text['name'])}/fixed</code> "
             f"next to this page.")
    sections = [idea, run]
    compare = Section("One message, with the bug and as fixed", "journey")
    if msg_id is None:
        compare.text(f"The bug run was not caught by {esc(text['invariant'])}: this lesson no longer shows its "
                     f"bug. Run <code>rmqsim lessons {esc(text['name'])}</code> again after checking the mutant.",
                     cls="note bad")
    else:
        compare.text(f"Message <code>{esc(msg_id)}</code>, the first the <code>{esc(text['invariant'])}</code> "
                     f"invariant names in the bug run. {text['look_for']}")
        bug = _column(f"with the bug ({text['mutant']})", bug_events, bug_summary, msg_id, text["invariant"], why,
                      os.path.join(work_dir, "bug.png"))
        fixed = _column("as fixed (clean build)", fixed_events, fixed_summary, msg_id, text["invariant"], None,
                        os.path.join(work_dir, "fixed.png"))
        compare.body.append(f'<div class="pair">{bug}{fixed}</div>')
    sections.append(compare)
    question = Section("Your turn", "question").text(text["question"])
    question.body.append(f"<details><summary>Show the answer</summary><p>{text['answer']}</p></details>")
    sections.append(question)
    tryit = Section("Try it yourself", "try").text("From the directory of this page:")
    scenario_file = esc(text["scenario_file"])
    commands = (f"rmqsim run {scenario_file} --seed {text['seed']} --mutant {esc(text['mutant'])} --out bug\n"
                f"rmqsim run {scenario_file} --seed {text['seed']} --out fixed\n")
    if msg_id:
        commands += f"rmqsim trace bug {esc(msg_id)}\nrmqsim trace fixed {esc(msg_id)}\n"
    tryit.body.append(f"<pre>{commands}</pre>")
    sections.append(tryit)
    lead = f"Lesson {text['number']} of rmqsim's lessons. {esc(text['bug'])}"
    return page(f"Lesson {text['number']}: {text['title']}", lead, sections).replace("</head>", _CSS + "</head>", 1)


def index_page(lessons: list[tuple[int, str, str, str]]) -> str:
    """The catalogue: (number, name, title, mutant) per lesson, linked."""
    rows = [[n, f'<a href="{esc(name)}.html">{esc(title)}</a>', f"<code>{esc(mutant)}</code>"]
            for n, name, title, mutant in lessons]
    body = Section("Lessons", "lessons")
    body.body.append(table(["#", "lesson", "the historical bug it shows"], rows, numeric={0}, raw={1, 2}))
    return page("rmqsim lessons", "Each lesson is one scenario run twice, with a historical RocketMQ bug put back and "
                "as fixed, following one message through both runs.", [body], nav=False)
