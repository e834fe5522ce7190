package api

import (
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// ReadBufferSize caps the request line and headers together; a larger
// request gets 431 headers_too_large. 16 KiB: a busy shop domain's cookies
// alone can pass 4 KiB, and common proxies in front pass 8 KiB per header
// line or more; see FiberConfig for what it costs per connection.
const ReadBufferSize = 16 << 10

// FiberConfig is the configuration of both apps (public and management):
// bodies up to bodyLimit bytes, errors resolved by errs and written by its
// Write to log.
//
// ReduceMemoryUsage returns a connection's read and write buffers to
// fasthttp's pools whenever nothing is buffered: an idle keep-alive
// connection holds none, and neither does a stream (SSE and WebSocket
// hijack the connection; without it fasthttp hands the stream its read
// buffer, ReadBufferSize per stream for hours). The cost is a pool get/put
// per request.
//
// Multipart forms are never pre-parsed: no endpoint takes one.
func FiberConfig(name string, bodyLimit int, log *slog.Logger, errs Table) fiber.Config {
	return fiber.Config{
		AppName:                      name,
		DisableStartupMessage:        true,
		BodyLimit:                    bodyLimit,
		ReadTimeout:                  10 * time.Second, // slow clients cannot hold a connection while sending
		IdleTimeout:                  90 * time.Second,
		ReadBufferSize:               ReadBufferSize,
		ReduceMemoryUsage:            true,
		DisablePreParseMultipartForm: true,
		ErrorHandler:                 func(c *fiber.Ctx, err error) error { return errs.Write(c, log, err) },
	}
}

// Bearer returns the token of an "Authorization: Bearer" header, or "".
func Bearer(c *fiber.Ctx) string {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// SecurityHeaders sets the headers every response of the public app carries.
func SecurityHeaders(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Frame-Options", "DENY")
	return c.Next()
}

// NoStore forbids caching of every API answer.
func NoStore(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Next()
}

// Document serves a fixed JSON document (the OpenAPI descriptions):
// clients may keep it but ask again, since a deploy can change it.
func Document(body []byte) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(body)
	}
}

// WantsUpgrade reports whether c asks, by any reading of its headers, to
// switch protocols: an Upgrade header of any value, or a Connection header
// that mentions upgrade anywhere, in any of their copies. It is the broad
// reading, for the checks that must see every request a handler could
// upgrade (the cross-site gate): the WebSocket handshake accepts a strict
// subset of these (push.WebSocket).
func WantsUpgrade(c *fiber.Ctx) bool {
	found := false
	c.Request().Header.VisitAll(func(k, v []byte) {
		switch {
		case found:
		case strings.EqualFold(string(k), fiber.HeaderUpgrade):
			found = true
		case strings.EqualFold(string(k), fiber.HeaderConnection):
			found = strings.Contains(strings.ToLower(string(v)), "upgrade")
		}
	})
	return found
}
