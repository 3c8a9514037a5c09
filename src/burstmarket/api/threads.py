"""Handlers run their blocking work (DuckDB, the market lock) in a worker thread."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread

P = ParamSpec("P")
R = TypeVar("R")


def threaded(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """An async handler with `fn`'s signature that runs `fn` in a worker thread, so the event
    loop never blocks (litestar's own sync_to_thread wrapping is not used: it double-wrapped
    handlers sharing a path)."""

    @functools.wraps(fn)
    async def handler(*args: P.args, **kwargs: P.kwargs) -> R:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    return handler
