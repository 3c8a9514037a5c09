"""Fan-out: channels, their latest row, and every subscriber's connection.

`publish` runs on the event loop right after a tick commits and never awaits: it writes the
tick's frame (built once) to each subscriber's transport in one loop. A subscriber whose
transport is past its high-water mark of unsent bytes gets its frames queued instead, and one
small task per subscriber feeds them in as the socket empties.

Every frame a subscriber is owed (live updates, snapshots, replayed ticks, answers) counts
against one budget of `budget` frames held for it; a subscriber that would go past it is
closed with 4008 `slow-consumer` (it may come back with `from_tick`). A replay is never loaded
whole: it is read from the store `REPLAY_CHUNK` ticks at a time, and the next chunk only once
the socket has taken the last one, so a client that does not read costs one chunk, not the
replay window. A new subscribe to a channel replaces that channel's replay, and everything a
subscriber holds is dropped when it leaves. So a slow or hostile subscriber delays nobody and
holds a bounded amount of memory.
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

ReadReplay = Callable[[str, int, int], Awaitable[list[Row]]]
"""(channel, from_tick, to_tick) -> the channel's stored rows for those ticks, in tick order."""


@dataclass(slots=True)
class _Replay:
    """A channel between subscribe-with-from_tick and live."""

    next_tick: int
    """The next tick to read from the store."""
    last_sent: int = -1
    waiting: list[Row] = field(default_factory=list)
    """Live rows that arrived meanwhile, in tick order."""


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
        self._loop = asyncio.get_running_loop()
        self._writer: asyncio.Task[None] | None = None
        self.failed = asyncio.Event()
        self.channels: set[str] = set()
        self.close_code: int | None = None
        self.last_sent = self._loop.time()

    @property
    def closed(self) -> bool:
        return self.close_code is not None or self._transport.is_closing()

    @property
    def idle_since(self) -> float | None:
        """When the last message left, if nothing is queued now."""
        return None if self._queue else self.last_sent

    @property
    def held(self) -> int:
        """Frames held for this subscriber: queued, and live ones waiting behind a replay."""
        return len(self._queue) + sum(len(replay.waiting) for replay in self._replays.values())

    def offer(self, frame: bytes) -> None:
        if self.closed:
            return
        if not self._queue and self._writable.is_set():
            self._transport.write(frame)
            self.last_sent = self._loop.time()
            return
        if self.held >= self._budget:
            self.fail(SLOW_CONSUMER)
            return
        self._queue.append(frame)
        self._wake()

    def deliver(self, row: Row) -> None:
        """A live row of a channel this subscriber is on."""
        replay = self._replays.get(row.channel)
        if replay is None:
            self.offer(row.update)
        elif self.held >= self._budget:
            self.fail(SLOW_CONSUMER)
        else:
            replay.waiting.append(row)

    def start(self, snapshot: Row, from_tick: int | None) -> None:
        """(Re)subscribe to `snapshot.channel`: its snapshot now; with `from_tick`, the ticks
        from_tick … latest from the store as the socket takes them, then the live ones. Replaces
        whatever replay of the channel was under way."""
        self._replays.pop(snapshot.channel, None)
        self.offer(snapshot.snapshot)
        if from_tick is not None and not self.closed:
            self._replays[snapshot.channel] = _Replay(from_tick)
            self._wake()

    def stop(self, channel: str) -> None:
        self._replays.pop(channel, None)

    def fail(self, code: int) -> None:
        """Stop writing now; the connection handler then closes the connection with `code`."""
        if self.close_code is None:
            self.close_code = code
            self.forget()
            self.failed.set()

    def forget(self) -> None:
        """Drop everything held and stop the work done for this subscriber (it has gone)."""
        self._queue.clear()
        self._replays.clear()
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

    def _wake(self) -> None:
        if self._writer is None and not self.closed:
            self._writer = self._loop.create_task(self._write())

    async def _write(self) -> None:
        """Feed queued frames to the socket as fast as it takes them; once it has taken them
        all, read the next chunk of a replay."""
        try:
            while not self.closed:
                if not self._writable.is_set():
                    await self._writable.wait()
                elif self._queue:
                    self._transport.write(self._queue.popleft())
                    self.last_sent = self._loop.time()
                elif self._replays:
                    await self._replay_chunk()
                else:
                    return
        finally:
            self._writer = None

    async def _replay_chunk(self) -> None:
        channel, replay = next(iter(self._replays.items()))
        last = replay.next_tick + REPLAY_CHUNK - 1
        rows = await self._read_replay(channel, replay.next_tick, last)
        if self._replays.get(channel) is not replay:
            return  # resubscribed or unsubscribed meanwhile
        for row in rows:
            self._send_replayed(replay, row)
        if rows and rows[-1].tick >= last:
            replay.next_tick = last + 1
            return
        # the store has nothing newer: the live rows that came meanwhile, then live
        del self._replays[channel]
        for row in replay.waiting:
            self._send_replayed(replay, row)

    def _send_replayed(self, replay: _Replay, row: Row) -> None:
        if row.tick > replay.last_sent:
            replay.last_sent = row.tick
            self.offer(row.update)


class Hub:
    def __init__(self) -> None:
        self._subscribers: dict[str, dict[Subscriber, None]] = {}
        self.connections: dict[Subscriber, None] = {}
        """Every open connection, subscribed or not (heartbeats go to all of them)."""
        self.latest: dict[str, Row] = {}
        """The newest row of every channel seen since start (REST answers from it)."""

    def remember(self, row: Row) -> Row:
        """Keep `row` as its channel's latest unless a newer one is already known."""
        current = self.latest.get(row.channel)
        if current is None or row.tick > current.tick:
            self.latest[row.channel] = row
            return row
        return current

    def publish(self, row: Row) -> None:
        self.remember(row)
        subscribers = self._subscribers.get(row.channel)
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
