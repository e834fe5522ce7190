package server

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/server/pgstore"
)

// errDBUnavailable: Postgres could not answer in time.
var errDBUnavailable = &apiError{status: 503, code: "unavailable", message: "the service is briefly unavailable; retry shortly", retryAfter: 1}

type loginRequest struct {
	LoginID  string `json:"loginId"`
	Password string `json:"password"`
}

// login is the only place BCrypt runs. The user row is read and its pooled
// connection returned BEFORE BCrypt runs; an unknown login id is verified
// against a dummy hash so both answers take the same time.
func (s *Server) login(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if err := s.limit(c, "login_ip", s.clientIP(c), "", s.cfg.Limits.LoginIP, false); err != nil {
		return err
	}
	var req loginRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.LoginID == "" || len(req.LoginID) > 128 || strings.TrimSpace(req.LoginID) != req.LoginID {
		return errBadRequest("loginId must be 1-128 characters without surrounding spaces")
	}
	if req.Password == "" || len(req.Password) > 256 {
		return errBadRequest("password must be 1-256 characters")
	}
	if err := s.limit(c, "login_id", req.LoginID, "", s.cfg.Limits.LoginID, false); err != nil {
		return err
	}
	id, hash, err := s.store.Credentials(ctx, req.LoginID)
	switch {
	case errors.Is(err, pgstore.ErrUserNotFound):
		s.verifyPassword(s.dummy(), req.Password)
		return errInvalidCreds
	case err != nil:
		return errors.Join(errDBUnavailable, err)
	}
	if !s.verifyPassword(hash, req.Password) {
		return errInvalidCreds
	}
	tok, err := s.tokens.IssueAccess(userID(id), s.cfg.AccessTTL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"accessToken": tok, "tokenType": "Bearer", "expiresIn": int(s.cfg.AccessTTL.Seconds())})
}

func (s *Server) verifyPassword(hash []byte, password string) bool {
	start := time.Now()
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	s.m.bcrypt.Observe(time.Since(start).Seconds())
	return err == nil
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
func (s *Server) accessClaims(c *fiber.Ctx) (*Claims, error) {
	raw := bearer(c)
	if raw == "" {
		return nil, errUnauthorized
	}
	claims, err := s.tokens.Parse(raw, KindAccess)
	if err != nil {
		return nil, err
	}
	return claims, s.checkUser(claims.Subject)
}

// queueCookie is the HttpOnly cookie that enter sets with the queue token.
const queueCookie = "wr_queue"

// queueClaims verifies the request's queue token, from the Authorization
// header or the wr_queue cookie.
func (s *Server) queueClaims(c *fiber.Ctx) (*Claims, error) {
	raw := bearer(c)
	if raw == "" {
		raw = c.Cookies(queueCookie)
	}
	if raw == "" {
		return nil, errUnauthorized
	}
	claims, err := s.tokens.Parse(raw, KindQueue)
	if err != nil {
		return nil, err
	}
	return claims, s.checkUser(claims.Subject)
}
