"""``rmqsim lessons``: short lessons, each a built-in scenario plus one historical bug seen through its mutant.

A lesson runs its scenario twice at a fixed seed, with the bug put back (``--mutant``) and as RocketMQ fixed
it, and follows the message the lesson's invariant names in both runs, side by side. A lesson is sound only
when the bug run violates that invariant and the fixed run holds every invariant; ``rmqsim lessons`` checks
that each time it writes a page (exit 1 otherwise), so a lesson can never teach a story the code no longer
tells.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from sim.scenario import suggest

# The retry ladder shortened to 3 retries (10 s, 30 s, 1 min), then the DLQ: the whole story in 4 minutes.
_LADDER = (("consumer.max_reconsume_times", 3), ("consumer.fail_first", 100), ("drain", "10m"))


@dataclass(frozen=True)
class Lesson:
    """A lesson's run (scenario, overrides, seed), its bug (mutant, the invariant that sees it) and its text.

    The text fields are trusted HTML fragments written here (``<code>`` and ``<b>`` only)."""

    name: str
    title: str
    scenario: str                     # a built-in scenario
    mutant: str                       # the historical bug, from store.mutants.CATALOGUE
    invariant: str                    # the invariant that catches it on this run
    idea: tuple[str, ...]             # what the concept is, in RocketMQ's words
    look_for: str                     # what to compare in the two journeys
    question: str
    answer: str
    overrides: tuple[tuple[str, object], ...] = ()
    seed: int = 1


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        name="delay-levels",
        title="What a delay level is",
        scenario="put-failures-during-delivery",
        mutant="skip_failed_delivery",
        invariant="no_loss",
        idea=(
            "A producer asks for a delay by <b>level</b>, not by time: <code>msg.setDelayTimeLevel(n)</code>. "
            "The broker's <code>messageDelayLevel</code> table (<code>1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m "
            "10m 20m 30m 1h 2h</code>) turns level <i>n</i> into a delay.",
            "The broker does not store the message in its topic yet. It stores it in the hidden topic "
            "<code>SCHEDULE_TOPIC_XXXX</code>, queue <i>n</i>&minus;1, keeps the real topic and queue in the "
            "properties <code>REAL_TOPIC</code> and <code>REAL_QID</code>, and writes the due time where a "
            "consume-queue unit normally keeps the tag hash.",
            "<code>ScheduleMessageService</code> runs one task per level. Each task reads its queue from the "
            "offset kept in <code>delayOffset.json</code>. When the unit at that offset is due, the task rebuilds "
            "the message with its real topic and puts it into the commit log a second time. From there it is "
            "dispatched to the topic's consume queue, and consumers see it. A level's queue is FIFO, so one "
            "level delivers in the order it stored.",
            "In this run, 5% of the puts that bring due messages back to their topic fail.",
        ),
        look_for="Both runs store the message in <code>SCHEDULE_TOPIC_XXXX</code>. With the bug it is never "
                 "delivered. As fixed, a failed put (<code>FAULT commitlog.put</code>) is followed 100 ms later by "
                 "the delivery.",
        question="The broker never crashed, and the failed put was reported as failed. Why is the message "
                 "lost with the bug?",
        answer="After the failed put, the buggy level task (#9249, RocketMQ 5.0 to 5.3.2) went on from "
               "<code>currOffset + 1</code>. That moved the level past the message: nothing ever reads that "
               "unit again, and the persisted <code>delayOffset.json</code> agrees. The fix reschedules the task "
               "at <code>currOffset</code> after <code>DELAY_FOR_A_WHILE</code> (100 ms), so the same message "
               "is tried again until its put succeeds.",
    ),
    Lesson(
        name="retry-ladder",
        title="The retry ladder and the dead-letter queue",
        scenario="retry-ladder-to-dlq",
        overrides=_LADDER,
        mutant="dlq_threshold_gt",
        invariant="dlq_after_max_retries",
        idea=(
            "When a listener returns <code>RECONSUME_LATER</code>, the client sends the message back "
            "(<code>consumerSendMsgBack</code>). The broker writes a retry copy with "
            "<code>reconsumeTimes</code> + 1 into <code>SCHEDULE_TOPIC_XXXX</code> at delay level "
            "3 + <code>reconsumeTimes</code>: 10 s, then 30 s, 1 min, 2 min, and so on up to 2 h. When the copy "
            "is due, it goes to <code>%RETRY%group</code>, which every member of the group subscribes to.",
            "When the consumed message's <code>reconsumeTimes</code> has reached the maximum (16 by default, "
            "3 in this run), the broker writes the copy to <code>%DLQ%group</code> instead. Nothing consumes "
            "that queue: an operator has to look.",
        ),
        look_for="Count the <code>send back</code> lines and the levels. Fixed: levels 3, 4 and 5 (three "
                 "retries), then the DLQ. With the bug: a fourth retry at level 6 (2 min) first.",
        question="With <code>maxReconsumeTimes = 3</code>, how many times is the listener called in all, as fixed, "
                 "and which <code>reconsumeTimes</code> does the DLQ copy carry?",
        answer="Four calls: the first delivery and three retries (<code>reconsumeTimes</code> 0, 1, 2 and 3). "
               "The fourth failure is sent back with <code>reconsumeTimes</code> 3, the broker finds "
               "3 &ge; 3, and the DLQ copy carries 4. With <code>&gt;</code> instead of <code>&ge;</code> the "
               "broker grants one retry too many, so the listener is called five times.",
    ),
    Lesson(
        name="consumer-offsets",
        title="What a committed consumer offset promises",
        scenario="consumer-crash",
        mutant="commit_max_offset",
        invariant="no_loss",
        idea=(
            "A push consumer pulls a batch of messages into a <code>ProcessQueue</code> and consumes them on a "
            "thread pool, so they finish out of order. The offset the client commits is the smallest offset still "
            "in flight (<code>removeMessage</code> returns <code>msgTreeMap.firstKey()</code>), or the end "
            "of the batch when nothing is in flight.",
            "The broker keeps the committed offsets in memory and flushes them to "
            "<code>consumerOffset.json</code> every 5 s. When a consumer dies, the queue goes to another "
            "instance at the next rebalance, and that instance starts at the committed offset. So a message "
            "below the committed offset is treated as done.",
        ),
        look_for="With the bug, an <code>offset commit</code> passes the message <b>before</b> it was consumed. "
                 "Then its consumer is killed, and the instance that takes over starts after it.",
        question="Committing the smallest in-flight offset means some messages are consumed twice after a "
                 "crash. Why does RocketMQ accept that, instead of committing the largest offset it has "
                 "finished?",
        answer="Because the promise is at-least-once. Committing the smallest in-flight offset can only repeat "
               "messages: the ones above it that were already done are consumed again by the next owner. "
               "Committing the largest finished offset skips every message below it that was still in "
               "flight, and after a crash those are lost: here, the eight messages the no_loss invariant "
               "names.",
    ),
    Lesson(
        name="crash-before-offset-flush",
        title="A crash before an offset flush",
        scenario="crash-before-delay-offset-flush",
        mutant="persist_before_load",
        invariant="duplicates",
        idea=(
            "Each level task keeps its offset in memory and the broker writes them all to "
            "<code>delayOffset.json</code> every 10 s. After <code>kill -9</code>, the restarted broker reads "
            "that file and knows only what was written up to 10 s before the crash.",
            "So each level delivers again what it delivered since the last flush. These are duplicates, and "
            "RocketMQ allows them (at-least-once). The <code>duplicates</code> invariant accepts exactly the "
            "deliveries the crash explains, and no others.",
        ),
        look_for="Fixed: the message is delivered once. If it falls in the window between the last flush and the "
                 "crash, it may be delivered again. With the bug, a message delivered long before the crash is "
                 "delivered again after the restart.",
        question="The bug (#6881, RocketMQ 5.0 to 5.1.1) writes the empty offset table to "
                 "<code>delayOffset.json</code> before <code>load()</code> reads the file. Why does it cause "
                 "duplicates and not losses?",
        answer="The overwritten file says offset 0 for every level, so every level starts again from the head of "
               "its queue and delivers all it still holds. Replaying from too early repeats messages but "
               "skips none. The opposite mistake, an offset that is too late, loses messages: see the "
               "store-rollback lesson.",
    ),
    Lesson(
        name="clock-step",
        title="What a clock step does to delayed messages",
        scenario="backwards-clock-step",
        mutant="no_correct_deliver_timestamp",
        invariant="bounded_lateness",
        idea=(
            "A delayed message's due time is a wall-clock timestamp, stored when the message arrives "
            "(store time plus the level's delay). A level task compares it with <code>System.currentTimeMillis()"
            "</code>. If NTP or an operator moves the clock back, every waiting message waits for that much "
            "longer.",
            "<code>correctDeliverTimestamp</code> guards against that. A due time later than <i>now</i> plus the "
            "level's own delay cannot be right, so the task delivers the message now.",
        ),
        look_for="The clock jumps back 5 minutes while 1- and 2-minute messages wait. Fixed: the message is "
                 "delivered at the moment of the step, before its minute is up. With the bug it is still waiting "
                 "at the end of the run.",
        question="Without the correction, how late would this level-5 (1 min) message be? With it, the message "
                 "leaves before its delay is over. Why is that the lesser evil, and how early can it be at most?",
        answer="About 5 minutes late, the size of the step: its due time was stored with the old clock. The "
               "correction trades that for earliness. It delivers at once any message whose due time is more "
               "than one level-delay ahead of <i>now</i>. Such a message has waited between 0 and its full delay, "
               "so it is early by at most the level's delay (here it waited 40 s of its 60 s). A bounded "
               "earliness after a rare clock step is better than a wait as long as the step, which could be "
               "hours. That is why rmqsim's <code>no_early_delivery</code> excuses exactly the deliveries a "
               "backward step explains, and <code>bounded_lateness</code> catches the missing correction.",
    ),
    Lesson(
        name="timer-wheel",
        title="The timer wheel (RocketMQ 5)",
        scenario="timer-wheel-basic",
        mutant="timer_read_current_slot",
        invariant="no_early_delivery",
        idea=(
            "RocketMQ 5 accepts any delay (<code>TIMER_DELIVER_MS</code> or <code>TIMER_DELAY_SEC</code>), "
            "not just 18 levels. Such a message goes to <code>rmq_sys_wheel_timer</code>. "
            "<code>TimerMessageStore</code> appends it to the timer log and links it into the wheel slot of "
            "its deliver time, rounded <b>up</b> to the precision (1 s).",
            "A dequeue service walks the wheel slot by slot with its read time. It reads a slot only when the slot "
            "is over, and then puts the slot's messages back into their real topics. "
            "<code>config/timercheck</code> records how far it got.",
        ),
        look_for="Compare the deliver lines. Fixed: delivered at or after the due time (late by up to one "
                 "precision). With the bug: <code>EARLY</code>, up to a second before it was due.",
        question="With the bug the message reached its topic almost a second before it was due. What bounds how "
                 "early the bug can be, and why is the fixed dequeue never early?",
        answer="One precision (1 s). The bug reads a slot while it is still the current one, so a message whose "
               "deliver time lies at the end of that slot leaves up to a precision before it. The fixed dequeue "
               "waits while <code>read &ge; write</code>, so it reads a slot only after that slot's whole second "
               "is over. Each deliver time was rounded <b>up</b> to its slot, so by then every message in the slot "
               "is due.",
    ),
    Lesson(
        name="store-rollback",
        title="Offsets that outlive their store",
        scenario="store-rollback",
        mutant="no_correct_delay_offset",
        invariant="no_loss",
        idea=(
            "The config files (<code>delayOffset.json</code>, <code>consumerOffset.json</code>) and the data "
            "files (commit log, consume queues) can come from different moments: a restored backup, or a disk "
            "that lost its last minutes while the config directory did not.",
            "Here the broker restarts on a copy of its store taken 20 s earlier with today's "
            "<code>delayOffset.json</code>. The level offsets point past the end of the level queues.",
        ),
        look_for="With the bug, the message is stored in its level queue after the restart and never delivered. "
                 "Fixed: it is delivered on time.",
        question="Suppose that after the restart level 1's queue ends at offset 90 while <code>delayOffset.json</code> says 130. "
                 "What happens to the next 40 messages stored at level 1, with and without "
                 "<code>correctDelayOffset</code>?",
        answer="Without it (#1869, RocketMQ 4.9.1 and earlier), the level task waits at offset 130. New messages get "
               "offsets 90, 91, and so on, which the task will never read, so the first 40 are lost. "
               "<code>correctDelayOffset</code> clamps each loaded offset into the queue's "
               "[min, max] at start-up, so the task reads from 90 and delivers them all.",
    ),
    Lesson(
        name="producer-fallback",
        title="When the send-back fails: the producer fallback",
        scenario="retry-fallback-to-dlq",
        mutant="fallback_dlq_ge",
        invariant="dlq_after_max_retries",
        idea=(
            "If <code>consumerSendMsgBack</code> fails, the client does not give up. It sends a new message "
            "to <code>%RETRY%group</code> with its own producer, with <code>RECONSUME_TIME</code> = "
            "<code>reconsumeTimes</code> + 1 and a delay level of 3 + <code>reconsumeTimes</code>.",
            "Unlike the send-back, this path counts the failed attempt before the broker sees the message. The "
            "broker's <code>handleRetryAndDLQ</code> decides between a retry and the DLQ from that count. "
            "RocketMQ 5 compares it with <code>&gt;</code>.",
        ),
        look_for="Count the consume attempts before the DLQ: four when fixed (the first delivery and three "
                 "retries). With the bug, the message is dead-lettered after three.",
        question="Why is <code>&gt;</code> right on this path, when the send-back path uses <code>&ge;</code>?",
        answer="The send-back path compares the consumed message's own <code>reconsumeTimes</code>, before the "
               "increment. The fallback copy already carries <code>reconsumeTimes</code> + 1. "
               "<code>r + 1 &gt; max</code> is the same test as <code>r &ge; max</code>, so both paths give "
               "exactly <code>max</code> retries. With <code>&ge;</code> (RocketMQ 4.x), a message sent back "
               "through the fallback loses its last retry.",
    ),
)


def by_name() -> dict[str, Lesson]:
    return {lesson.name: lesson for lesson in LESSONS}


class LessonsInputError(Exception):
    """Bad input: the CLI prints it as one line and exits 2."""


@dataclass(frozen=True)
class LessonRuns:
    """The lesson's two runs and the message it follows (the first the lesson's invariant names)."""

    lesson: Lesson
    bug: object        # sim.run.RunResult with the mutant
    fixed: object      # sim.run.RunResult of the clean build
    msg_id: str | None
    why: str | None    # the invariant's explanation for msg_id

    @property
    def sound(self) -> bool:
        """The bug run is caught by the lesson's invariant on a message, and the fixed run holds everything."""
        caught = not self.bug.summary["invariants"][self.lesson.invariant]["holds"]
        return caught and self.msg_id is not None and self.fixed.summary["verdict"] == "holds"


def run_lesson(lesson: Lesson, out_dir: str | None = None) -> LessonRuns:
    """Both runs; with ``out_dir`` they are written as run directories ``bug/`` and ``fixed/`` for ``rmqsim trace``."""
    from scenarios.catalogue import load_builtin
    from sim.run import run_scenario

    scenario = load_builtin(lesson.scenario, dict(lesson.overrides) or None)
    runs = {}
    for label, mutants in (("bug", [lesson.mutant]), ("fixed", [])):
        where = os.path.join(out_dir, label) if out_dir else None
        runs[label] = run_scenario(scenario, lesson.seed, mutants=mutants, out_dir=where)
    violations = runs["bug"].summary["invariants"][lesson.invariant]["violations"]
    named = next((v for v in violations if v.get("msg_id")), None)
    return LessonRuns(lesson, runs["bug"], runs["fixed"], named and named["msg_id"], named and named.get("explanation"))


def write_lesson(lesson: Lesson, out_dir: str, number: int) -> tuple[str, LessonRuns]:
    """The lesson's page ``OUT/NAME.html`` and its runs and scenario under ``OUT/NAME/``."""
    from reports.html import write_page
    from reports.lesson_page import lesson_page
    from sim.toml_out import dumps
    from store.mutants import CATALOGUE

    work = os.path.join(out_dir, lesson.name)
    runs = run_lesson(lesson, work)
    scenario_file = os.path.join(work, "scenario.toml")
    with open(scenario_file, "w", encoding="utf-8") as f:
        f.write(dumps(runs.fixed.scenario.doc))
    text = {
        "number": number, "name": lesson.name, "title": lesson.title, "idea": lesson.idea,
        "look_for": lesson.look_for, "question": lesson.question, "answer": lesson.answer,
        "mutant": lesson.mutant, "bug": CATALOGUE[lesson.mutant], "invariant": lesson.invariant,
        "scenario": lesson.scenario, "description": runs.fixed.scenario.description,
        "scenario_file": os.path.join(lesson.name, "scenario.toml"), "seed": lesson.seed,
    }
    page = lesson_page(text, runs.bug.history.events, runs.bug.summary, runs.fixed.history.events,
                       runs.fixed.summary, runs.msg_id, runs.why, work)
    return write_page(os.path.join(out_dir, f"{lesson.name}.html"), page), runs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="LESSON", help="lessons to write (default: list them)")
    p.add_argument("--all", action="store_true", help="write every lesson and an index page")
    p.add_argument("--out", metavar="DIR", help="where the pages go (required to write lessons)")


def run_lessons(args: argparse.Namespace, out=None) -> int:
    """List the lessons, or write the named ones; 1 when a lesson is no longer sound (its story broke)."""
    out = out or sys.stdout
    known = by_name()
    if not args.names and not args.all:
        for i, lesson in enumerate(LESSONS, 1):
            out.write(f"{i:2}. {lesson.name:<26} {lesson.title}  (bug: {lesson.mutant})\n")
        return 0
    for name in args.names:
        if name not in known:
            raise LessonsInputError(f"unknown lesson {name!r}{suggest(name, known)}; rmqsim lessons lists them")
    if not args.out:
        raise LessonsInputError("--out DIR is required to write lessons")
    chosen = list(LESSONS) if args.all else [known[n] for n in dict.fromkeys(args.names)]
    from reports.html import write_page
    from reports.lesson_page import index_page

    broken = []
    written = []
    for lesson in chosen:
        number = LESSONS.index(lesson) + 1
        path, runs = write_lesson(lesson, args.out, number)
        written.append((number, lesson.name, lesson.title, lesson.mutant))
        state = "ok" if runs.sound else "NOT SOUND: the bug run was not caught or the fixed run failed"
        out.write(f"{path}  {state}\n")
        if not runs.sound:
            broken.append(lesson.name)
    if args.all:
        out.write(write_page(os.path.join(args.out, "index.html"), index_page(written)) + "\n")
    return 1 if broken else 0
