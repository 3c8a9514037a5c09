"""Fan-out: channels, their latest row, and every subscriber's connection.

`publish` runs on the event loop right after a tick commits and never awaits: it writes the
tick's frame (built once) to each subscriber's transport in one loop. A subscriber whose
transport is past its high-water mark of unsent bytes gets its frames queued instead, and one
small task per subscriber feeds them in as the socket empties.

Each channel of a subscriber goes forward only: a subscriber remembers the last tick of each
channel it has been handed, and a row at or before it is never sent (so no tick comes twice and
none goes backwards, whatever order the store and the live ticks race in). With `from_tick` the
channel starts as a replay: the ticks from_tick … latest read from the store, while live rows
of the channel wait behind it; once the store has nothing newer, the waiting rows follow and
the channel is live. A tick committed while the replay is read is either in the read or among
the waiting rows (a tick is published only after it commits), so the seam has no gap.

A feed with a delta (the ladder) sends each `update` as the change since the tick before
(feed/messages.py), which a subscriber has, as its ticks come gap-free; the first update of a
replay goes whole instead, since the client may have nothing of the channel yet.

Every frame a subscriber is owed (live updates, snapshots, replayed ticks, answers) counts
against one budget of `budget` frames held for it; a subscriber that would go past it is
closed with 4008 `slow-consumer` (it may come back with `from_tick`). A replay is never loaded
whole: it is read from the store at most `REPLAY_CHUNK` ticks at a time (never more than the
budget has room for), and the next chunk only once the socket has taken the last one, so a
client that does not read costs one chunk, not the replay window. A new subscribe to a channel
replaces that channel's replay, and everything a subscriber holds is dropped when it leaves. So
a slow or hostile subscriber delays nobody and holds a bounded amount of memory.

The hub names a channel by its rows' `key`: the channel's own name, but for a cluster's own
channel (feed/private.py), which every cluster calls `cluster` and the hub `cluster:<id>`. A
channel subscribed before it has any row gets its first row as the snapshot.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from burstmarket.feed.messages import Row
from burstmarket.feed.wire import Wire, close_frame

SLOW_CONSUMER = 4008
REPLAY_CHUNK = 64
"""Ticks of one channel read from the store at a time for a replay."""

CATCH_UP_POLL_SECONDS = 0.001
"""How often `catch_up` looks again while a subscriber's writer works through what it holds."""

ReadReplay = Callable[[str, int, int], Awaitable[list[Row]]]
"""(channel, from_tick, to_tick) -> the channel's stored rows for those ticks, in tick order."""


@dataclass(slots=True)
class _Replay:
    """A channel between subscribe-with-from_tick and live."""

    next_tick: int
    """The next tick to read from the store."""
    reading: int = 0
    """Rows of the read under way (held for the budget until they arrive)."""
    rows: deque[Row] = field(default_factory=deque)
    """Read from the store, not yet handed to the socket."""
    waiting: list[Row] = field(default_factory=list)
    """Live rows that arrived meanwhile, in tick order."""
    read_all: bool = False
    """The store had nothing past `rows`: once they are out, the waiting rows, then live."""

    @property
    def held(self) -> int:
        return self.reading + len(self.rows) + len(self.waiting)


class Subscriber:
    """One websocket connection's outbound side."""

    def __init__(self, wire: Wire, budget: int, read_replay: ReadReplay) -> None:
        self._transport = wire.transport
        self._writable = wire.writable
        self._budget = budget
        self._read_replay = read_replay
        self._queue: deque[bytes] = deque()
        """Frames waiting for the socket."""
        self._replays: dict[str, _Replay] = {}
        self._sent: dict[str, int] = {}
        """The last tick of each channel handed to the socket or queued for it."""
        self._whole: set[str] = set()
        """Channels whose next update goes whole (a replay's first): not as a change."""
        self._awaiting: set[str] = set()
        """Channels subscribed before they had any row: the first one goes as the snapshot."""
        self._loop = asyncio.get_running_loop()
        self._writer: asyncio.Task[None] | None = None
        self.failed = asyncio.Event()
        self.channels: set[str] = set()
        self.cluster: str | None = None
        """The cluster the socket authenticated as (feed/private.py), if any."""
        self.close_code: int | None = None
        self.close_why = ""
        """Why it was failed, for the one log line of its close."""
        self.last_sent = self._loop.time()
        if wire.ping_timeout is not None:
            # A client that stops reading leaves the keepalive ping unanswered: the same slow
            # consumer, caught even when the feed is too quiet to fill its backlog.
            why = f"a keepalive ping unanswered for {wire.ping_timeout:g} s"
            wire.on_stall = lambda: self.fail(SLOW_CONSUMER, why)

    @property
    def closed(self) -> bool:
        return self.close_code is not None or self._transport.is_closing()

    @property
    def idle_since(self) -> float | None:
        """When the last message left, if nothing is queued now."""
        return None if self._queue else self.last_sent

    @property
    def held(self) -> int:
        """Frames held for this subscriber: queued, and those of its replays."""
        return len(self._queue) + sum(replay.held for replay in self._replays.values())

    @property
    def caught_up(self) -> bool:
        """Whether it has taken everything it is owed: nothing held for it, and its socket
        below its high-water mark (or it has gone)."""
        return self.closed or (not self.held and self._writable.is_set())

    async def catch_up(self) -> None:
        """Return once it is `caught_up`: at once, or when its socket drains, or once its
        writer has handed the socket what it held."""
        while not self.caught_up:
            if not self._writable.is_set():
                await self._writable.wait()  # set again once drained, or when the peer is lost
            else:
                # The writer is handing over its queue, or a replay chunk is being read: no
                # event says when that is done.
                await asyncio.sleep(CATCH_UP_POLL_SECONDS)

    def offer(self, frame: bytes) -> None:
        if self.closed:
            return
        if not self._queue and self._writable.is_set():
            self._send(frame)
            return
        if self.held >= self._budget:
            self._overflow()
            return
        self._queue.append(frame)
        self._wake()

    def deliver(self, row: Row) -> None:
        """A live row of a channel this subscriber is on."""
        if row.key in self._awaiting:  # its first row since the subscribe: as the snapshot
            self._awaiting.discard(row.key)
            self._sent[row.key] = row.tick
            self.offer(row.snapshot)
            return
        replay = self._replays.get(row.key)
        if replay is None:
            if self._forward(row):
                self.offer(self._frame(row))
        elif self.held >= self._budget:
            self._overflow()
        else:
            replay.waiting.append(row)

    def start(self, latest: Row, from_tick: int | None, snapshot: bytes | None = None) -> None:
        """(Re)subscribe to `latest.key`, replacing whatever replay of it was under way.
        Without `from_tick`: its snapshot (`latest`, or the frame `snapshot` of it) now, then
        the live ticks after it. With it: the ticks from_tick … latest from the store as the
        socket takes them, as updates, then the live ones; no snapshot."""
        channel = latest.key
        self._replays.pop(channel, None)
        self._awaiting.discard(channel)
        if from_tick is None:
            self._whole.discard(channel)
            self._sent[channel] = latest.tick
            self.offer(latest.snapshot if snapshot is None else snapshot)
        elif not self.closed:
            self._whole.add(channel)
            self._sent[channel] = from_tick - 1
            self._replays[channel] = _Replay(from_tick)
            self._wake()

    def await_snapshot(self, key: str) -> None:
        """(Re)subscribe to a channel that has no row yet: its first row comes as the
        snapshot, then the live ticks after it."""
        self._replays.pop(key, None)
        self._sent.pop(key, None)
        self._awaiting.add(key)

    def stop(self, channel: str) -> None:
        self._awaiting.discard(channel)
        self._replays.pop(channel, None)
        self._sent.pop(channel, None)
        self._whole.discard(channel)

    def fail(self, code: int, why: str) -> None:
        """Stop writing now; the connection handler then closes the connection with `code`."""
        if self.close_code is None:
            self.close_code = code
            self.close_why = why
            self.forget()
            self.failed.set()

    def _overflow(self) -> None:
        self.fail(SLOW_CONSUMER, f"{self._budget} messages held")

    def forget(self) -> None:
        """Drop everything held and stop the work done for this subscriber (it has gone)."""
        self._queue.clear()
        self._replays.clear()
        self._awaiting.clear()
        if self._writer is not None:
            self._writer.cancel()

    def close(self, code: int, reason: str, timeout: float) -> None:
        """The close frame after whatever the socket still holds, then the connection is shut
        once that has drained; a peer that takes nothing for `timeout` seconds is cut off."""
        transport = self._transport
        if transport.is_closing():
            return
        transport.write(close_frame(code, reason))
        transport.close()
        self._cut_off_if_stuck(transport.get_write_buffer_size(), timeout)

    def _cut_off_if_stuck(self, unsent: int, timeout: float) -> None:
        def check() -> None:
            left = self._transport.get_write_buffer_size()
            if left and left < unsent:
                self._cut_off_if_stuck(left, timeout)  # still reading: give it more time
            elif left:
                self._transport.abort()

        self._loop.call_later(timeout, check)

    def _forward(self, row: Row) -> bool:
        """Whether `row` moves its channel forward; if so it is the channel's last tick now."""
        if row.tick <= self._sent.get(row.key, -1):
            return False
        self._sent[row.key] = row.tick
        return True

    def _frame(self, row: Row) -> bytes:
        """The update frame of a row about to go out (the whole row if it is owed whole)."""
        if row.key in self._whole:
            self._whole.discard(row.key)
            return row.whole
        return row.update

    def _send(self, frame: bytes) -> None:
        self._transport.write(frame)
        self.last_sent = self._loop.time()

    def _wake(self) -> None:
        if self._writer is None and not self.closed:
            self._writer = self._loop.create_task(self._write())

    async def _write(self) -> None:
        """Feed queued frames to the socket as fast as it takes them, then the replays' rows;
        read the next chunk of a replay only once the socket has taken the last one."""
        try:
            while not self.closed:
                if not self._writable.is_set():
                    await self._writable.wait()
                elif self._queue:
                    self._send(self._queue.popleft())
                elif self._replays:
                    channel, replay = next(iter(self._replays.items()))
                    if replay.rows:
                        row = replay.rows.popleft()
                        if self._forward(row):
                            self._send(self._frame(row))
                    elif replay.read_all:
                        self._go_live(channel, replay)
                    else:
                        await self._read_chunk(channel, replay)
                else:
                    return
        finally:
            self._writer = None

    async def _read_chunk(self, channel: str, replay: _Replay) -> None:
        room = self._budget - self.held
        if room <= 0:  # a budget's worth of live ticks came while the replay was read
            self._overflow()
            return
        replay.reading = min(REPLAY_CHUNK, room)
        last = replay.next_tick + replay.reading - 1
        try:
            rows = await self._read_replay(channel, replay.next_tick, last)
        finally:
            replay.reading = 0
        if self._replays.get(channel) is not replay:
            return  # resubscribed or unsubscribed meanwhile
        replay.rows.extend(rows)
        replay.next_tick = last + 1
        replay.read_all = not rows or rows[-1].tick < last

    def _go_live(self, channel: str, replay: _Replay) -> None:
        """The store has nothing newer: the live rows that came meanwhile, then live."""
        del self._replays[channel]
        # Already counted against the budget while they waited.
        self._queue.extend(self._frame(row) for row in replay.waiting if self._forward(row))


class Hub:
    def __init__(self) -> None:
        self._subscribers: dict[str, dict[Subscriber, None]] = {}
        self.connections: dict[Subscriber, None] = {}
        """Every open connection, subscribed or not (heartbeats go to all of them)."""
        self.latest: dict[str, Row] = {}
        """The newest row of every channel seen since start (REST answers from it)."""

    def remember(self, row: Row) -> Row:
        """Keep `row` as its channel's latest unless a newer one is already known."""
        current = self.latest.get(row.key)
        if current is None or row.tick > current.tick:
            self.latest[row.key] = row
            return row
        return current

    def publish(self, row: Row) -> None:
        self.remember(row)
        self.deliver(row)

    def listened(self, key: str) -> bool:
        """Whether any subscriber is on the channel `key`."""
        return key in self._subscribers

    def deliver(self, row: Row) -> None:
        """`row` to its channel's subscribers (not kept as the latest: a private row)."""
        subscribers = self._subscribers.get(row.key)
        if subscribers:
            # A copy: a failing subscriber leaves the set while we iterate.
            for subscriber in list(subscribers):
                subscriber.deliver(row)

    def join(self, subscriber: Subscriber, channel: str) -> None:
        subscriber.channels.add(channel)
        self._subscribers.setdefault(channel, {})[subscriber] = None

    def leave(self, subscriber: Subscriber, channel: str) -> None:
        subscriber.channels.discard(channel)
        subscriber.stop(channel)
        subscribers = self._subscribers.get(channel)
        if subscribers is not None:
            subscribers.pop(subscriber, None)
            if not subscribers:
                del self._subscribers[channel]

    def attach(self, subscriber: Subscriber) -> None:
        self.connections[subscriber] = None

    def detach(self, subscriber: Subscriber) -> None:
        for channel in list(subscriber.channels):
            self.leave(subscriber, channel)
        self.connections.pop(subscriber, None)
        subscriber.forget()
