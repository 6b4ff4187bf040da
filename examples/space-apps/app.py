"""Notes: a small web app for SenClaw's Space Apps.

It serves on 127.0.0.1:$PORT and keeps its notes in notes.db, a SQLite
file next to this code: the reason an app's own directory must be
writable in its sandbox (SQLite also writes a journal beside the file).

    GET  /          the notes, with a form to add one
    GET  /health    200 once the database answers (the engine's probe)
    GET  /notes     the notes as JSON
    POST /notes     add one (form field or JSON "text")
"""

import html
import json
import os
import signal
import sqlite3
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

HERE = os.path.dirname(os.path.abspath(__file__))
DB = os.path.join(HERE, "notes.db")


def db():
    conn = sqlite3.connect(DB, timeout=5)
    conn.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    return conn


class Handler(BaseHTTPRequestHandler):
    def reply(self, code, body, kind="application/json"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind + "; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            with db() as conn:
                n = conn.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
            self.reply(200, json.dumps({"ok": True, "notes": n}))
        elif self.path == "/notes":
            with db() as conn:
                rows = conn.execute("SELECT id, text FROM notes ORDER BY id").fetchall()
            self.reply(200, json.dumps([{"id": i, "text": t} for i, t in rows]))
        elif self.path == "/":
            with db() as conn:
                rows = conn.execute("SELECT text FROM notes ORDER BY id").fetchall()
            items = "".join("<li>%s</li>" % html.escape(t) for (t,) in rows)
            page = ("<!doctype html><title>Notes</title><h1>Notes</h1><ul>%s</ul>"
                    "<form method=post action=/notes><input name=text autofocus>"
                    "<button>Add</button></form>") % items
            self.reply(200, page, "text/html")
        else:
            self.reply(404, json.dumps({"error": "not found"}))

    def do_POST(self):
        if self.path != "/notes":
            self.reply(404, json.dumps({"error": "not found"}))
            return
        length = min(int(self.headers.get("Content-Length") or 0), 64 * 1024)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        if self.headers.get("Content-Type", "").startswith("application/json"):
            text = json.loads(raw or "{}").get("text", "")
        else:
            text = parse_qs(raw).get("text", [""])[0]
        text = text.strip()[:1000]
        if not text:
            self.reply(400, json.dumps({"error": "text is empty"}))
            return
        with db() as conn:
            conn.execute("INSERT INTO notes (text) VALUES (?)", (text,))
        if self.headers.get("Content-Type", "").startswith("application/json"):
            self.reply(201, json.dumps({"ok": True}))
        else:
            self.send_response(303)
            self.send_header("Location", "/")
            self.end_headers()

    def log_message(self, fmt, *args):
        if self.path != "/health":  # the engine's probe comes every 10 s
            sys.stderr.write("%s %s\n" % (self.command, self.path))


def main():
    port = int(os.environ.get("PORT", "8000"))
    db().close()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    # SIGTERM (the engine's stop) ends it cleanly, with exit code 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("notes: serving on http://127.0.0.1:%d/ with %s" % (port, DB), flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
