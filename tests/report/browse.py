#!/usr/bin/env python3
"""tests/report/browse.py: opens a `corral trail report` page in headless Chromium (Debian's
`chromium`) and reports, as one JSON object on stdout, what a person's browser would have done:
console messages and errors, uncaught exceptions, every request the page made, and facts read
from the DOM after load (sections, marks, injected elements, a hostile script's marker), then
what clicking a timeline mark and zooming did; optionally a full-page PNG screenshot.

It speaks the DevTools protocol over --remote-debugging-pipe (fds 3 and 4, NUL-terminated
JSON), so it needs nothing but python3 and chromium: no websocket library, no npm package, no
port. Usage: browse.py PAGE.html [--screenshot OUT.png] [--timeout SECONDS]
Exit: 0 with the JSON written (the caller judges it), 2 Chromium could not be driven."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import select

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

# Read from the page after load; only our own JSON comes back (strings are data).
FACTS_JS = r"""
(() => {
  const q = (s) => document.querySelectorAll(s);
  const onAttrs = [];
  for (const el of q('*')) for (const a of el.attributes) if (/^on/i.test(a.name)) onAttrs.push(el.tagName + ' ' + a.name);
  const hrefs = [];
  for (const el of q('[href], [src], [xlink\\:href], [action], [formaction], [srcset], [data]'))
    hrefs.push(el.tagName);
  const sec = (id) => { const e = document.getElementById(id); return e ? e.innerText.length : -1; };
  return JSON.stringify({
    ready: document.documentElement.getAttribute('data-ready'),
    pwned: typeof window.__corral_pwned === 'undefined' ? null : String(window.__corral_pwned),
    title: document.title,
    scripts: q('script').length,
    styles: q('style').length,
    foreign: q('img, iframe, object, embed, link, a, form, input:not(.kind-toggle), textarea, video, audio, base, meta[http-equiv="refresh"], foreignObject').length,
    foreign_tags: Array.from(q('img, iframe, object, embed, link, a, form, textarea, base, foreignObject')).map(e => e.tagName).slice(0, 10),
    on_attrs: onAttrs.slice(0, 10),
    url_attrs: hrefs.slice(0, 10),
    sections: {summary: sec('summary'), tree: sec('tree'), graph: sec('graph'), timeline: sec('timeline'),
               denials: sec('denials'), network: sec('network')},
    tree_rows: q('#tree tr.ws').length,
    graph_nodes: q('#graph svg g.node').length,
    graph_edges: q('#graph svg g.edge').length,
    marks: q('#tl .m').length,
    lanes: q('.tl-labels .lane-label').length,
    denial_rows: q('#denials tbody tr').length,
    verify: (document.getElementById('verify') || {}).textContent || '',
    text: document.body.innerText,
  });
})()
"""

# Clicks the first visible mark of a kind and zooms in twice: the panel gets its body as text,
# the mark moves, and nothing new appears in the DOM.
INTERACT_JS = r"""
(() => {
  const tl = document.getElementById('tl');
  if (!tl) return JSON.stringify({error: 'no timeline'});
  const marks = Array.from(tl.querySelectorAll('.m')).filter(m => getComputedStyle(m).display !== 'none');
  const pick = marks.find(m => m.classList.contains('k-tool')) || marks[marks.length - 1];
  const before = document.querySelectorAll('*').length;
  pick.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  const head = document.getElementById('detail-head').textContent;
  const body = document.getElementById('detail').textContent;
  const last = marks[marks.length - 1];
  const x0 = +last.getAttribute('x'), w0 = +tl.getAttribute('width');
  document.getElementById('zin').click();
  document.getElementById('zin').click();
  const x1 = +last.getAttribute('x'), w1 = +tl.getAttribute('width');
  const hidden = (() => { const b = document.querySelector('.kind-toggle[data-kind="message"]');
                          if (!b) return null; b.click(); const n = Array.from(tl.querySelectorAll('.k-message'))
                          .filter(m => getComputedStyle(m).display !== 'none').length; b.click(); return n; })();
  document.getElementById('zfit').click();
  return JSON.stringify({head, body, body_is_mark: body === pick.getAttribute('data-b'),
                         x0, x1, w0, w1, messages_shown_when_toggled: hidden,
                         new_elements: document.querySelectorAll('*').length - before,
                         pwned: typeof window.__corral_pwned === 'undefined' ? null : String(window.__corral_pwned)});
})()
"""


class Pipe:
    def __init__(self, wfd, rfd):
        self.w, self.r, self.buf, self.next_id, self.events = wfd, rfd, b"", 0, []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            r, _, _ = select.select([self.r], [], [], left)
            if r:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, deadline=None):
        i = self.send(method, params, session)
        while True:
            m = self.read(deadline)
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, deadline):
        for i, m in enumerate(self.events):
            if m.get("method") == name:
                return self.events.pop(i)
        while True:
            m = self.read(deadline)
            if m.get("method") == name:
                return m
            self.events.append(m)


def main():
    args = sys.argv[1:]
    if not args or not CHROMIUM:
        print("usage: browse.py PAGE.html [--screenshot OUT.png]; needs chromium", file=sys.stderr)
        return 2
    page = os.path.abspath(args[0])
    shot = args[args.index("--screenshot") + 1] if "--screenshot" in args else None
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 60
    url = "file://" + page
    profile = tempfile.mkdtemp(prefix="corral-chromium.")
    import fcntl

    def high(fd):  # out of the way of 3 and 4, so the child's dup2 makes fresh inheritable copies
        n = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return n

    to_chrome_r, to_chrome_w = map(high, os.pipe())
    from_chrome_r, from_chrome_w = map(high, os.pipe())

    def fds():  # the child's fd 3 reads commands, fd 4 writes answers
        os.dup2(to_chrome_r, 3)
        os.dup2(from_chrome_w, 4)

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
             "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage", "--window-size=1400,1000",
             "about:blank"]
    proc = subprocess.Popen([CHROMIUM] + flags, close_fds=False, preexec_fn=fds,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    p = Pipe(to_chrome_w, from_chrome_r)
    deadline = time.monotonic() + timeout
    out = {"url": url, "console": [], "errors": [], "requests": []}
    try:
        tid = p.call("Target.createTarget", {"url": "about:blank"}, deadline=deadline)["targetId"]
        sid = p.call("Target.attachToTarget", {"targetId": tid, "flatten": True}, deadline=deadline)["sessionId"]
        for d in ("Page", "Runtime", "Log", "Network"):
            p.call(d + ".enable", session=sid, deadline=deadline)
        p.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1,
                                                       "mobile": False}, session=sid, deadline=deadline)
        p.events.clear()
        p.call("Page.navigate", {"url": url}, session=sid, deadline=deadline)
        p.wait_event("Page.loadEventFired", deadline)
        # anything deferred (a timer an injected script set) gets its chance
        time.sleep(0.5)
        facts = json.loads(p.call("Runtime.evaluate", {"expression": FACTS_JS, "returnByValue": True},
                                  session=sid, deadline=deadline)["result"]["value"])
        out["facts"] = facts
        inter = p.call("Runtime.evaluate", {"expression": INTERACT_JS, "returnByValue": True}, session=sid,
                       deadline=deadline)
        out["interact"] = json.loads(inter["result"]["value"]) if "value" in inter.get("result", {}) else inter
        time.sleep(0.3)
        if shot:
            m = p.call("Page.getLayoutMetrics", session=sid, deadline=deadline)
            size = m.get("cssContentSize") or m["contentSize"]
            h = min(int(size["height"]) + 1, 16000)
            p.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": h, "deviceScaleFactor": 1,
                                                           "mobile": False}, session=sid, deadline=deadline)
            data = p.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                          session=sid, deadline=deadline)["data"]
            import base64
            with open(shot, "wb") as f:
                f.write(base64.b64decode(data))
            out["screenshot"] = {"path": shot, "height": h}
        # drain what is pending
        try:
            while True:
                p.events.append(p.read(time.monotonic() + 0.3))
        except (TimeoutError, EOFError):
            pass
        for m in p.events:
            meth, prm = m.get("method"), m.get("params", {})
            if meth == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in prm.get("args", []))
                out["console"].append({"type": prm.get("type"), "text": text})
                if prm.get("type") in ("error", "assert"):
                    out["errors"].append("console." + prm.get("type") + ": " + text)
            elif meth == "Runtime.exceptionThrown":
                d = prm.get("exceptionDetails", {})
                out["errors"].append("exception: " + d.get("text", "") + " " +
                                     str(d.get("exception", {}).get("description", "")))
            elif meth == "Log.entryAdded":
                e = prm.get("entry", {})
                out["console"].append({"type": "log." + e.get("level", ""), "text": e.get("text", "")})
                if e.get("level") == "error":
                    out["errors"].append("log: " + e.get("text", ""))
            elif meth == "Network.requestWillBeSent":
                out["requests"].append(prm.get("request", {}).get("url", ""))
        try:
            p.call("Browser.close", deadline=time.monotonic() + 5)
        except Exception:
            pass
    except Exception as e:  # noqa: BLE001 - any failure to drive the browser is reported as such
        proc.kill()
        err = proc.stderr.read().decode(errors="replace")[-2000:]
        print("browse.py: cannot drive chromium: %s\n%s" % (e, err), file=sys.stderr)
        shutil.rmtree(profile, ignore_errors=True)
        return 2
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(profile, ignore_errors=True)
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
