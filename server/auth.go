package server

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/server/api"
	"waitingroom/server/pgstore"
	"waitingroom/server/seclog"
	"waitingroom/server/token"
)

type loginRequest struct {
	LoginID  string `json:"loginId"`
	Password string `json:"password"`
}

// login is the only place BCrypt runs. The user row is read and its pooled
// connection returned BEFORE BCrypt runs; an unknown login id is verified
// against a dummy hash so both answers take the same time. The limits
// (ratelimits.go, loginGate) count failures and decide before BCrypt; a
// malformed request is refused before any of them, and before any database
// call.
func (s *Server) login(c *fiber.Ctx) error {
	ctx := c.UserContext()
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
	settle, err := s.loginGate(c, req.LoginID)
	if err != nil {
		return err
	}
	ok, id, err := s.checkPassword(ctx, req.LoginID, req.Password)
	if settle != nil {
		// No verdict (the database could not answer) is not a failure:
		// nothing was verified, nothing learnt.
		settle(err == nil && !ok)
	}
	if err != nil {
		return err
	}
	if !ok {
		s.sec.Event(ctx, seclog.LoginFailed, slog.String("address", s.clientIP(c)), slog.String("login_id", seclog.Value(req.LoginID)))
		return errInvalidCreds
	}
	tok, err := s.tokens.IssueAccess(userID(id), s.cfg.AccessTTL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"accessToken": tok, "tokenType": "Bearer", "expiresIn": int(s.cfg.AccessTTL.Seconds())})
}

// checkPassword reads the user's credentials and verifies password, against
// a dummy hash when the login id is unknown (same time either way).
func (s *Server) checkPassword(ctx context.Context, loginID, password string) (ok bool, id int64, err error) {
	id, hash, err := s.store.Credentials(ctx, loginID)
	switch {
	case errors.Is(err, pgstore.ErrUserNotFound):
		_, err := s.verifyPassword(ctx, s.dummy(), password)
		return false, 0, err
	case err != nil:
		return false, 0, api.StoreError(err)
	}
	ok, err = s.verifyPassword(ctx, hash, password)
	return ok, id, err
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

// bcryptWait is how long a login waits for a BCrypt slot before it is
// answered 503 with Retry-After.
const bcryptWait = 2 * time.Second

// errLoginBusy: every BCrypt slot stayed taken for bcryptWait.
var errLoginBusy = &api.Error{Status: 503, Code: "unavailable", RetryAfter: 2,
	Message: "logins are busy right now; retry in a moment (a place in a queue is not affected)"}

// verifyPassword runs one BCrypt verification in one of the instance's
// BCrypt slots (WR_BCRYPT_CONCURRENCY, by default half the cores). The
// per-address and per-account limits bound what one client can make
// BCrypt do, but not what many addresses together can: the slots bound
// the CPU that logins can take from everything else — polls, enters,
// streams and orders keep the other cores whatever arrives at login. A
// login that finds no slot free within bcryptWait gets errLoginBusy
// (nothing was verified: it is not counted as a failure).
func (s *Server) verifyPassword(ctx context.Context, hash []byte, password string) (bool, error) {
	wait := time.NewTimer(bcryptWait)
	defer wait.Stop()
	select {
	case s.bcryptSlots <- struct{}{}:
	case <-ctx.Done():
		return false, errLoginBusy
	case <-wait.C:
		s.m.bcryptBusy.Inc()
		return false, errLoginBusy
	}
	defer func() { <-s.bcryptSlots }()
	start := time.Now()
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	s.m.bcrypt.Observe(time.Since(start).Seconds())
	return err == nil, nil
}

// dummy returns a hash of the configured cost, made once.
func (s *Server) dummy() []byte {
	s.dummyOnce.Do(func() {
		s.dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a password of anyone"), s.cfg.BcryptCost)
	})
	return s.dummyHash
}

// bearer returns the token of an "Authorization: Bearer" header, or "".
func bearer(c *fiber.Ctx) string {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// accessClaims verifies the request's access token.
func (s *Server) accessClaims(c *fiber.Ctx) (*token.Claims, error) {
	raw := api.Bearer(c)
	if raw == "" {
		return nil, api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindAccess)
	if err != nil {
		return nil, err
	}
	return claims, s.checkUser(claims.Subject)
}

// queueCookie is the HttpOnly cookie that enter sets with the queue token
// over plain HTTP; over HTTPS it is queueCookieHost (origin.go), which the
// /api/v1 gate hands to every handler under this name.
const queueCookie = "wr_queue"

// queueClaims verifies the request's queue token, from the Authorization
// header or the queue cookie.
func (s *Server) queueClaims(c *fiber.Ctx) (*token.Claims, error) {
	raw := api.Bearer(c)
	if raw == "" {
		raw = c.Cookies(queueCookie)
	}
	if raw == "" {
		return nil, api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindQueue)
	if err != nil {
		return nil, err
	}
	return claims, s.checkUser(claims.Subject)
}

// userID formats a database user id as the token subject and queue member.
func userID(id int64) string { return strconv.FormatInt(id, 10) }
