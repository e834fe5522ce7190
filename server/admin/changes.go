package admin

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/server/admin/audit"
	"waitingroom/server/api"
)

// The audit of the operators' changes (package audit keeps the log).
// Every successful PUT and DELETE under /admin — whatever its handler —
// (and a change in force whose answer is an error: inForce) is recorded
// by recordChanges, which reads the resource's document (the GET of the
// same path) before and after the handler, so the handlers themselves
// know nothing of it. The two reads are not atomic with the change: a
// change made by someone else at the same moment may show in them.

// recordChanges is the /admin group's middleware that audits changes: for
// a PUT or DELETE answered 2xx, or marked inForce, it writes one INFO line
// "admin change" and records an audit.Entry (a forced delete's path ends
// in "?force=true"). A failure to record is logged; the change stands.
func (a *app) recordChanges(c *fiber.Ctx) error {
	if m := c.Method(); m != fiber.MethodPut && m != fiber.MethodDelete {
		return c.Next()
	}
	path := strings.Clone(c.Path())
	before := a.document(c, path)
	err := c.Next()
	switch {
	case err != nil && c.Locals(inForceKey{}) == nil:
		return err
	case err == nil && (c.Response().StatusCode() < 200 || c.Response().StatusCode() > 299):
		return nil
	}
	body, cut := audit.Body(c.Body())
	e := audit.Entry{
		At: time.Now().UTC(), Token: audit.Fingerprint(api.Bearer(c)), Addr: a.ClientIP(c),
		Method: strings.Clone(c.Method()), Path: path, Body: body, BodyTruncated: cut,
		Before: before, After: a.document(c, path),
	}
	if e.Method == fiber.MethodDelete && c.QueryBool("force") {
		e.Path += "?force=true" // what the delete removed depends on it
	}
	ctx := c.UserContext()
	a.Logger.LogAttrs(ctx, slog.LevelInfo, "admin change",
		slog.String("token", e.Token), slog.String("addr", e.Addr), slog.String("method", e.Method),
		slog.String("path", e.Path), slog.String("body", e.Body),
		slog.String("before", string(e.Before)), slog.String("after", string(e.After)))
	if err := a.Audit.Record(ctx, e); err != nil {
		a.Logger.LogAttrs(ctx, slog.LevelWarn, "admin change not recorded in the audit log",
			slog.String("path", e.Path), slog.String("error", err.Error()))
	}
	return err
}

// inForceKey marks a request whose change is in force although its
// answer is an error (inForce): recordChanges audits it.
type inForceKey struct{}

// inForce tells recordChanges that c's change took effect, whatever the
// handler answers next (a PUT whose definition Postgres did not record).
func inForce(c *fiber.Ctx) { c.Locals(inForceKey{}, true) }

// document is the JSON the management app answers to GET path with c's
// credentials (audit.Doc of it), or null when that is not a 200: a
// request of its own through the app's routes, so any resource with a GET
// at its path is covered.
func (a *app) document(c *fiber.Ctx, path string) json.RawMessage {
	var req fasthttp.Request
	req.Header.SetMethod(fiber.MethodGet)
	req.SetRequestURI(path)
	req.Header.SetHostBytes(c.Request().Host())
	if auth := c.Request().Header.Peek(fiber.HeaderAuthorization); len(auth) > 0 {
		req.Header.SetBytesV(fiber.HeaderAuthorization, auth)
	}
	var rc fasthttp.RequestCtx
	rc.Init(&req, c.Context().RemoteAddr(), nil)
	a.routes(&rc)
	if rc.Response.StatusCode() != fiber.StatusOK {
		return json.RawMessage("null")
	}
	return audit.Doc(rc.Response.Body())
}

// auditLimit is GET /admin/audit's default number of entries.
const auditLimit = 100

// getAudit answers GET /admin/audit?limit=N (1 to 1000, default 100): the
// newest changes first,
//
//	{"entries": [{
//	  "at": "2026-11-29T10:00:00.123Z",   when the change was answered (UTC)
//	  "token": "1a2b3c4d",                the admin token's fingerprint
//	                                      (first 8 hex of its SHA-256)
//	  "addr": "203.0.113.7",              the client address
//	  "method": "PUT",
//	  "path": "/admin/rooms/default",
//	  "body": "{\"paused\":true}",        the request body as sent (a string,
//	  "bodyTruncated": false,             cut to 2 KiB: then true)
//	  "before": {…} | null,               the resource's GET document before
//	  "after": {…}                        and after (null: none, e.g. a room
//	}]}                                   created; a string ending in "…":
//	                                      cut at 16 KiB)
func (a *app) getAudit(c *fiber.Ctx) error {
	limit := auditLimit
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > audit.Keep {
			return api.BadRequest("limit must be from 1 to " + strconv.Itoa(audit.Keep))
		}
		limit = n
	}
	entries, err := a.Audit.Recent(c.UserContext(), limit)
	if err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	return c.JSON(fiber.Map{"entries": entries})
}
