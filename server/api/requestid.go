package api

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Request ids: every response of both apps carries X-Request-Id, and every
// log line written while serving that request carries the same id as
// request_id, so an operator can match a user's complaint (or a proxy's
// log) to the server's lines.
//
// The id is decided once per request, below Fiber (the server's protocol
// filter, which knows the trusted proxies), and recorded on the fasthttp
// request (SetRequestID). RequestContext carries it into the request's
// context, where the log handler (LogHandler) finds it; the gateway's
// fasthttp handlers log with the fasthttp request itself, whose Value
// reads the same record.
const (
	// RequestIDHeader is the request id's header, in requests (from a
	// trusted proxy) and in every response.
	RequestIDHeader = "X-Request-Id"
	// RequestIDLogKey is the request id's field in log lines.
	RequestIDLogKey = "request_id"
	// requestIDMax is the longest id taken from a proxy.
	requestIDMax = 128
)

type requestIDKey struct{}

// NewRequestID is a fresh id, 22 base64url characters: 128 random bits
// from the runtime's per-thread ChaCha8 generator (math/rand/v2's, seeded
// from the system), so that ids say nothing about an instance's request
// volume, at no system call per request (the poll path is the hot one;
// BenchmarkNewRequestID). An id names a request; it is no secret.
func NewRequestID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidRequestID reports whether v may be taken as a request id: 1 to 128
// bytes of ASCII letters, digits and - _ . : + / = @ — room for UUIDs, hex,
// base64 and the usual tracing ids, and nothing that could break a log
// line or a header.
func ValidRequestID(v []byte) bool {
	if len(v) == 0 || len(v) > requestIDMax {
		return false
	}
	for _, b := range v {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '-' || b == '_' || b == '.' || b == ':' || b == '+' || b == '/' || b == '=' || b == '@':
		default:
			return false
		}
	}
	return true
}

// SetRequestID records id as the request id of ctx's request.
func SetRequestID(ctx *fasthttp.RequestCtx, id string) { ctx.SetUserValue(requestIDKey{}, id) }

// RequestID is the request id ctx carries: a fasthttp request's
// (SetRequestID) or a context made by RequestContext; "" when none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestContext is the first middleware of each app: it carries the
// request's id into c.UserContext(), the context its handlers log with,
// and records the route the request ended on (Route) for its access line.
func RequestContext(c *fiber.Ctx) error {
	if id := RequestID(c.Context()); id != "" {
		c.SetUserContext(context.WithValue(c.UserContext(), requestIDKey{}, id))
	}
	err := c.Next()
	if c.Context().UserValue(routeKey{}) == nil {
		RouteName(c, err) // unless an inner middleware did (observe, which resolves errors)
	}
	return err
}

// LogHandler wraps h so that a record logged with a context carrying a
// request id gets the request_id field. A handler that is one already is
// returned as it is (the field is never written twice).
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String(RequestIDLogKey, id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
