package api

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
)

// Error is an error with its HTTP status and the contract's code: the one
// form every refusal takes on the wire, {"error": Code, "message": Message},
// with Retry-After when RetryAfter > 0.
type Error struct {
	Status     int
	Code       string
	Message    string
	RetryAfter int // seconds; 0: no Retry-After header
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// BadRequest is a 400 invalid_request saying what is wrong.
func BadRequest(msg string) error {
	return &Error{Status: fiber.StatusBadRequest, Code: "invalid_request", Message: msg}
}

// ErrUnavailable: a dependency (Postgres, or Redis where a limit fails
// closed) could not answer in time. Join it with the cause for the log.
var ErrUnavailable = &Error{Status: 503, Code: "unavailable", Message: "the service is briefly unavailable; retry shortly", RetryAfter: 1}

// ErrUnauthorized: the request carries no valid token.
var ErrUnauthorized = &Error{Status: fiber.StatusUnauthorized, Code: "unauthorized", Message: "a valid token is required"}

// Table maps the errors of the packages behind the edge to the contract's
// responses: the one place where domain errors become HTTP statuses. This
// package knows none of those packages: the composition (package server),
// where all of them are visible, builds the table once and hands it to
// each app it builds (FiberConfig) and to whatever writes an error itself
// (Write). A Table is read-only once built.
type Table []Mapping

// Mapping is a row of a Table: an error that is Err (errors.Is) is answered
// as As.
type Mapping struct {
	Err error
	As  Error
}

// fiberCodes names Fiber's own errors (routing, body limit) in the contract's form.
var fiberCodes = map[int]string{
	fiber.StatusBadRequest:                  "invalid_request",
	fiber.StatusNotFound:                    "not_found",
	fiber.StatusMethodNotAllowed:            "method_not_allowed",
	fiber.StatusRequestEntityTooLarge:       "payload_too_large",
	fiber.StatusRequestHeaderFieldsTooLarge: "headers_too_large",
	fiber.StatusUnsupportedMediaType:        "unsupported_media_type",
	fiber.StatusRequestTimeout:              "request_timeout",
	fiber.StatusUpgradeRequired:             "upgrade_required",
}

// fiberMessages are the fixed texts of Fiber's and fasthttp's own errors.
// Their messages are never sent: the parser's quote the raw request
// (cookies and Authorization included) and the router's echo the path.
var fiberMessages = map[int]string{
	fiber.StatusBadRequest:                  "the request is malformed",
	fiber.StatusNotFound:                    "no such resource",
	fiber.StatusMethodNotAllowed:            "this method is not allowed here",
	fiber.StatusRequestEntityTooLarge:       "the request body is too large",
	fiber.StatusRequestHeaderFieldsTooLarge: "the request headers are too large",
	fiber.StatusUnsupportedMediaType:        "unsupported content type",
	fiber.StatusRequestTimeout:              "the request was not received in time",
	fiber.StatusUpgradeRequired:             "this endpoint needs a WebSocket upgrade",
}

// fiberError is the response to a Fiber or fasthttp error: a code and a
// fixed message per status. A status outside the tables (none is expected)
// is named after its status text, e.g. 502 "bad_gateway".
func fiberError(status int) *Error {
	code, ok := fiberCodes[status]
	if !ok {
		code = strings.ReplaceAll(strings.ToLower(utils.StatusMessage(status)), " ", "_")
		if code == "" {
			code = "error"
		}
	}
	msg, ok := fiberMessages[status]
	if !ok {
		msg = strings.ToLower(utils.StatusMessage(status))
		if msg == "" {
			msg = "the request failed"
		}
	}
	return &Error{Status: status, Code: code, Message: msg}
}

// Resolve resolves err to the response the client gets: an *Error as it
// is, else the first row of t that err is, else Fiber's own errors by
// status. Unknown errors are 500 with a generic message; their detail only
// goes to the log.
func (t Table) Resolve(err error) (*Error, bool) {
	var ae *Error
	if errors.As(err, &ae) {
		return ae, true
	}
	for i := range t {
		if errors.Is(err, t[i].Err) {
			e := t[i].As
			return &e, true
		}
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fiberError(fe.Code), true
	}
	return &Error{Status: 500, Code: "internal", Message: "internal error"}, false
}

// Write writes err in the contract's form, resolved by t. A 5xx is logged to log with
// its cause and, through c.UserContext(), its request id: at warn when
// known (a dependency is down), at error when not. Every one: an operator
// holding a failed request's id must find its line, during an outage too.
func (t Table) Write(c *fiber.Ctx, log *slog.Logger, err error) error {
	ae, known := t.Resolve(err)
	if ae.Status >= 500 {
		level := slog.LevelWarn
		if !known {
			level = slog.LevelError
		}
		log.LogAttrs(c.UserContext(), level, "request failed",
			slog.String("method", c.Method()), slog.String("path", c.Path()),
			slog.Int("status", ae.Status), slog.String("error", err.Error()))
	}
	if ae.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(ae.RetryAfter))
	}
	if RequestID(c.Context()) == "" {
		// No handler ran (an error of fasthttp's parser): no id was given.
		c.Set(RequestIDHeader, NewRequestID())
	}
	return c.Status(ae.Status).JSON(fiber.Map{"error": ae.Code, "message": ae.Message})
}
