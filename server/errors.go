package server

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

// apiError is an error with its HTTP status and contract code.
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter int // seconds; 0: no Retry-After header
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errBadRequest(msg string) error {
	return &apiError{status: fiber.StatusBadRequest, code: "invalid_request", message: msg}
}

var (
	errUnauthorized = &apiError{status: fiber.StatusUnauthorized, code: "unauthorized", message: "a valid token is required"}
	errInvalidCreds = &apiError{status: fiber.StatusUnauthorized, code: "invalid_credentials", message: "login id or password is wrong"}
	errWrongRoom    = &apiError{status: fiber.StatusForbidden, code: "wrong_room", message: "this queue token belongs to another room"}
)

// errorTable maps the packages' sentinel errors to responses: the one place
// where domain errors become HTTP statuses.
var errorTable = []struct {
	err error
	api apiError
}{
	{queue.ErrRoomNotFound, apiError{status: 404, code: "room_not_found", message: "no such room"}},
	{queue.ErrRoomPaused, apiError{status: 423, code: "room_paused", message: "the room is paused; try again shortly", retryAfter: 5}},
	{queue.ErrRoomClosed, apiError{status: 423, code: "room_closed", message: "this sale has closed or sold out. Thank you for your interest; please check back for the next one"}},
	{queue.ErrNotInQueue, apiError{status: 404, code: "not_in_queue", message: "you are not in this queue (never entered, left, or your entry window ended): enter again"}},
	{queue.ErrEntryTokenInvalid, apiError{status: 403, code: "entry_token_invalid", message: "the entry token is unknown, already used, expired or not yours"}},
	{queue.ErrUnavailable, apiError{status: 503, code: "unavailable", message: "the queue is briefly unavailable; your place is kept, retry shortly", retryAfter: 1}},
	{token.ErrInvalid, apiError{status: 401, code: "unauthorized", message: "the token is missing, expired or invalid"}},
	{pgstore.ErrProductNotFound, apiError{status: 404, code: "product_not_found", message: "no such product"}},
	{pgstore.ErrOutOfStock, apiError{status: 409, code: "out_of_stock", message: "not enough stock left for this order"}},
	{pgstore.ErrInvalidInput, apiError{status: 400, code: "invalid_request", message: "a value of the request was refused"}},
	{checkout.ErrNoEntryToken, apiError{status: 403, code: "entry_token_invalid", message: "the X-Entry-Token header is required"}},
	{checkout.ErrUnavailable, apiError{status: 503, code: "unavailable", message: "the shop is briefly unavailable; your entry token is kept, retry the same order", retryAfter: 1}},
	{checkout.ErrEntryLost, apiError{status: 503, code: "unavailable", message: "the shop is briefly unavailable and your entry window could not be kept: enter again", retryAfter: 1}},
	{checkout.ErrUnknownUser, apiError{status: 401, code: "unauthorized", message: "this account no longer exists"}},
	{faults.ErrDisabled, apiError{status: 403, code: "faults_disabled", message: "fault injection is off: start the server with WR_FAULT_INJECTION=on"}},
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
func fiberError(status int) *apiError {
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
	return &apiError{status: status, code: code, message: msg}
}

// toAPIError resolves err to the response the client gets. Unknown errors
// are 500 with a generic message; their detail only goes to the log.
func toAPIError(err error) (*apiError, bool) {
	var ae *apiError
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
	return &apiError{status: 500, code: "internal", message: "internal error"}, false
}

// writeError writes err in the contract's form.
func (s *Server) writeError(c *fiber.Ctx, err error) error {
	ae, known := toAPIError(err)
	if ae.status >= 500 {
		// Known 5xx (a dependency is down) would flood the log during an
		// outage: the admission loop logs the outage once, requests at debug.
		level := slog.LevelDebug
		if !known {
			level = slog.LevelError
		}
		s.log.LogAttrs(c.UserContext(), level, "request failed",
			slog.String("method", c.Method()), slog.String("path", c.Path()),
			slog.Int("status", ae.status), slog.String("error", err.Error()))
	}
	if ae.retryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(ae.retryAfter))
	}
	return c.Status(ae.status).JSON(fiber.Map{"error": ae.code, "message": ae.message})
}

// checkoutError is the answer to checkout.Place's errors that carry a
// message of their own: a business refusal names its reason, a store error
// is answered by its kind (dbError); the others are the table's.
func checkoutError(err error) error {
	var re *checkout.RefusedError
	var se *checkout.StoreError
	switch {
	case errors.As(err, &re):
		return errBadRequest("the order was refused: " + re.Err.Error())
	case errors.As(err, &se):
		return dbError(se.Err)
	}
	return err
}
