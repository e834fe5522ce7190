# syntax=docker/dockerfile:1
#
# The waitingroom image: one static binary (the waiting-room page and the
# operator dashboard are embedded in it) on a distroless base, run as a
# non-root user. Build it with `make image` (podman, else docker: it says
# what is missing when neither works) or `DOCKER_BUILDKIT=1 docker build -t
# waitingroom .`; deploy/compose.yaml builds it once for its two instances.
# The cache mounts below (RUN --mount) need BuildKit: docker's buildx plugin
# from docker 23 on, DOCKER_BUILDKIT=1 before; podman and buildah have it.
#
# Configuration comes from the environment (the README's table): at least
# REDIS_URL, DATABASE_URL, WR_JWT_SECRET and WR_ADMIN_TOKEN.

ARG GO_VERSION=1.26

FROM docker.io/library/golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# Every top-level package the command imports (cmd/waitingroom/deploy_test.go
# checks this list against `go list -deps`).
COPY cmd ./cmd
COPY internal ./internal
COPY queue ./queue
COPY server ./server
COPY stream ./stream
COPY web ./web
# A static binary: no libc in the runtime image. The module and build
# caches survive between builds (BuildKit, podman and buildah).
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/waitingroom ./cmd/waitingroom

# distroless/static: CA certificates, time zones and /etc/passwd, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/waitingroom /usr/local/bin/waitingroom
# nonroot (65532): nothing in the image runs as root.
USER nonroot:nonroot
# 8080: the public port (page and API). 8081: the management port (metrics,
# health, admin API): it listens on every interface inside the container,
# so publish it only on a network the public cannot reach.
ENV WR_HTTP_ADDR=:8080 \
    WR_ADMIN_ADDR=0.0.0.0:8081 \
    WR_LOG_FORMAT=json
EXPOSE 8080 8081
# No HEALTHCHECK instruction: the image has no shell or HTTP client to run
# one, and orchestrators probe over HTTP themselves. Probe the management
# port: liveness GET :8081/healthz (200 while the process serves),
# readiness GET :8081/readyz (503 while Redis or Postgres does not answer,
# or while a configured room is missing from Redis, as in the first
# admission interval after a start or a loss of Redis's data: take the
# instance out of the load balancer). Stop with SIGTERM; the
# instance drains within WR_SHUTDOWN_TIMEOUT.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/waitingroom"]
CMD ["serve"]
