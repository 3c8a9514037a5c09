"""Fan-out: channels, their latest row, and every subscriber's connection.

`publish` runs on the event loop right after a tick commits and never awaits: it writes the
tick's frame (built once) to each subscriber's transport in one loop. A subscriber whose
transport is past its high-water mark of unsent bytes gets its frames queued instead, and a
small drain task feeds them in as the socket empties; a queue that reaches `backlog` live
messages marks the subscriber slow, and the connection is closed with 4008 `slow-consumer` (it
may come back with `from_tick`). So a subscriber whose socket is full delays nobody.
"""

from __future__ import annotations

import asyncio
from collections import deque

from burstmarket.feed.messages import Row
from burstmarket.feed.wire import Wire, close_frame

SLOW_CONSUMER = 4008


class Subscriber:
    """One websocket connection's outbound side."""

    def __init__(self, wire: Wire, backlog: int) -> None:
        self._transport = wire.transport
        self._writable = wire.writable
        self._backlog = backlog
        self._queue: deque[tuple[bytes, bool]] = deque()
        """Frames waiting for the socket, each with whether it is a live message."""
        self._live = 0
        """Live messages in the queue. Snapshots and replays are queued on top of the bound:
        they are finite (one replay window) and asked for, never the subscriber falling behind."""
        self._loop = asyncio.get_running_loop()
        self._drainer: asyncio.Task[None] | None = None
        self.failed = asyncio.Event()
        self.channels: set[str] = set()
        self.joining: dict[str, list[Row]] = {}
        """Channels between subscribe and live: their live rows wait here, in tick order."""
        self.close_code: int | None = None
        self.last_sent = self._loop.time()

    @property
    def idle_since(self) -> float | None:
        """When the last message left, if nothing is queued now."""
        return None if self._queue else self.last_sent

    def offer(self, frame: bytes, *, granted: bool = False) -> None:
        if self.close_code is not None or self._transport.is_closing():
            return
        if not self._queue and self._writable.is_set():
            self._transport.write(frame)
            self.last_sent = self._loop.time()
            return
        if not granted:
            if self._live >= self._backlog:
                self.fail(SLOW_CONSUMER)
                return
            self._live += 1
        self._queue.append((frame, not granted))
        if self._drainer is None:
            self._drainer = self._loop.create_task(self._drain())

    def deliver(self, row: Row) -> None:
        """A live row of a channel this subscriber is on (or joining)."""
        waiting = self.joining.get(row.channel)
        if waiting is None:
            self.offer(row.update)
        elif len(waiting) >= self._backlog:
            self.fail(SLOW_CONSUMER)
        else:
            waiting.append(row)

    def go_live(self, snapshot: Row, replay: list[Row]) -> None:
        """Snapshot, then the replayed ticks, then the live ticks that arrived meanwhile."""
        waiting = self.joining.pop(snapshot.channel, [])
        self.offer(snapshot.snapshot, granted=True)
        last = snapshot.tick
        if replay:
            for row in replay:
                self.offer(row.update, granted=True)
            last = replay[-1].tick
        for row in waiting:
            if row.tick > last:
                self.offer(row.update)
                last = row.tick

    def fail(self, code: int) -> None:
        """Stop writing now; the connection handler then closes the connection with `code`."""
        if self.close_code is None:
            self.close_code = code
            self._queue.clear()
            self._live = 0
            if self._drainer is not None:
                self._drainer.cancel()
            self.failed.set()

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

    async def _drain(self) -> None:
        """Feed queued frames to the transport, in order, as fast as the socket takes them."""
        transport = self._transport
        try:
            while self._queue and not transport.is_closing():
                if not self._writable.is_set():
                    await self._writable.wait()
                    continue
                frame, live = self._queue.popleft()
                self._live -= live
                transport.write(frame)
                self.last_sent = self._loop.time()
        finally:
            self._drainer = None


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
        subscriber.joining[channel] = []
        self._subscribers.setdefault(channel, {})[subscriber] = None

    def leave(self, subscriber: Subscriber, channel: str) -> None:
        subscriber.channels.discard(channel)
        subscriber.joining.pop(channel, None)
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
