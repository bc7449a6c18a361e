"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), with their scripts, style sheet and icon served by the
server itself from files installed with this package (``serve/static/``) instead of a CDN, so that both
pages work on a network without internet access.

The files are the upstream npm distributions, unchanged: swagger-ui-dist 5.35.0 (Apache-2.0) and redoc
2.5.4 (MIT), the major versions FastAPI's own pages load from a CDN; ``serve/static/README.md`` says where
they come from and how to update them. Swagger UI's online validator badge is off (it would call out).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse
from starlette.exceptions import HTTPException

STATIC = Path(__file__).resolve().parent / "static"
ASSETS_PATH = "/docs/assets"
#: the name in the URL -> (file under ``STATIC``, media type): a closed set, so no URL reaches another file
ASSETS = {
    "swagger-ui-bundle.js": ("swagger-ui/swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    "swagger-ui.css": ("swagger-ui/swagger-ui.css", "text/css; charset=utf-8"),
    "redoc.standalone.js": ("redoc/redoc.standalone.js", "text/javascript; charset=utf-8"),
    "favicon.png": ("swagger-ui/favicon-32x32.png", "image/png"),
}
CACHE_CONTROL = "public, max-age=3600"


def add_offline_docs(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Add ``docs_url`` (with its OAuth2 redirect page), ``redoc_url`` and the assets under ``ASSETS_PATH`` to
    ``app``, which is made with ``docs_url=None, redoc_url=None`` (FastAPI's pages would load a CDN)."""
    oauth2_url = docs_url + "/oauth2-redirect"

    def root(request: Request) -> str:
        return request.scope.get("root_path", "").rstrip("/")  # behind a proxy that mounts the app under a prefix

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request):
        prefix = root(request)
        return get_swagger_ui_html(
            openapi_url=prefix + app.openapi_url, title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=prefix + oauth2_url,
            swagger_js_url=f"{prefix}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{prefix}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{prefix}{ASSETS_PATH}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None})

    @app.get(oauth2_url, include_in_schema=False)
    async def swagger_ui_redirect():
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request):
        prefix = root(request)
        return get_redoc_html(openapi_url=prefix + app.openapi_url, title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{prefix}{ASSETS_PATH}/redoc.standalone.js",
                              redoc_favicon_url=f"{prefix}{ASSETS_PATH}/favicon.png", with_google_fonts=False)

    @app.get(ASSETS_PATH + "/{name}", include_in_schema=False)
    async def asset(name: str):
        if name not in ASSETS:
            raise HTTPException(404, "not found")
        file, media_type = ASSETS[name]
        return FileResponse(STATIC / file, media_type=media_type, headers={"cache-control": CACHE_CONTROL})
