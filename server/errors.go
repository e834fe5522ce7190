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
)

// The public app's own refusals; package api maps the packages' sentinel
// errors and writes every error in the contract's form.
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
// is answered by its kind (api.StoreError); the others are the table's.
func checkoutError(err error) error {
	var re *checkout.RefusedError
	var se *checkout.StoreError
	switch {
	case errors.As(err, &re):
		return api.BadRequest("the order was refused: " + re.Err.Error())
	case errors.As(err, &se):
		return api.StoreError(se.Err)
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
// here; any other error goes back to the caller (and to api.Write).
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
