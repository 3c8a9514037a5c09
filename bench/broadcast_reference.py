"""The physical limit bench_feed.py compares the feed with: a bare `websockets` server that
does nothing but fan one frame out with `websockets.broadcast`.

    .venv/bin/python bench/broadcast_reference.py PORT PAYLOAD_BYTES

It speaks just enough of the feed's protocol for bench_feed's subscribers: any websocket path;
the first message (a subscribe) is answered with a `snapshot` frame; `GET /tick` (plain HTTP, no
upgrade) makes the next tick's `update` frame of PAYLOAD_BYTES (the size of the feed's own, so
both send the same bytes) and broadcasts it to every subscriber before it answers
`{"tick": N}`, as the market's `POST /api/admin/ticks` answers once its tick is committed and
its frames are on their way. No auction, no store, no JSON per subscriber: what is left is the
event loop writing one frame to each socket.
"""

from __future__ import annotations

import asyncio
import json
import sys
from http import HTTPStatus

from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.http11 import Request, Response

SNAPSHOT = '{"type":"snapshot","channel":"stats:bench","tick":0}'


class Reference:
    def __init__(self, payload_bytes: int) -> None:
        self.payload_bytes = payload_bytes
        self.subscribers: set[ServerConnection] = set()
        self.tick = 0

    async def handler(self, ws: ServerConnection) -> None:
        await ws.recv()  # the subscribe
        await ws.send(SNAPSHOT)
        self.subscribers.add(ws)
        try:
            await ws.wait_closed()
        finally:
            self.subscribers.discard(ws)

    def process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        if request.path != "/tick":
            return None  # a websocket upgrade
        self.tick += 1
        head = f'{{"type":"update","channel":"stats:bench","tick":{self.tick},"data":"'
        frame = head + "x" * max(0, self.payload_bytes - len(head) - 2) + '"}'
        broadcast(self.subscribers, frame)
        return ws.respond(HTTPStatus.OK, json.dumps({"tick": self.tick}))


async def main(port: int, payload_bytes: int) -> None:
    reference = Reference(payload_bytes)
    async with serve(
        reference.handler,
        "127.0.0.1",
        port,
        process_request=reference.process_request,
        ping_interval=None,  # bench_feed's subscribers are kept alive without pings
        max_queue=None,
    ) as server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
