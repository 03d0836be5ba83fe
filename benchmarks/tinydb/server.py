"""The tiny database suite's subject: a threaded standard-library server making a known number
of round trips to PostgreSQL per call.

GET /health → 200 without touching the database; GET /q/N → N statements, each its own round
trip (psycopg in autocommit, one `SELECT` per execute, never prepared or pipelined), then 200.
The database is TINYDB_DSN (a libpq connection string); each server thread keeps one connection,
or with TINYDB_CONNECT=request a call opens its own and closes it (connection churn), or with
TINYDB_CONNECT=pool the calls share a pool (a connection is opened only when none is free).
TINYDB_TX=1 wraps a call's statements in BEGIN … COMMIT (two statements more per call).
"""

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg

DSN = os.environ["TINYDB_DSN"]
CONNECT = os.environ.get("TINYDB_CONNECT", "thread")
TX = os.environ.get("TINYDB_TX") == "1"
local = threading.local()
pool: "queue.SimpleQueue[psycopg.Connection]" = queue.SimpleQueue()


def fresh() -> psycopg.Connection:
    return psycopg.connect(DSN, autocommit=True, prepare_threshold=None)


@contextlib.contextmanager
def borrowed() -> Iterator[psycopg.Connection]:
    """A connection for one call, by TINYDB_CONNECT."""
    if CONNECT == "request":
        with fresh() as conn:
            yield conn
    elif CONNECT == "pool":
        try:
            conn = pool.get_nowait()
        except queue.Empty:
            conn = fresh()
        try:
            yield conn
        finally:
            pool.put(conn)
    else:
        yield connection()


def connection() -> psycopg.Connection:
    conn = getattr(local, "conn", None)
    if conn is None or conn.closed:
        # prepare_threshold=None: a prepared statement would be one more message, not one more
        # round trip, but keep every execute exactly alike.
        conn = local.conn = psycopg.connect(DSN, autocommit=True, prepare_threshold=None)
    return conn


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the load generator expects
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        if self.path == "/health":
            body = b"ok"
        elif self.path.startswith("/q/"):
            total = 0
            with borrowed() as conn, conn.transaction() if TX else contextlib.nullcontext():
                for i in range(int(self.path[3:])):
                    row = conn.execute("SELECT %s::int", (i,)).fetchone()
                    total += row[0] if row else 0
            body = str(total).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    print("listening", flush=True)
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
