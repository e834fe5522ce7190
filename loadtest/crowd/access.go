package crowd

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/mint"
)

// accessSource hands the crowd's shoppers their access tokens: minted from
// the server's secret (no BCrypt at all), or logged in — each user once,
// loginConns at a time, the token kept until shortly before it expires —
// so that a crowd cycling through thousands of users never turns into a
// BCrypt storm.
type accessSource struct {
	mt       *mint.Minter
	first    int
	password string
	sem      chan struct{}
	mu       sync.Mutex
	kept     map[int]keptToken
}

// keptToken is a logged-in user's access token and when to stop using it.
type keptToken struct {
	tok   string
	until time.Time
}

func newAccessSource(mt *mint.Minter, first int, password string, conns int) *accessSource {
	return &accessSource{mt: mt, first: first, password: password, sem: make(chan struct{}, conns), kept: map[int]keptToken{}}
}

// kind says where the tokens come from, for the start line and the report.
func (s *accessSource) kind() string {
	switch {
	case s == nil:
		return "anonymous visitors (gateway mode)"
	case s.mt != nil:
		return "minted"
	}
	return "logged in once per user"
}

// token is user index i's access token; a login goes through a, the
// shopper's own client (its source address).
func (s *accessSource) token(ctx context.Context, i int, a *client.API) (string, error) {
	if s.mt != nil {
		return s.mt.Access(int64(s.first + i))
	}
	s.mu.Lock()
	k, ok := s.kept[i]
	s.mu.Unlock()
	if ok && time.Now().Before(k.until) {
		return k.tok, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-s.sem }()
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpiresIn   int64  `json:"expiresIn"`
	}
	body := map[string]string{"loginId": "user" + strconv.Itoa(s.first+i), "password": s.password}
	code, err := client.WithRetry(ctx, func() (int, error) {
		return a.Call(ctx, "login", http.MethodPost, "/api/v1/auth/login", "", body, &out)
	})
	if err == nil && code != http.StatusOK {
		err = client.StatusError(code)
	}
	if err != nil {
		return "", err
	}
	// Kept until a minute before it expires, so no enter meets an expired one.
	life := max(time.Duration(out.ExpiresIn)*time.Second-time.Minute, 0)
	s.mu.Lock()
	s.kept[i] = keptToken{tok: out.AccessToken, until: time.Now().Add(life)}
	s.mu.Unlock()
	return out.AccessToken, nil
}
