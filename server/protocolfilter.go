package server

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
	"waitingroom/server/gateway"
)

// The HTTP protocol's edge, below Fiber.
//
// guardProtocol puts a filter in front of an app's fasthttp handler: it
// runs on every request fasthttp has parsed, before any Fiber middleware or
// handler, and refuses four kinds of request in the contract's JSON:
//
//   - a body with Content-Encoding (anything but "identity"): 415
//     unsupported_encoding. Fiber's Ctx.Body() inflates gzip, deflate and
//     brotli, stacked ("gzip, gzip") and without a cap, while the body limit
//     counts the compressed bytes: 600 bytes can become 256 MiB. No client
//     of this API compresses its small JSON bodies, so the server never
//     inflates anything (decodeJSON also reads the raw body). The compressed
//     body was read within WR_BODY_LIMIT with sound framing, so the
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
func (s *Server) guardProtocol(app *fiber.App) { s.guard(app, false) }

// guardPublic is guardProtocol for the public app: in gateway mode it
// also hands every request outside gateway.Prefix to the gateway, and
// holds the waiting room's own requests to WR_BODY_LIMIT.
func (s *Server) guardPublic(app *fiber.App) { s.guard(app, s.gw != nil) }

func (s *Server) guard(app *fiber.App, gatewayMode bool) {
	srv := app.Server()
	srv.SecureErrorLogMessage = true
	next := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		id := s.clients.RequestID(ctx)
		api.SetRequestID(ctx, id)
		// Last: whatever answered (a refusal below resets the response).
		defer ctx.Response.Header.Set(api.RequestIDHeader, id)
		defer closeIfUnread(ctx)
		toOrigin := gatewayMode && !ownPath(ctx.Path())
		defer s.logAccess(ctx, srv, toOrigin, time.Now())
		if r := checkProtocol(&ctx.Request.Header, toOrigin); r != nil {
			s.m.ProtocolRefused.WithLabelValues(r.reason).Inc()
			r.write(ctx)
			return
		}
		switch {
		case toOrigin:
			s.toOrigin(ctx)
		case ctx.Request.IsBodyStream():
			if r := bufferBody(ctx, s.cfg.BodyLimit); r != nil {
				r.write(ctx) // the origin's limit let it in; the waiting room's does not
				return
			}
			next(ctx)
		default:
			next(ctx)
		}
	}
}

// Request bodies in gateway mode (fiber.Config.StreamRequestBody): the
// server reads a request's headers and at most its first 8 KiB of body
// before the handler runs. A body for the origin streams to it as the
// client sends it (package gateway), and one the gateway refuses (no
// pass, a denied address) is never read: the connection is then closed,
// or the rest of the body would be read as the next request. The waiting
// room's own handlers read c.Body(): bufferBody reads it first, never
// more than WR_BODY_LIMIT, a chunked body included.

// bufferBody reads a streamed request body whole, up to limit; a refusal
// when it is larger or the client fails to send it.
func bufferBody(ctx *fasthttp.RequestCtx, limit int) *protocolRefusal {
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

// closeIfUnread closes the connection of a request whose streamed body
// was not read whole.
func closeIfUnread(ctx *fasthttp.RequestCtx) {
	if ctx.Request.IsBodyStream() && ctx.Request.Header.ContentLength() != 0 && !gateway.BodyConsumed(ctx) {
		ctx.SetConnectionClose()
	}
}

// toOrigin hands a request for the origin to the gateway, unless its
// address is denied.
func (s *Server) toOrigin(ctx *fasthttp.RequestCtx) {
	if d := &s.acl.Current().Deny; d.HasNets() && d.HasIP(s.clients.Addr(ctx)) {
		refuseDenied.write(ctx)
		return
	}
	// The origin sees the id the client will see: its log lines match.
	ctx.Request.Header.Set(api.RequestIDHeader, api.RequestID(ctx))
	s.gw.Handle(ctx)
}

// protocolRefusal is one answer of the filter, encoded once.
type protocolRefusal struct {
	reason string // metric label
	status int
	body   []byte
	close  bool // close the connection after the answer
}

func newRefusal(reason string, status int, code, message string, close bool) *protocolRefusal {
	body, _ := json.Marshal(map[string]string{"error": code, "message": message})
	return &protocolRefusal{reason: reason, status: status, body: body, close: close}
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
	refuseDenied   = newRefusal("", fiber.StatusForbidden, "denied", "access denied", false)
)

func (r *protocolRefusal) write(ctx *fasthttp.RequestCtx) {
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

// checkProtocol returns the refusal for a request the filter refuses, nil
// for any other. A request for the origin (gateway mode) may carry a
// compressed body: the gateway forwards it as it is, never inflates it.
func checkProtocol(h *fasthttp.RequestHeader, toOrigin bool) *protocolRefusal {
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
