"""A Flask origin for the fuzz-routes scenario (loadtest/fuzzroutes).

Werkzeug's default routing: case-sensitive, percent-escapes decoded once
by the WSGI server (%2F becomes a slash), no dot-segment resolution, a
rule without a trailing slash does not match one, and "/checkout/" is
answered by a redirect to the rule that has it. GET rules answer HEAD.
Each run of a protected handler is one JSON line appended to $ORIGIN_LOG;
it listens on $ORIGIN_ADDR (host:port) and prints "ready" once it does.
"""
import json
import logging
import os
import threading

from flask import Flask, request

app = Flask(__name__)
log_file = os.environ["ORIGIN_LOG"]
lock = threading.Lock()


def record(name):
    rec = {"handler": name, "method": request.method,
           "target": request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI", ""),
           "pass": "Waitingroom-Pass" in request.headers,
           "case": request.headers.get("Fuzz-Case", "")}
    with lock, open(log_file, "a") as f:
        f.write(json.dumps(rec) + "\n")
    return "protected"


@app.get("/__ready")
def ready():
    return "ready"


@app.get("/checkout")
def checkout():
    return record("checkout")


@app.get("/checkout/<path:rest>")
def checkout_deep(rest):
    return record("checkout/<path:rest>")


@app.post("/api/orders")
def orders():
    return record("orders")


ALL = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


@app.route("/", defaults={"path": ""}, methods=ALL)
@app.route("/<path:path>", methods=ALL)
def open_(path):
    return "open"


if __name__ == "__main__":
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    host, _, port = os.environ["ORIGIN_ADDR"].rpartition(":")
    print("ready", flush=True)
    app.run(host=host, port=int(port))
