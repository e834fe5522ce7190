package api

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"waitingroom/queue"
	"waitingroom/server/checkout"
	"waitingroom/server/faults"
	"waitingroom/server/pgstore"
	"waitingroom/server/token"
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

// StoreError is the answer to a store error: its business outcome (the
// table below), 400 with the reason for a value the database refused
// (pgstore.InputError: the request's fault, never an outage), else 503.
func StoreError(err error) error {
	var ie *pgstore.InputError
	switch {
	case errors.As(err, &ie):
		return BadRequest("a value of the request was refused: " + ie.Reason)
	case pgstore.IsOutcome(err):
		return err
	}
	return errors.Join(ErrUnavailable, err)
}

// ErrUnauthorized: the request carries no valid token.
var ErrUnauthorized = &Error{Status: fiber.StatusUnauthorized, Code: "unauthorized", Message: "a valid token is required"}

// errorTable maps the packages' sentinel errors to responses: the one place
// where domain errors become HTTP statuses.
var errorTable = []struct {
	err error
	api Error
}{
	{queue.ErrRoomNotFound, Error{Status: 404, Code: "room_not_found", Message: "no such room"}},
	{queue.ErrRoomClosed, Error{Status: 423, Code: "room_closed", Message: "this sale has closed or sold out. Thank you for your interest; please check back for the next one"}},
	{queue.ErrPrequeueNotEmpty, Error{Status: 409, Code: "prequeue_not_empty", Message: "prequeueParts changes only while the room's pre-queue is empty and no opening is merging it"}},
	{queue.ErrBadParts, Error{Status: 400, Code: "invalid_request", Message: "prequeueParts must be from 1 to 16"}},
	{queue.ErrNotInQueue, Error{Status: 404, Code: "not_in_queue", Message: "you are not in this queue (never entered, left, or your entry window ended): enter again"}},
	{queue.ErrEntryTokenInvalid, Error{Status: 403, Code: "entry_token_invalid", Message: "the entry token is unknown, already used, expired or not yours"}},
	{queue.ErrUnavailable, Error{Status: 503, Code: "unavailable", Message: "the queue is briefly unavailable; your place is kept, retry shortly", RetryAfter: 1}},
	{token.ErrInvalid, Error{Status: 401, Code: "unauthorized", Message: "the token is missing, expired or invalid"}},
	{pgstore.ErrProductNotFound, Error{Status: 404, Code: "product_not_found", Message: "no such product"}},
	{pgstore.ErrOutOfStock, Error{Status: 409, Code: "out_of_stock", Message: "not enough stock left for this order"}},
	{pgstore.ErrInvalidInput, Error{Status: 400, Code: "invalid_request", Message: "a value of the request was refused"}},
	{checkout.ErrNoEntryToken, Error{Status: 403, Code: "entry_token_invalid", Message: "the X-Entry-Token header is required"}},
	{checkout.ErrUnavailable, Error{Status: 503, Code: "unavailable", Message: "the shop is briefly unavailable; your entry token is kept, retry the same order", RetryAfter: 1}},
	{checkout.ErrEntryLost, Error{Status: 503, Code: "unavailable", Message: "the shop is briefly unavailable and your entry window could not be kept: enter again", RetryAfter: 1}},
	{checkout.ErrUnknownUser, Error{Status: 401, Code: "unauthorized", Message: "this account no longer exists"}},
	{faults.ErrDisabled, Error{Status: 403, Code: "faults_disabled", Message: "fault injection is off on this instance"}},
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

// Resolve resolves err to the response the client gets. Unknown errors
// are 500 with a generic message; their detail only goes to the log.
func Resolve(err error) (*Error, bool) {
	var ae *Error
	if errors.As(err, &ae) {
		return ae, true
	}
	for i := range errorTable {
		if errors.Is(err, errorTable[i].err) {
			e := errorTable[i].api
			return &e, true
		}
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fiberError(fe.Code), true
	}
	return &Error{Status: 500, Code: "internal", Message: "internal error"}, false
}

// Write writes err in the contract's form. A 5xx is logged to log with
// its cause and, through c.UserContext(), its request id: at warn when
// known (a dependency is down), at error when not. Every one: an operator
// holding a failed request's id must find its line, during an outage too.
func Write(c *fiber.Ctx, log *slog.Logger, err error) error {
	ae, known := Resolve(err)
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
