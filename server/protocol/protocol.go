package protocol

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/server/gateway/origin"
)

// The filter runs on every request fasthttp has parsed, before any Fiber
// middleware or handler (the server installs it on both apps), and
// refuses four kinds of request in the contract's JSON (Check):
//
//   - a body with Content-Encoding (anything but "identity"): 415
//     unsupported_encoding. Fiber's Ctx.Body() inflates gzip, deflate and
//     brotli, stacked ("gzip, gzip") and without a cap, while the body limit
//     counts the compressed bytes: 600 bytes can become 256 MiB. No client
//     of this API compresses its small JSON bodies, so the server never
//     inflates anything (decodeJSON also reads the raw body). The compressed
//     body was read within the body limit with sound framing, so the
//     connection stays open;
//   - Content-Length together with Transfer-Encoding: 400 invalid_request
//     and the connection closed (RFC 9112 §6.1: the framing is ambiguous,
//     which is how requests are smuggled past a proxy; whatever follows on
//     the connection is never answered). fasthttp silently prefers chunked
//     and drops the Content-Length, so the raw header lines are read;
//   - more than one Host header: 400 invalid_request and the connection
//     closed (RFC 9112 §3.2; fasthttp keeps the last);
//   - a method Fiber does not know (also a lowercase "get": methods are
//     case-sensitive): 400 invalid_request. RFC 9110 suggests 501, but a
//     5xx any client can cause at will would page operators for nothing, and
//     such a request is the client's mistake.
//
// Errors fasthttp's parser reports itself (duplicate Content-Length, bad
// header names, oversized headers, timeouts) go through the app's
// ErrorHandler, which answers a fixed text per status (package api): the
// parser's messages quote the raw request, cookies and Authorization
// included. SecureErrorLogMessage keeps them out of the errors too.
//
// The filter is installed on the fasthttp.Server right after fiber.New:
// Fiber sets Server.Handler only in New (App.init), never at Listener or
// Serve time.
//
// What must happen before fasthttp parses anything (a header line without
// a colon, the connection caps) is the listener package's, on the
// connection.

// Request bodies in gateway mode (fiber.Config.StreamRequestBody): the
// server reads a request's headers and at most its first 8 KiB of body
// before the handler runs. A body for the origin streams to it as the
// client sends it (package origin), and one the gateway refuses (no
// pass, a denied address) is never read: the connection is then closed,
// or the rest of the body would be read as the next request. The waiting
// room's own handlers read c.Body(): BufferBody reads it first, never
// more than its limit, a chunked body included.

// BufferBody reads a streamed request body whole, up to limit; a refusal
// when it is larger or the client fails to send it.
func BufferBody(ctx *fasthttp.RequestCtx, limit int) *Refusal {
	if ctx.Request.Header.ContentLength() > limit {
		return refuseTooLarge
	}
	body, err := io.ReadAll(io.LimitReader(ctx.RequestBodyStream(), int64(limit)+1))
	switch {
	case len(body) > limit:
		return refuseTooLarge
	case err != nil:
		return refuseBody
	}
	ctx.Request.SetBody(body)
	return nil
}

// CloseIfUnread closes the connection of a request whose streamed body
// was not read whole.
func CloseIfUnread(ctx *fasthttp.RequestCtx) {
	if ctx.Request.IsBodyStream() && ctx.Request.Header.ContentLength() != 0 && !origin.BodyConsumed(ctx) {
		ctx.SetConnectionClose()
	}
}

// Refusal is one answer of the filter, encoded once.
type Refusal struct {
	reason string // metric label
	status int
	body   []byte
	close  bool // close the connection after the answer
}

// Reason is the refusal's label in waitingroom_protocol_refused_total
// ("" for gateway mode's body refusals and Denied, which are not counted).
func (r *Refusal) Reason() string { return r.reason }

func newRefusal(reason string, status int, code, message string, close bool) *Refusal {
	body, _ := json.Marshal(map[string]string{"error": code, "message": message})
	return &Refusal{reason: reason, status: status, body: body, close: close}
}

var (
	refuseEncoding = newRefusal("content_encoding", fiber.StatusUnsupportedMediaType, "unsupported_encoding",
		"request bodies must not be compressed: send them without Content-Encoding", false)
	refuseFraming = newRefusal("length_and_chunked", fiber.StatusBadRequest, "invalid_request",
		"a request must not carry both Content-Length and Transfer-Encoding", true)
	refuseMethod = newRefusal("method", fiber.StatusBadRequest, "invalid_request",
		"unsupported request method", false)
	refuseHost = newRefusal("duplicate_host", fiber.StatusBadRequest, "invalid_request",
		"a request must carry exactly one Host header", true)
	// Gateway mode's: not counted as protocol refusals.
	refuseTooLarge = newRefusal("", fiber.StatusRequestEntityTooLarge, "payload_too_large", "the request body is too large", true)
	refuseBody     = newRefusal("", fiber.StatusBadRequest, "invalid_request", "the request body could not be read", true)
	// Denied answers a request for the origin from a denied address.
	Denied = newRefusal("", fiber.StatusForbidden, "denied", "access denied", false)
)

// NotFound is a 404 not_found refusal saying msg.
func NotFound(msg string) *Refusal {
	return newRefusal("", fiber.StatusNotFound, "not_found", msg, false)
}

// Write answers ctx's request with r.
func (r *Refusal) Write(ctx *fasthttp.RequestCtx) {
	ctx.Response.Reset()
	ctx.SetStatusCode(r.status)
	ctx.SetContentType(fiber.MIMEApplicationJSON)
	ctx.Response.Header.Set(fiber.HeaderCacheControl, "no-store")
	ctx.Response.Header.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	ctx.SetBody(r.body)
	if r.close {
		ctx.SetConnectionClose()
	}
}

// Check returns the refusal for a request the filter refuses, nil for
// any other. A request for the origin (gateway mode) may carry a
// compressed body: the gateway forwards it as it is, never inflates it.
func Check(h *fasthttp.RequestHeader, toOrigin bool) *Refusal {
	if !knownMethod(h.Method()) {
		return refuseMethod
	}
	var length, chunked bool
	hosts := 0
	raw := h.RawHeaders()
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		key, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue // a folded value's continuation
		}
		switch {
		case bytes.EqualFold(key, []byte(fiber.HeaderContentLength)):
			length = true
		case bytes.EqualFold(key, []byte(fiber.HeaderTransferEncoding)):
			chunked = true
		case bytes.EqualFold(key, []byte(fiber.HeaderHost)):
			hosts++
		case bytes.EqualFold(key, []byte(fiber.HeaderContentEncoding)):
			if !toOrigin && !identityOnly(value) {
				return refuseEncoding
			}
		}
	}
	switch {
	case length && chunked:
		return refuseFraming
	case hosts > 1:
		return refuseHost // RFC 9112 §3.2: which one names the site is ambiguous
	}
	return nil
}

// identityOnly reports whether a Content-Encoding value names no coding
// but "identity" (an empty value names none).
func identityOnly(v []byte) bool {
	for len(v) > 0 {
		var coding []byte
		coding, v, _ = bytes.Cut(v, []byte{','})
		coding = bytes.TrimSpace(coding)
		if len(coding) > 0 && !bytes.EqualFold(coding, []byte("identity")) {
			return false
		}
	}
	return true
}

// knownMethod reports whether m is one of Fiber's methods (fiber.DefaultMethods).
func knownMethod(m []byte) bool {
	switch string(m) {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
		fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace, fiber.MethodPatch:
		return true
	}
	return false
}
