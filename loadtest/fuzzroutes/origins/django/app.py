"""A Django origin for the fuzz-routes scenario (loadtest/fuzzroutes), its
settings and URLs in one file, served by Django's own development server.

Django's routing: case-sensitive, PATH_INFO percent-decoded once by the
WSGI server, no dot-segment resolution, APPEND_SLASH (CommonMiddleware
redirects a path that matches only with a slash), views allow any method
unless decorated. The middleware is startproject's minus those that need
a database. Each run of a protected view is one JSON line appended to
$ORIGIN_LOG; it listens on $ORIGIN_ADDR (host:port) and prints "ready"
once it does.
"""
import json
import os
import sys
import threading

from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="fuzz-routes-origin",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    LOGGING={"version": 1, "disable_existing_loggers": False,
             "loggers": {"django.server": {"level": "ERROR"}}},
)

from django.http import HttpResponse  # noqa: E402
from django.urls import path, re_path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402
from django.views.decorators.http import require_POST, require_safe  # noqa: E402

log_file = os.environ["ORIGIN_LOG"]
lock = threading.Lock()


def record(request, name):
    rec = {"handler": name, "method": request.method, "target": request.get_full_path(),
           "pass": "HTTP_WAITINGROOM_PASS" in request.META,
           "case": request.META.get("HTTP_FUZZ_CASE", "")}
    with lock, open(log_file, "a") as f:
        f.write(json.dumps(rec) + "\n")
    return HttpResponse("protected", content_type="text/plain")


def ready(request):
    return HttpResponse("ready", content_type="text/plain")


@require_safe
def checkout(request):
    return record(request, "checkout/")


@require_safe
def checkout_deep(request, rest):
    return record(request, "checkout/<path:rest>")


@csrf_exempt  # an API: its clients send no CSRF token
@require_POST
def orders(request):
    return record(request, "api/orders")


@csrf_exempt
def open_(request):
    return HttpResponse("open", content_type="text/plain")


urlpatterns = [
    path("__ready", ready),
    path("checkout/", checkout),
    path("checkout/<path:rest>", checkout_deep),
    path("api/orders", orders),
    re_path(r"^(?!checkout$).*", open_),  # /checkout is left to APPEND_SLASH
]

if __name__ == "__main__":
    from django.core.servers.basehttp import run
    from django.core.wsgi import get_wsgi_application

    host, _, port = os.environ["ORIGIN_ADDR"].rpartition(":")
    app = get_wsgi_application()
    print("ready", flush=True)
    sys.stdout.flush()
    run(host, int(port), app, threading=True)
