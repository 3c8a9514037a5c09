"""Fan-out: channels, their latest row, and every subscriber's bounded outbound queue.

`publish` runs on the event loop right after a tick commits. It never awaits: each subscriber has
its own queue drained by its own writer task, so a subscriber whose socket is full delays nobody.
A queue that reaches `backlog` live messages marks the subscriber slow; its writer is cancelled
and the connection is closed with 4008 `slow-consumer` (it may come back with `from_tick`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from burstmarket.feed.messages import Row, SendEvent

SLOW_CONSUMER = 4008


class Subscriber:
    """One websocket connection's outbound side."""

    def __init__(self, send: Callable[[SendEvent], Awaitable[None]], backlog: int) -> None:
        self._send = send
        self._backlog = backlog
        self._queue: deque[SendEvent] = deque()
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        # Snapshots and replays are queued on top of the live bound: they are finite (one replay
        # window) and asked for, so they never count as the subscriber falling behind.
        self._granted = 0
        self._writer: asyncio.Task[None] | None = None
        self.channels: set[str] = set()
        self.joining: dict[str, list[Row]] = {}
        """Channels between subscribe and live: their live rows wait here, in tick order."""
        self.close_code: int | None = None
        self.last_sent = self._loop.time()

    @property
    def idle_since(self) -> float | None:
        """When the last message left, if nothing is queued now."""
        return None if self._queue else self.last_sent

    def offer(self, event: SendEvent, *, granted: bool = False) -> None:
        if self.close_code is not None:
            return
        if not granted and len(self._queue) >= self._backlog + self._granted:
            self.fail(SLOW_CONSUMER)
            return
        self._queue.append(event)
        if granted:
            self._granted += 1
        self._wake.set()

    def deliver(self, row: Row) -> None:
        """A live row of a channel this subscriber is on (or joining)."""
        if self.close_code is not None:
            return
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
        """Stop writing now; the connection handler closes the socket with `code`."""
        if self.close_code is None:
            self.close_code = code
            self._queue.clear()
            if self._writer is not None:
                self._writer.cancel()

    async def run(self) -> None:
        """The writer: drains the queue in order until the subscriber fails or disconnects."""
        self._writer = asyncio.current_task()
        while self.close_code is None:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            event = self._queue.popleft()
            if self._granted:
                self._granted -= 1
            await self._send(event)
            self.last_sent = self._loop.time()


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
