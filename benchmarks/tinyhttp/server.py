"""The tiny HTTP suite's subject: a threaded standard-library server (no dependencies).

GET /health → 200; GET /item?id=N → 200 with a small JSON body; GET /spin → 200 after about a
millisecond of Python work (something for a profiler to see); GET /fail → 500.
TINY_DELAY_MS delays every /item (a slower "build"); TINY_ITEM_STATUS answers /item with another
status (a build a test can tell apart); TINY_SPIN=N adds N iterations of spin()'s loop to every
/item (known extra work per call, for instruction counts); TINY_DSN=postgresql://... makes
every /item read one pg_class row there (psycopg, one connection kept for the server's life,
as a pool would: work in PostgreSQL per call, for its instruction counts); TINY_EXIT=1 exits
at start (a broken one).
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

DELAY = float(os.environ.get("TINY_DELAY_MS", "0")) / 1000.0
ITEM_STATUS = int(os.environ.get("TINY_ITEM_STATUS", "200"))
SPIN = int(os.environ.get("TINY_SPIN", "0"))
DSN = os.environ.get("TINY_DSN", "")
_DB: list[Any] = []  # the one connection, opened on the first /item
_LOCK = threading.Lock()


def spin(n: int = 20000) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def read_row(path: str) -> None:
    import psycopg  # only with TINY_DSN: the plain subject needs no driver

    item = int(parse_qs(urlsplit(path).query).get("id", ["1"])[0])
    with _LOCK:
        if not _DB:
            _DB.append(psycopg.connect(DSN, autocommit=True))
        _DB[0].execute("SELECT relname FROM pg_class ORDER BY oid LIMIT 1 OFFSET %s",
                       (item % 50,)).fetchone()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the load generator expects
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm holds the
    # body until the client's delayed ACK, about 40 ms per request.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        if self.path == "/health":
            status, body = 200, b"ok"
        elif self.path.startswith("/item"):
            time.sleep(DELAY)
            if SPIN:
                spin(SPIN)
            if DSN:
                read_row(self.path)
            status, body = ITEM_STATUS, json.dumps({"path": self.path}).encode()
        elif self.path == "/spin":
            status, body = 200, str(spin()).encode()
        else:
            status, body = 500, b"no"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    if os.environ.get("TINY_EXIT") == "1":
        print("TINY_EXIT=1: refusing to start", flush=True)
        sys.exit(3)
    print("listening", flush=True)
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
