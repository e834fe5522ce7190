package crowd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"

	"waitingroom/loadtest/internal/client"
	"waitingroom/server/pow"
)

// gatewayPrefix is where a gateway-mode server keeps the waiting room's
// own page and API; every other path is the origin's.
const gatewayPrefix = "/_wr"

// gatewayVisit is what a crowd's shopper does in gateway mode (--gateway):
// enter anonymously under /_wr/, as the waiting page does — the room's
// challenge first, solved when it asks for one — wait there, and once
// admitted make one protected request (method, path) through the gateway
// with the entry and queue cookies a browser would hold. Nothing else
// reaches the origin: the crowd never sends /api/v1/... to the public
// root, which the gateway would forward.
type gatewayVisit struct {
	method, path string
}

// parseGatewayVisit reads --gateway: "METHOD /path".
func parseGatewayVisit(v string) (*gatewayVisit, error) {
	method, path, ok := strings.Cut(strings.TrimSpace(v), " ")
	path = strings.TrimSpace(path)
	if !ok || method == "" || method != strings.ToUpper(method) || !strings.HasPrefix(path, "/") || strings.HasPrefix(path, gatewayPrefix+"/") {
		return nil, fmt.Errorf("--gateway %q: want a protected request of the origin, METHOD /path, e.g. \"GET /checkout/\"", v)
	}
	return &gatewayVisit{method: method, path: path}, nil
}

// apiBase is where the shoppers find the waiting room's API: base, or
// base/_wr in gateway mode.
func (c crowdConfig) apiBase(base string) string {
	if c.gateway != nil {
		return base + gatewayPrefix
	}
	return base
}

// challenge is the room's answer to GET challenge.
type challenge struct {
	Required   bool   `json:"required"`
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
}

// enter enters shared's room anonymously, as a new visitor, with a solved proof of work when the
// room asks for one. A 403 (the challenge expired or a harder one is due)
// is answered as is: the caller's retry asks for a new one.
func (g *gatewayVisit) enter(ctx context.Context, shared *client.API) (client.QueueStatus, int, error) {
	// A visitor of its own, as a new browser is: the challenge is bound to
	// the identity its answer sets in the wr_visitor cookie.
	jar, _ := cookiejar.New(nil)
	a := *shared
	a.HTTP = &http.Client{Transport: shared.HTTP.Transport, Timeout: shared.HTTP.Timeout, Jar: jar}
	var st client.QueueStatus
	var ch challenge
	code, err := a.Call(ctx, "challenge", http.MethodGet, a.RoomPath("challenge"), "", nil, &ch)
	if err != nil || code != http.StatusOK {
		return st, code, err
	}
	var body any
	if ch.Required {
		if ch.Challenge == "" {
			return st, code, errors.New("challenge: required, but none given")
		}
		body = map[string]string{"challenge": ch.Challenge, "solution": pow.Solve(ch.Challenge, ch.Difficulty)}
	}
	code, err = a.Call(ctx, "enter", http.MethodPost, a.RoomPath("enter"), "", body, &st)
	return st, code, err
}

// visit makes the protected request of an admitted visitor at base (the
// public port, the origin's paths) with the cookies the waiting page left:
// the entry token's and the queue token's. Retried on 429 and 503 only.
func (g *gatewayVisit) visit(ctx context.Context, a client.API, base, queueToken, entryToken string) (int, error) {
	a.Base = base
	cookie := "wr_entry_" + a.Room + "=" + entryToken + "; wr_queue_" + a.Room + "=" + queueToken
	return client.WithRetry(ctx, func() (int, error) {
		return a.Call(ctx, "protected", g.method, g.path, "", nil, nil, "Cookie", cookie, "Accept", "text/html")
	})
}
