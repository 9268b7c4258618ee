"""Look at a timeline as a person does: open it in headless Chromium and measure what was drawn.

A script inside the page reads the rendered geometry (``getBBox`` of every label, lane name and
span) and writes its findings into the DOM; ``chromium --dump-dom`` returns the DOM after the
script ran. We check that the lanes and spans are there and that no two labels overlap and none
runs off the drawing, at the default size. ``screenshot`` writes a PNG of the same page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile

_PROBE = """
<script>
window.addEventListener('load', () => {
  const out = {svgs: 0, lanes: [], spans: 0, labels: 0, overlaps: [], outside: []};
  for (const svg of document.querySelectorAll('svg')) {
    out.svgs += 1;
    const width = svg.width.baseVal.value;
    out.lanes.push(...[...svg.querySelectorAll('text.lane')].map(t => t.textContent));
    out.spans += svg.querySelectorAll('rect.span').length;
    // a drawing stacked inside another (one figure, several panels) is measured on its own:
    // getBBox answers in the coordinates of the nearest <svg>
    const boxes = [...svg.querySelectorAll('__LABELS__')].filter(t => t.closest('svg') === svg).map(t => {
      const b = t.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height, text: t.textContent.slice(0, 60)};
    });
    out.labels += boxes.length;
    for (const b of boxes) if (b.x < 0 || b.x + b.w > width + 0.5) out.outside.push(b.text);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], c = boxes[j];
      const ix = Math.min(a.x + a.w, c.x + c.w) - Math.max(a.x, c.x);
      const iy = Math.min(a.y + a.h, c.y + c.h) - Math.max(a.y, c.y);
      if (ix > 0.5 && iy > 0.5) out.overlaps.push([a.text, c.text]);
    }
  }
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


class BrowserMissing(RuntimeError):
    pass


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise BrowserMissing("no Chromium found (Debian: apt-get install chromium; dev/install-clients does it)")


def _run(args: list[str], timeout: float = 60) -> str:
    base = [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--hide-scrollbars", "--user-data-dir=" + tempfile.mkdtemp(prefix="broker-emu-chromium-")]
    proc = subprocess.run(base + args, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-500:]}")
    return proc.stdout


def probe(page_html: str, labels: str = "text.label, text.lane") -> dict:
    """Render ``page_html`` and return what the in-page probe measured; ``labels`` selects the
    texts checked for overlaps and for running off their drawing (every ``text`` for charts)."""
    script = _PROBE.replace("__LABELS__", labels)
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
        f.write(page_html.replace("</body>", script + "</body>") if "</body>" in page_html else page_html + script)
        path = f.name
    try:
        dom = _run(["--virtual-time-budget=5000", "--dump-dom", "file://" + path])
    finally:
        os.unlink(path)
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError("the probe did not run in the page (no result in the DOM)")
    import html as _html
    return json.loads(_html.unescape(found.group(1)))


def screenshot(page_html: str, png_path: str, width: int = 1150, height: int = 900) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
        f.write(page_html)
        path = f.name
    try:
        _run([f"--window-size={width},{height}", f"--screenshot={os.path.abspath(png_path)}", "file://" + path])
    finally:
        os.unlink(path)
