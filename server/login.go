package server

import (
	"errors"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/login"
	"waitingroom/server/seclog"
)

type loginRequest struct {
	LoginID  string `json:"loginId"`
	Password string `json:"password"`
}

// login is the only place BCrypt runs (package login: the limits, the
// credentials, BCrypt in a bounded slot). A malformed request is refused
// here, before any limit and before any database call.
func (s *Server) login(c *fiber.Ctx) error {
	if s.logins == nil {
		return errNoDatabase
	}
	var req loginRequest
	if err := api.Decode(c, &req); err != nil {
		return err
	}
	if err := validLoginID(req.LoginID); err != nil {
		return err
	}
	if req.Password == "" || len(req.Password) > 256 {
		return api.BadRequest("password must be 1-256 characters")
	}
	id, err := s.logins.Verify(c.UserContext(), login.Attempt{
		LoginID: req.LoginID, Password: req.Password, Address: s.clientKey(c),
		Limited: s.rl.Applies(c, ""),
	})
	if err != nil {
		return s.loginError(c, req.LoginID, err)
	}
	user := userID(id)
	api.SetUser(c, &user) // for the access line
	tok, err := s.tokens.IssueAccess(user, s.cfg.AccessTTL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"accessToken": tok, "tokenType": "Bearer", "expiresIn": int(s.cfg.AccessTTL.Seconds())})
}

// errLoginBusy: every BCrypt slot stayed taken for two seconds.
var errLoginBusy = &api.Error{Status: 503, Code: "unavailable", RetryAfter: 2,
	Message: "logins are busy right now; retry in a moment (a place in a queue is not affected)"}

// loginError is the answer to login.Verify's errors: wrong credentials are
// a 401 and a login_failed security event; a limit's refusal is its 429
// (rl.Refuse); the limiter or the database down is a 503.
func (s *Server) loginError(c *fiber.Ctx, loginID string, err error) error {
	var refused *login.RefusedError
	var limiter *login.LimiterError
	var store *login.StoreError
	switch {
	case errors.Is(err, login.ErrInvalidCredentials):
		s.sec.Event(c.UserContext(), seclog.LoginFailed, slog.String("address", s.clientIP(c)), slog.String("login_id", seclog.Value(loginID)))
		return errInvalidCreds
	case errors.As(err, &refused):
		return s.rl.Refuse(c, refused.Limit, refused.RetryAfter)
	case errors.Is(err, login.ErrBusy):
		return errLoginBusy
	case errors.As(err, &limiter):
		return errors.Join(api.ErrUnavailable, limiter.Err)
	case errors.As(err, &store):
		return storeError(store.Err)
	}
	return err
}

// validLoginID accepts 1-128 bytes of valid UTF-8 without control
// characters or surrounding spaces: anything else cannot be an account's
// id, and is refused before it reaches a limit key or the database (which
// refuses a NUL byte or invalid UTF-8 itself).
func validLoginID(id string) error {
	if id == "" || len(id) > 128 || strings.TrimSpace(id) != id {
		return api.BadRequest("loginId must be 1-128 characters without surrounding spaces")
	}
	if !utf8.ValidString(id) || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return api.BadRequest("loginId must be valid UTF-8 without control characters")
	}
	return nil
}
