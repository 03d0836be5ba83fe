"""The subject service's lifecycle with a real HTTP server process on loopback."""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

import pytest

from perfpages.run.service import Service, ServiceError, ServiceSpec

SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        print("request", self.path, flush=True)
print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def spec(*command: str, **kw: object) -> ServiceSpec:
    return ServiceSpec(name="subject", command=command, **kw)  # type: ignore[arg-type]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_starts_serves_and_stops_leaving_nothing(tmp_path: Path) -> None:
    log = tmp_path / "diagnostics" / "server.log"
    with Service(spec(sys.executable, "-c", SERVER, "{port}"), log) as service:
        with urllib.request.urlopen(service.url + "/health") as resp:
            assert resp.status == 200
        pid = service.process.pid  # type: ignore[union-attr]
        assert service.alive()
    assert gone(pid) and not service.alive()
    assert "listening" in log.read_text() and "request /health" in log.read_text()
    assert service.stop() is not None  # stopping twice is harmless


def test_exit_before_healthy_is_one_line_with_the_log(tmp_path: Path) -> None:
    code = "print('config error: no database'); raise SystemExit(3)"
    with pytest.raises(ServiceError) as exc:
        Service(spec(sys.executable, "-c", code), tmp_path / "s.log").start()
    message = str(exc.value)
    assert "exited with status 3 before it was healthy" in message
    assert "last log line: config error: no database" in message and "\n" not in message


def test_never_healthy_times_out_and_is_stopped(tmp_path: Path) -> None:
    service = Service(spec(sys.executable, "-c", SERVER, "{port}", health_path="/nope",
                           startup_timeout_s=1.0), tmp_path / "s.log")
    with pytest.raises(ServiceError, match=r"not healthy at http://127\.0\.0\.1:\d+/nope"):
        service.start()
    assert service.process is not None and gone(service.process.pid)


def test_missing_program_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="cannot start subject: No such file or directory"):
        Service(spec("/nonexistent/gunicorn"), tmp_path / "s.log").start()


def test_crash_is_visible(tmp_path: Path) -> None:
    with Service(spec(sys.executable, "-c", SERVER, "{port}"), tmp_path / "s.log") as service:
        os.kill(service.process.pid, 9)  # type: ignore[union-attr]
        service.process.wait()  # type: ignore[union-attr]
        assert not service.alive() and not service.healthy()


ELSEWHERE = """
import http.server, sys
print("kvsvc listening on 127.0.0.1:%d" % int(sys.argv[1]), flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.BaseHTTPRequestHandler
                       ).serve_forever()
"""


def test_a_subject_listening_elsewhere_is_told_so(tmp_path: Path) -> None:
    """Bound to another port than the one it was given: the error says where it listens and
    how to fix that, not to raise the startup timeout; its log line is whole."""
    from perfpages.processes import free_port

    other = free_port("127.0.0.1")
    service = Service(spec(sys.executable, "-c", ELSEWHERE, str(other), startup_timeout_s=1.0),
                      tmp_path / "s.log")
    while service.port == other:  # the port it is given is another one
        service.port = free_port("127.0.0.1")
    with pytest.raises(ServiceError) as exc:
        service.start()
    message = str(exc.value)
    assert f"listens on 127.0.0.1:{other}, not on port {service.port} it was given" in message
    assert f"(last log line: kvsvc listening on 127.0.0.1:{other})" in message
    assert "never passes the port: add {port}" in message
    assert "startup timeout" not in message


def test_one_line_errors_are_cut_between_words() -> None:
    from perfpages.archive.reader import failure
    from perfpages.archive.window import Window
    from perfpages.errors import clip

    line = "subject not healthy (last log line: kvsvc listening on 127.0.0.1:5678) — read it"
    assert clip(line, 50) == "subject not healthy (last log line: kvsvc …"
    assert clip(line, 200) == line and clip("x" * 80, 10) == "x" * 80
    for limit in range(10, len(line)):
        cut = clip(line, limit).removesuffix(" …")
        assert line.startswith(cut) and line[len(cut)] == " "  # a whole word before the cut
    error = "/tmp/" + "d" * 150 + "/s.log: " + line
    windows = [Window("calls", "base", 1, {"call": "a"}, "", 0.0, status="failed",
                      error=error)]
    reason = failure(windows) or ""
    assert "127.0.0.1:5678)" in reason and "127.0 " not in reason + " "
