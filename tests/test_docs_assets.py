"""/docs and /redoc work without internet access: their pages reference only the server's own URLs, and
those URLs serve the installed files (the upstream swagger-ui-dist and redoc distributions, with their
licences), over the real server on a loopback port."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
import requests
from test_shadow import Served

from fastslow.serve.docs_assets import ASSETS, STATIC

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def served(trained, tmp_path_factory):
    srv = Served(tmp_path_factory.mktemp("docs"), "--model", trained["path"])
    try:
        yield srv.wait_ready()
    finally:
        srv.stop()


def referenced_urls(html: str) -> list[str]:
    """Every URL a page loads: ``src``/``href`` attributes, ReDoc's ``spec-url`` and Swagger UI's ``url:``."""
    return re.findall(r'(?:src|href|spec-url)="([^"]*)"', html) + re.findall(r"\burl: '([^']*)'", html)


@pytest.mark.parametrize("page, assets", [
    ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}),
    ("/redoc", {"redoc.standalone.js", "favicon.png"}),
])
def test_the_docs_pages_load_only_the_servers_own_files(served, page, assets):
    response = requests.get(served.url + page, timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "http://" not in html and "https://" not in html and "//cdn" not in html
    urls = referenced_urls(html)
    assert "/openapi.json" in urls
    assert {url.rsplit("/", 1)[1] for url in urls if url.startswith("/docs/assets/")} == assets
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        got = requests.get(served.url + url, timeout=30)
        assert got.status_code == 200, url
        if url.startswith("/docs/assets/"):
            file, media_type = ASSETS[url.rsplit("/", 1)[1]]
            assert got.headers["content-type"] == media_type
            assert got.content == (STATIC / file).read_bytes()
    if page == "/docs":
        assert '"validatorUrl": null' in html  # Swagger UI's online validator badge would call out
        assert requests.get(served.url + "/docs/oauth2-redirect", timeout=30).status_code == 200


def test_only_the_named_assets_are_served(served):
    for path in ("/docs/assets/nope.js", "/docs/assets/README.md", "/docs/assets/..%2fshadow.py"):
        response = requests.get(served.url + path, timeout=30)
        assert response.status_code == 404 and response.json()["field"] == "path", path


def test_the_assets_and_their_licences_install_with_the_package():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["package-data"]["fastslow.serve"]
    shipped = [p for p in STATIC.rglob("*") if p.is_file()]
    for path in shipped:
        assert any(fnmatch.fnmatch(path.relative_to(STATIC.parent).as_posix(), p) for p in patterns), path
    names = {p.relative_to(STATIC).as_posix() for p in shipped}
    assert {file for file, _ in ASSETS.values()} <= names
    assert {"swagger-ui/LICENSE", "swagger-ui/NOTICE", "redoc/LICENSE"} <= names
    assert "Apache License" in (STATIC / "swagger-ui" / "LICENSE").read_text()
    assert "MIT License" in (STATIC / "redoc" / "LICENSE").read_text()
