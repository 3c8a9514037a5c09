"""What the market's app (api/app.py) and a feed edge's (api/edge_app.py) share: the files shipped
in the package that `/static/` serves (the dashboard's, the console's, the API docs' Swagger
UI), CORS for the public market data, the answer to OPTIONS, and the feed's options."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from litestar import Request, Response, get
from litestar.config.cors import CORSConfig
from litestar.enums import HttpMethod
from litestar.params import FromPath
from litestar.routes import HTTPRoute
from litestar.status_codes import HTTP_204_NO_CONTENT

from burstmarket.errors import NotFound
from burstmarket.feed.service import FeedOptions
from burstmarket.settings import Settings

STATIC = Path(__file__).resolve().parent.parent / "static"
"""The dashboard's and the console's pages, scripts and styles, and the API docs' Swagger UI
(`docs-ui/`): shipped in the package, no CDN."""


STATIC_FILES = {
    path.relative_to(STATIC).as_posix(): path for path in STATIC.rglob("*") if path.is_file()
}
"""The files `/static/` serves, by name: a request names one of them or gets 404, and what a
client typed (a NUL byte, 5,000 characters) never reaches the file system."""


@get("/static/{name:path}", include_in_schema=False)
async def static_file(name: FromPath[str]) -> Response[bytes]:
    """The dashboard's and the console's scripts, styles and charts, the docs UI's (shipped in the
    package)."""
    path = STATIC_FILES.get(name.lstrip("/"))
    if path is None:
        raise NotFound("no such static file", path=name)
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return Response(path.read_bytes(), media_type=media_type)


FAVICON = (STATIC / "favicon.svg").read_bytes()


@get("/favicon.ico", include_in_schema=False)
async def favicon() -> Response[bytes]:
    """The pages' icon (index.html links it under /static/), here too for what asks a site for
    /favicon.ico by itself: a browser on a page that names none (the API docs), a bookmark."""
    return Response(FAVICON, media_type="image/svg+xml")


async def answer_options(request: Request[Any, Any, Any]) -> Response[None] | None:
    """The app's `before_request`: OPTIONS answers with every method of the path, as a 405's
    `Allow` does. litestar 2 makes a path's OPTIONS handler when the path's first handler is
    registered and keeps it as more join the path (litestar issue 4169), so it listed only the
    first one's methods (`/api/base-load`: `OPTIONS, POST`, no `GET`). Any other request goes
    on to its handler."""
    if request.method != HttpMethod.OPTIONS:
        return None
    template = request.scope["path_template"]
    methods = next(
        route.methods
        for route in request.app.routes
        if isinstance(route, HTTPRoute) and route.path_format == template
    )
    allow = ", ".join(sorted(methods))
    return Response(None, status_code=HTTP_204_NO_CONTENT, headers={"Allow": allow})


def cors(settings: Settings) -> CORSConfig | None:
    """Pages of other origins may read the public market data: GET, with If-None-Match to
    revalidate and the ETag to read. Nothing else passes a preflight, an Authorization header
    included, so no page can call a tenant or operator endpoint."""
    if not settings.cors_origins:
        return None
    return CORSConfig(
        allow_origins=list(settings.cors_origins),
        allow_methods=["GET"],
        allow_headers=["If-None-Match"],
        expose_headers=["ETag"],
        max_age=600,
    )


def feed_options(settings: Settings) -> FeedOptions:
    return FeedOptions(backlog=settings.feed_backlog, ping_seconds=settings.feed_ping_seconds)
