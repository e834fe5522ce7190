package server

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
	"waitingroom/server/checkout"
	"waitingroom/server/faults"
	"waitingroom/server/pgstore"
	"waitingroom/server/token"
)

// errorTable maps the packages' sentinel errors to the contract's
// responses: the one place where domain errors become HTTP statuses. It is
// built here, where every domain package is visible, and handed to both
// apps (api.FiberConfig, admin.Options.Errors); package api writes every
// error through it in the contract's form.
var errorTable = api.Table{
	{Err: queue.ErrRoomNotFound, As: api.Error{Status: 404, Code: "room_not_found", Message: "no such room"}},
	{Err: queue.ErrRoomClosed, As: api.Error{Status: 423, Code: "room_closed", Message: "this sale has closed or sold out. Thank you for your interest; please check back for the next one"}},
	{Err: queue.ErrPrequeueNotEmpty, As: api.Error{Status: 409, Code: "prequeue_not_empty", Message: "prequeueParts changes only while the room's pre-queue is empty and no opening is merging it"}},
	{Err: queue.ErrBadParts, As: api.Error{Status: 400, Code: "invalid_request", Message: "prequeueParts must be from 1 to 16"}},
	{Err: queue.ErrNotInQueue, As: api.Error{Status: 404, Code: "not_in_queue", Message: "you are not in this queue (never entered, left, or your entry window ended): enter again"}},
	{Err: queue.ErrEntryTokenInvalid, As: api.Error{Status: 403, Code: "entry_token_invalid", Message: "the entry token is unknown, already used, expired or not yours"}},
	{Err: queue.ErrUnavailable, As: api.Error{Status: 503, Code: "unavailable", Message: "the queue is briefly unavailable; your place is kept, retry shortly", RetryAfter: 1}},
	{Err: token.ErrInvalid, As: api.Error{Status: 401, Code: "unauthorized", Message: "the token is missing, expired or invalid"}},
	{Err: pgstore.ErrProductNotFound, As: api.Error{Status: 404, Code: "product_not_found", Message: "no such product"}},
	{Err: pgstore.ErrOutOfStock, As: api.Error{Status: 409, Code: "out_of_stock", Message: "not enough stock left for this order"}},
	{Err: pgstore.ErrInvalidInput, As: api.Error{Status: 400, Code: "invalid_request", Message: "a value of the request was refused"}},
	{Err: checkout.ErrNoEntryToken, As: api.Error{Status: 403, Code: "entry_token_invalid", Message: "the X-Entry-Token header is required"}},
	{Err: checkout.ErrUnavailable, As: api.Error{Status: 503, Code: "unavailable", Message: "the shop is briefly unavailable; your entry token is kept, retry the same order", RetryAfter: 1}},
	{Err: checkout.ErrEntryLost, As: api.Error{Status: 503, Code: "unavailable", Message: "the shop is briefly unavailable and your entry window could not be kept: enter again", RetryAfter: 1}},
	{Err: checkout.ErrUnknownUser, As: api.Error{Status: 401, Code: "unauthorized", Message: "this account no longer exists"}},
	{Err: faults.ErrDisabled, As: api.Error{Status: 403, Code: "faults_disabled", Message: "fault injection is off on this instance"}},
}

// storeError is the answer to a store error: its business outcome (the
// table above), 400 with the reason for a value the database refused
// (pgstore.InputError: the request's fault, never an outage), else 503.
func storeError(err error) error {
	var ie *pgstore.InputError
	switch {
	case errors.As(err, &ie):
		return api.BadRequest("a value of the request was refused: " + ie.Reason)
	case pgstore.IsOutcome(err):
		return err
	}
	return errors.Join(api.ErrUnavailable, err)
}

// The public app's own refusals; errorTable maps the packages' sentinel
// errors, and package api writes every error in the contract's form.
var (
	errInvalidCreds = &api.Error{Status: fiber.StatusUnauthorized, Code: "invalid_credentials", Message: "login id or password is wrong"}
	errWrongRoom    = &api.Error{Status: fiber.StatusForbidden, Code: "wrong_room", Message: "this queue token belongs to another room"}
	// errNoDatabase answers the built-in login and the demo order API on an
	// instance without Postgres (gateway mode without DATABASE_URL): they
	// are not there, as any unknown path is not.
	errNoDatabase = &api.Error{Status: fiber.StatusNotFound, Code: "not_found",
		Message: "this gateway runs without a database (DATABASE_URL unset): it has no built-in login, products or orders; visitors enter anonymously"}
)

// checkoutError is the answer to checkout.Place's errors that carry a
// message of their own: a business refusal names its reason, a store error
// is answered by its kind (storeError); the others are the table's.
func checkoutError(err error) error {
	var re *checkout.RefusedError
	var se *checkout.StoreError
	switch {
	case errors.As(err, &re):
		return api.BadRequest("the order was refused: " + re.Err.Error())
	case errors.As(err, &se):
		return storeError(se.Err)
	}
	return err
}

// idleRefusal is the body of 404 not_in_queue for a user the admission run
// dropped as idle (queue.ErrIdle): the contract's error form plus the
// reason and the idle timeout, so the page can say why the place is gone.
type idleRefusal struct {
	Error              string `json:"error"`
	Message            string `json:"message"`
	Reason             string `json:"reason"`
	IdleTimeoutSeconds int64  `json:"idleTimeoutSeconds"`
}

// idleDoc is the idle refusal's JSON: the body of a 404 and the data of a
// stream's gone event.
func (s *Server) idleDoc() []byte {
	timeout := s.presence.Idle()
	j, _ := json.Marshal(idleRefusal{
		Error: "not_in_queue",
		Message: "your place was released after " + spokenDuration(timeout) +
			" without this page checking in (it was closed, asleep or offline): enter again for a new place",
		Reason: "idle", IdleTimeoutSeconds: int64(timeout / time.Second),
	})
	return j
}

// notInQueue answers err: a user dropped as idle gets the idle refusal
// here; any other error goes back to the caller (and to errorTable.Write).
func (s *Server) notInQueue(c *fiber.Ctx, err error) error {
	if !errors.Is(err, queue.ErrIdle) {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(fiber.StatusNotFound).Send(s.idleDoc())
}

// spokenDuration says d in words: "5 minutes", "1 minute", "90 seconds".
func spokenDuration(d time.Duration) string {
	n, unit := int64(d/time.Second), "second"
	if n%60 == 0 && n >= 60 {
		n, unit = n/60, "minute"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.FormatInt(n, 10) + " " + unit
}
