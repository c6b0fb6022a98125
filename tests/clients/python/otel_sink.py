"""otelsink (PyPI `oteltest`) as the OTLP/HTTP receiver of tests/it/otlp.rs.

Runs oteltest's own `HttpSink` (the server behind `otelsink --http`, which decodes each request
with the official protobuf runtime into `ExportTraceServiceRequest`) on an ephemeral port
instead of its fixed 4318, so tests can run in parallel. Prints `{"port": N}` once listening,
then one JSON line per trace request received: `{"trace": <the request as protobuf's JSON
mapping>, "headers": {...}}`. Runs until killed.
"""

import json
import logging
import sys
import threading

from google.protobuf.json_format import MessageToDict
from oteltest.sink import HttpSink
from oteltest.sink.handler import RequestHandler

LOCK = threading.Lock()


class Lines(RequestHandler):
    def handle_logs(self, request, headers):  # noqa: ARG002
        pass

    def handle_metrics(self, request, headers):  # noqa: ARG002
        pass

    def handle_trace(self, request, headers):
        line = json.dumps({"trace": MessageToDict(request), "headers": dict(headers)})
        with LOCK:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def main():
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # No access-log line per request on stderr (the test's output).
    import http.server

    http.server.BaseHTTPRequestHandler.log_message = lambda *args: None
    listening = threading.Event()
    sink = HttpSink(Lines(), logging.getLogger("otelsink"), port=0)
    # HttpSink binds inside its thread; wrap its server loop to learn the bound port first.
    serve = sink.run_server

    def run_server():
        import http.server

        original = http.server.HTTPServer.serve_forever

        def serve_forever(server, *args, **kwargs):
            sink.bound_port = server.server_address[1]
            listening.set()
            return original(server, *args, **kwargs)

        http.server.HTTPServer.serve_forever = serve_forever
        serve()

    sink.run_server = run_server
    sink.svr_thread = threading.Thread(target=run_server, daemon=False)
    sink.start()
    if not listening.wait(30):
        sys.exit("otelsink did not start listening")
    print(json.dumps({"port": sink.bound_port}), flush=True)
    sink.svr_thread.join()


if __name__ == "__main__":
    main()
