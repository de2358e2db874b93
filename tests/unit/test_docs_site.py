"""The documentation site (mkdocs.yml, docs/): built strictly, its generated references complete,
README's links absolute, and the built site walked in a real headless Chromium.

One strict build per run (the module's fixture, into a temporary folder) serves every test here:
the build fails on a broken link, a missing reference, a page outside the navigation or a
docstring mkdocstrings cannot read.  The browser test serves that build on a local port and
drives Debian's ``chromium`` through Playwright (``executable_path``: no browser is downloaded);
under ``CI=true`` a missing browser fails the test instead of skipping it.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE_URL = re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE).group(1)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built as `make docs` builds it (strict), into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    print(f"docs site built in {time.monotonic() - started:.1f} s")
    return out


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _root_objects(page: str) -> dict[str, str]:
    """The API page's top-level objects (their headings are h3): dotted path -> the section's text."""
    heads = list(re.finditer(r'<h3 id="(?P<id>tensorflow_ignite[\w.]*)"', page))
    ends = [m.start() for m in heads[1:]] + [len(page)]
    return {m.group("id"): _text(page[m.start():end]) for m, end in zip(heads, ends)}


def _public() -> list[tuple[str, Any]]:
    import tensorflow_ignite
    import tensorflow_ignite.ignite3

    return ([(n, getattr(tensorflow_ignite, n)) for n in tensorflow_ignite.__all__]
            + [(n, getattr(tensorflow_ignite.ignite3, n)) for n in tensorflow_ignite.ignite3.__all__])


def test_api_reference_lists_every_public_name_with_its_parameters(site: Path) -> None:
    objects = _root_objects((site / "reference" / "api.html").read_text())
    by_name: dict[str, list[str]] = {}
    for path in objects:
        by_name.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    missing, undocumented = [], []
    for name, obj in _public():
        paths = by_name.get(name)
        if not paths:
            missing.append(name)
            continue
        section = " ".join(objects[p] for p in paths)
        if not callable(obj) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
            continue
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue
        for param in params.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name == "self":
                continue
            if not re.search(rf"\b{re.escape(param.name)}\b", section):
                undocumented.append(f"{name}({param.name})")
    assert not missing, f"public names without an API reference entry: {missing}"
    assert not undocumented, f"parameters the API reference does not show: {undocumented}"
    assert len(objects) >= 60


def test_cli_reference_lists_every_command_and_option(site: Path) -> None:
    from tensorflow_ignite.cli.main import build_parser

    sys.path.insert(0, str(ROOT / "scripts" / "docs"))
    try:
        from cli_reference import commands
    finally:
        sys.path.remove(str(ROOT / "scripts" / "docs"))
    page = _text((site / "reference" / "cli.html").read_text())
    listed = 0
    for path, parser, _ in commands(build_parser()):
        assert " ".join(("ignite-tf",) + path) in page
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in page, f"ignite-tf {' '.join(path)} {flag} is missing from the CLI reference"
                listed += 1
    assert listed > 100  # every command's options, not only the root's


def test_benchmark_charts_are_drawn(site: Path) -> None:
    page = (site / "benchmarks.html").read_text()
    charts = re.findall(r'<img[^>]+src="(benchmarks/\w+\.svg)"', page)
    assert {"benchmarks/java.svg", "benchmarks/pyignite.svg", "benchmarks/s3.svg", "benchmarks/ceiling.svg"} <= set(charts)
    for chart in charts:
        svg = (site / chart).read_text()
        assert svg.lstrip().startswith("<?xml") and svg.count("<path") > 5, chart


def test_readme_is_short_and_links_absolute() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links and all(link.startswith("https://") for link in links), [l for l in links if not l.startswith("https://")]
    for link in links:
        if link.startswith(SITE_URL):
            page = urldefrag(link[len(SITE_URL):])[0] or "index.html"
            assert (ROOT / "docs" / page).with_suffix(".md").is_file(), f"README links to {link}: no such page in docs/"


# --- the site in a real browser -------------------------------------------------------------------------


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        # `make setup` installs it (scripts/install-system-deps.sh): a missing browser is a set-up failure, never a skip.
        pytest.fail("the browser test cannot run: Debian's chromium is not installed (run `make setup`)")
    return path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free loopback port; ready when it answers."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, name="docs-http", daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "index.html", timeout=5) as answer:
                assert answer.status == 200
                break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


def test_site_in_a_headless_browser(served: str) -> None:
    """Every page of the navigation opens without a console error, a failed request or a broken
    image; the API page has no empty section; the search finds a page."""
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            current = {"url": ""}
            page.on("console", lambda m: problems.append(f"{current['url']}: console {m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"{current['url']}: page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"{current['url']}: request failed: {r.url}"))
            page.on("response", lambda r: problems.append(f"{current['url']}: HTTP {r.status}: {r.url}")
                    if r.status >= 400 else None)

            page.goto(served + "index.html", wait_until="load")
            nav = page.eval_on_selector_all("nav.md-nav--primary a.md-nav__link[href]", "as => as.map(a => a.href)")
            pages = sorted({urldefrag(u)[0] for u in nav if urlparse(u).netloc == urlparse(served).netloc})
            assert len(pages) >= 20, pages
            for url in pages:
                current["url"] = url
                answer = page.goto(url, wait_until="load")
                assert answer is not None and answer.ok, url
                broken = page.eval_on_selector_all(
                    "article img", "imgs => imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
                problems += [f"{url}: image not shown: {src}" for src in broken]
                if not page.locator("article h1").count():
                    problems.append(f"{url}: no title")
                if url.endswith("reference/api.html"):
                    empty = page.eval_on_selector_all(
                        "article .doc-object", "os => os.filter(o => !o.querySelector('.doc-contents') || "
                        "!o.querySelector('.doc-contents').innerText.trim()).map(o => o.querySelector('[id]')?.id)")
                    problems += [f"{url}: empty API entry {name}" for name in empty]
                    sections = page.eval_on_selector_all(
                        "article h2", "hs => hs.map(h => { let n = 0; for (let e = h.nextElementSibling; "
                        "e && e.tagName !== 'H2'; e = e.nextElementSibling) n += e.querySelectorAll('.doc-object').length; "
                        "return [h.id, n]; })")
                    assert len(sections) == 3, sections
                    problems += [f"{url}: API section {sid} is empty" for sid, n in sections if n == 0]

            current["url"] = "search"
            page.goto(served + "index.html", wait_until="load")
            page.keyboard.press("s")  # Material's search shortcut
            page.locator("input.md-search__input").fill("IgniteDataset")
            results = page.locator(".md-search-result__item")
            results.first.wait_for(timeout=20_000)
            assert results.count() > 0
            target = results.first.locator("a").first.get_attribute("href")
            assert target, "a search result without a link"
            answer = page.goto(urljoin(served + "index.html", target), wait_until="load")
            assert answer is not None and answer.ok, target
        finally:
            browser.close()
    assert not problems, "\n".join(problems)
