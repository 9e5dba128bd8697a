"""Dormancy: a timer store with nothing in flight, driven in closed form instead of step by step.

With no request queued, batched, in the wheel's way or held by a worker, the timer's services still work every
poll: TimerEnqueuePutService moves the write time once per precision unit, TimerDequeueGetService catches the
read time up over the empty slots, and TimerFlushService checkpoints that read time (a new dataVersion each time
it moved). None of that depends on anything but the monotonic poll grids and the wall clock, so a skipping driver
lets a *dormant* timer sleep and ``fast_forward`` computes what those polls did, exactly, the next time anything
can see it: a timer service's step, or an observer the driver names (a crash, a shutdown, a clock step, the end
of a run). The dequeue wakes by itself at the first poll whose write time passes a slot that may hold entries.

Exactness rests on three things: each poll's effect is a function of its time, the wall clock (``now`` minus
the time since the poll: no clock step in between, so a driver materialises before every step) and the state
only timer steps change (each fast-forwards first); and within one millisecond the services poll in list
order (enqueue-get 0, enqueue-put 1, dequeue-get 2, workers 3, flush 4), which ``turn`` encodes: the polls at
``t`` of the services with an index below ``turn`` are accounted for. A driver that shuffles same-millisecond
ties must leave dormancy off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore

ENQUEUE_PUT_FIRST_POLL_MS = 10  # TimerEnqueuePutService: poll(10 ms) for the first request of a batch
ALL_TURNS = 5  # every timer service has had its turn in the millisecond


def grid_at_or_after(base_ms: int, target_ms: int, interval_ms: int) -> int:
    """The first poll time base + k*interval (k >= 0) at or after ``target_ms``."""
    if target_ms <= base_ms:
        return base_ms
    return base_ms + -(-(target_ms - base_ms) // interval_ms) * interval_ms


def is_dormant(ts: TimerMessageStore) -> bool:
    """Nothing in flight: every poll of the enqueue put, dequeue get and flush is clockwork (see the module)."""
    if not ts.dormancy or not ts.running or ts.dequeue_stuck or not ts.should_running_dequeue:
        return False
    if ts.m_read_current_slot or ts.m_read_time_early:  # mutants that change the clockwork itself
        return False
    put, get = ts.enqueue_put_service, ts.dequeue_get_service
    if put is None or put.phase != "poll" or ts.enqueue_put_queue:
        return False
    if not (ts.commit_queue_offset == put.tmp_commit == ts.curr_queue_offset):
        return False
    if get.phase != "poll" or not get.idle or ts.commit_read_time_ms != ts.curr_read_time_ms:
        return False
    if ts.dequeue_get_queue or ts.dequeue_put_queue or ts.dequeue_put_message_service.busy:
        return False
    return not ts.timer_wheel.has_dirty_slots() and not ts.timer_log.mfq.flush_would_change(0)


def _first_get_poll_ms(ts: TimerMessageStore) -> int:
    """The dequeue's first poll that can move the read time (earlier ones found it caught up and did nothing)."""
    get = ts.dequeue_get_service
    if ts.curr_read_time_ms < ts.curr_write_time_ms:
        changed = ts.write_time_passed_mono_ms + (1 if ts.write_time_passed_after_dequeue_turn else 0)
        return grid_at_or_after(get.at_mono_ms, changed, ts.poll_interval_ms)
    return get.at_mono_ms


class _Clockwork:
    """The write and read times a dormant timer's polls reach, as functions of the monotonic time."""

    __slots__ = ("p", "off", "put_start", "write0", "read0", "get_first", "get_every")

    def __init__(self, ts: TimerMessageStore, wall_minus_mono_ms: int) -> None:
        self.p = ts.precision_ms
        self.off = wall_minus_mono_ms
        self.put_start = ts.enqueue_put_service.poll_start_ms  # its last poll: later ones are not accounted yet
        self.write0 = ts.curr_write_time_ms
        self.read0 = ts.curr_read_time_ms
        self.get_first = _first_get_poll_ms(ts)
        self.get_every = ts.poll_interval_ms

    def last_put_ms(self, at_ms: int) -> int | None:
        polls = (at_ms - self.put_start) // ENQUEUE_PUT_FIRST_POLL_MS
        return self.put_start + polls * ENQUEUE_PUT_FIRST_POLL_MS if polls >= 1 else None

    def write_at(self, at_ms: int) -> int:
        """The write time after the enqueue put's polls up to ``at_ms`` (maybeMoveWriteTime: never backwards)."""
        last = self.last_put_ms(at_ms)
        if last is None:
            return self.write0
        target = (last + self.off) // self.p * self.p
        return target if target > self.write0 else self.write0

    def last_get_ms(self, at_ms: int) -> int | None:
        if at_ms < self.get_first:
            return None
        return self.get_first + (at_ms - self.get_first) // self.get_every * self.get_every

    def read_at(self, at_ms: int) -> int:
        """The read time after the dequeue's polls up to ``at_ms`` (each catches up with the write time then)."""
        last = self.last_get_ms(at_ms)
        if last is None:
            return self.read0
        write = self.write_at(last)
        return write if write > self.read0 else self.read0


def dormant_dequeue_wakeup_ms(ts: TimerMessageStore, mono_ms: int) -> int | None:
    """The first dequeue poll at which the write time has passed a slot that may hold entries (None: no such)."""
    next_used = ts.timer_wheel.next_used_time_ms(ts.curr_read_time_ms, 1 << 62)
    if next_used is None:
        return None
    clock = _Clockwork(ts, ts.clock.now_ms() - mono_ms)
    if ts.curr_write_time_ms > next_used:
        return clock.get_first
    put_start = clock.put_start
    need_ms = next_used + clock.p - clock.off  # the first monotonic time whose wall time formats past the slot
    polls = max(1, -(-(need_ms - put_start) // ENQUEUE_PUT_FIRST_POLL_MS))
    return grid_at_or_after(clock.get_first, put_start + polls * ENQUEUE_PUT_FIRST_POLL_MS, clock.get_every)


def fast_forward(ts: TimerMessageStore, mono_ms: int, turn: int) -> None:
    """Account the polls a dormant timer slept through: all before ``mono_ms``, and those at ``mono_ms`` of the
    services with an index below ``turn``. A no-op when not dormant or when nothing is due yet."""
    if not is_dormant(ts):
        return
    put, get, flush = ts.enqueue_put_service, ts.dequeue_get_service, ts.flush_service
    clock = _Clockwork(ts, ts.clock.now_ms() - mono_ms)
    put_limit = mono_ms if turn > 1 else mono_ms - 1
    get_limit = mono_ms if turn > 2 else mono_ms - 1
    flush_limit = mono_ms if turn > 4 else mono_ms - 1
    last_put = clock.last_put_ms(put_limit)
    last_get = clock.last_get_ms(get_limit)
    read = clock.read_at(get_limit)
    next_used = ts.timer_wheel.next_used_time_ms(clock.read0, read)
    if next_used is not None and next_used < read:
        raise RuntimeError(f"timer dormancy overslept slot {next_used}: the read time would pass it to {read}")
    # TimerFlushService's rounds: the checkpoint of each round's read time, a new dataVersion when it moved.
    every = flush.interval_ms
    first_round = flush._next_ms
    if first_round <= flush_limit:
        rounds = (flush_limit - first_round) // every + 1
        last_round = first_round + (rounds - 1) * every
        committed = ts.last_commit_read_time_ms
        moves = 0
        moved_at = None
        if ts.commit_queue_offset != ts.last_commit_queue_offset:
            moves, moved_at = 1, first_round  # the first round commits the queue offset (constant after)
            committed = clock.read_at(first_round)
        periodic = (every % clock.p == 0 and every % clock.get_every == 0
                    and every % ENQUEUE_PUT_FIRST_POLL_MS == 0)
        k = 1 if moved_at is not None else 0
        while k < rounds:
            at = first_round + k * every
            value = clock.read_at(at)
            if value != committed:
                moves += 1
                moved_at = at
                committed = value
            if periodic and value == _raw_read_at(clock, at) and k + 1 < rounds:
                # The read time is the formatted wall time of a put poll, and the grids repeat every round:
                # each later round reads exactly one interval further, so each moves it.
                rest = rounds - 1 - k
                moves += rest
                moved_at = last_round
                committed = value + rest * every
                break
            k += 1
        cp = ts.timer_checkpoint
        if moves:
            cp.data_version.timestamp_ms = moved_at + clock.off
            cp.data_version.counter += moves
            cp.data_version.state_version = 0
            ts.last_commit_read_time_ms = committed
            ts.last_commit_queue_offset = ts.commit_queue_offset
        cp.last_timer_log_flush_pos = ts.timer_log.mfq.flushed_where
        cp.last_read_time_ms = clock.read_at(last_round)
        cp.master_timer_queue_offset = ts.commit_queue_offset
        cp.last_timer_queue_offset = min(ts.commit_queue_offset, cp.master_timer_queue_offset)
        cp.flush()
        flush._next_ms = last_round + every
    if last_get is not None:
        get.at_mono_ms = last_get + clock.get_every
        ts.curr_read_time_ms = ts.commit_read_time_ms = read
    if last_put is not None:
        write = clock.write_at(put_limit)
        if write > ts.curr_write_time_ms and read < write:
            ts.write_time_passed_mono_ms = last_put
            ts.write_time_passed_after_dequeue_turn = False
        ts.curr_write_time_ms = write
        put.poll_start_ms = last_put
    if turn > 0:
        ts.note_turn(mono_ms, turn - 1)


def _raw_read_at(clock: _Clockwork, at_ms: int) -> int | None:
    """The formatted wall time of the put poll the dequeue's last poll up to ``at_ms`` saw (None: no such)."""
    last_get = clock.last_get_ms(at_ms)
    if last_get is None:
        return None
    last_put = clock.last_put_ms(last_get)
    if last_put is None:
        return None
    return (last_put + clock.off) // clock.p * clock.p


def before_clock_step(ts: TimerMessageStore, mono_ms: int, turn: int) -> None:
    """The wall clock is about to step: account every poll before it under the wall time it saw.

    A dormant timer fast-forwards. Otherwise the enqueue put's and the dequeue's lazily skipped polls (idle
    skipping: each was a no-op, or the service would have been woken for it) are sealed as done, so that a
    later fast-forward never evaluates them against the stepped clock."""
    fast_forward(ts, mono_ms, turn)
    if not ts.dormancy or not ts.running:
        return
    put, get = ts.enqueue_put_service, ts.dequeue_get_service
    if put.phase == "poll" and not ts.enqueue_put_queue:
        limit = mono_ms if turn > 1 else mono_ms - 1
        polls = (limit - put.poll_start_ms) // ENQUEUE_PUT_FIRST_POLL_MS
        if polls >= 1:  # what its step would do now (TimerEnqueuePutService.step, phase "poll")
            last = put.poll_start_ms + polls * ENQUEUE_PUT_FIRST_POLL_MS
            ts.commit_queue_offset = put.tmp_commit if polls == 1 else ts.curr_queue_offset
            ts.maybe_move_write_time(ts.clock.now_ms() - (mono_ms - last), last)
            put.poll_start_ms = last
            put.tmp_commit = ts.curr_queue_offset
    if get.phase == "poll" and get.idle:
        limit = mono_ms if turn > 2 else mono_ms - 1
        if get.at_mono_ms <= limit:
            get.at_mono_ms += ((limit - get.at_mono_ms) // ts.poll_interval_ms + 1) * ts.poll_interval_ms
