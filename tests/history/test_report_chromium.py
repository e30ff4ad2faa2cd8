"""The HTML report in a real headless Chromium: it loads, its script runs without error, the
plots are in the rendered page, a log line holding `<script>` is shown as text, and the page
needs no network (Chromium runs with the network off)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from .conftest import bench

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]


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


def test_report_renders_plots_and_escapes_log_text(steady, env, tmp_path, chromium):
    for slowdown in ("1", "1.3", "1"):
        done = bench("run", "steady.yaml", "--repeat", "3", "-q", cwd=steady, env=dict(env, SLOWDOWN=slowdown))
        assert done.returncode == 0
        assert bench("result", "-i", "last", cwd=steady, env=env).returncode == 0
    page = tmp_path / "report.html"
    made = bench("report", "-i", "0,1,2", "--html", str(page), cwd=steady, env=env)
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script src" not in text  # self-contained
    assert "&lt;script&gt;document.title=1&lt;/script&gt;" in text

    profile = tmp_path / "profile"
    dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-ready="1"' in dom  # the page's script ran to its end
    assert dom.count('<svg class="plot"') >= 6 and dom.count("<circle") >= 12
    assert 'class="point regressed"' in dom  # the slowed run is marked in the history plots
    assert "<title>caramel report</title>" in dom  # the log line's script did not run
    assert "&lt;script&gt;document.title=1&lt;/script&gt;" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--window-size=1200,1400",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert _non_white_share(shot.read_bytes(), top=0.35, bottom=0.65) > 0.02  # the plot area is drawn


def _non_white_share(png: bytes, top: float, bottom: float) -> float:
    """The share of non-white pixels in a band of rows of an 8-bit RGB(A) PNG (decoded here)."""
    import struct
    import zlib

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
    band = rows[int(height * top):int(height * bottom)]
    pixels = [row[x:x + 3] for row in band for x in range(0, stride, bpp * 4)]
    return sum(1 for p in pixels if min(p) < 235) / max(1, len(pixels))
