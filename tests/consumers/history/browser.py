"""Headless Chromium for the page tests: Debian's chromium (installed by the fixture when missing,
as root), driven by playwright over the DevTools protocol (no browser download, no network)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib

import pytest


@pytest.fixture(scope="session")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, timeout=900,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian's chromium is not installed and cannot be installed here (not root)")
    return path


@pytest.fixture(scope="session")
def browser(chromium):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) drives chromium")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


class Opened:
    """A page opened from a file with what it logged and requested."""

    def __init__(self, browser, url: str, width: int = 1400, height: int = 900) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(url)
        self.page.wait_for_selector("html[data-ready='1']", timeout=30_000)

    def network(self) -> list[str]:
        """Requests that would leave the machine (the page's own file is not one)."""
        return [u for u in self.requests if not u.startswith(("file:", "data:", "blob:", "about:"))]

    def close(self) -> None:
        self.context.close()


def pixels(png: bytes) -> tuple[int, int, list[bytearray], int]:
    """Width, height, rows and bytes per pixel of an 8-bit RGB(A) PNG (decoded here, no imaging library)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, width, height, kind = 8, [], 0, 0, 0
    while pos < len(png):
        length, tag = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        if tag == b"IHDR":
            width, height, depth, kind = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and kind in (2, 6)
        elif tag == b"IDAT":
            chunks.append(data)
        pos += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    bpp = 3 if kind == 2 else 4
    stride = width * bpp
    rows, previous, i = [], bytearray(stride), 0
    for _ in range(height):
        filt, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if filt == 1:
                line[x] = (line[x] + a) & 255
            elif filt == 2:
                line[x] = (line[x] + b) & 255
            elif filt == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, rows, bpp


def share_near(png: bytes, colour: tuple[int, int, int], tolerance: int = 40) -> float:
    """The share of pixels within `tolerance` of `colour` (per channel)."""
    width, _height, rows, bpp = pixels(png)
    total = hits = 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            total += 1
            hits += all(abs(row[x + c] - colour[c]) <= tolerance for c in range(3))
    return hits / max(1, total)


def non_white_share(png: bytes) -> float:
    width, _height, rows, bpp = pixels(png)
    values = [row[x:x + 3] for row in rows for x in range(0, width * bpp, bpp)]
    return sum(1 for p in values if min(p) < 235) / max(1, len(values))
