package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
)

// The attacks of the attack scenario. Each runs from source addresses of
// its own in 127.2.0.0/16 — disjoint from the legitimate crowd's 127.1.x.y
// — is bounded by count and by time, and records what the server answered.
// None of them retries: an attacker does not back off.

// Attack source addresses: one /24 per attack, so a per-address defence
// that bites one attack shows in that attack's figures only.
func stuffingAddr(k int) net.IP { return net.IPv4(127, 2, 0, byte(1+k%250)) }

var (
	stormAddr     = net.IPv4(127, 2, 1, 1)
	idleFloodAddr = net.IPv4(127, 2, 2, 1)
	streamAddr    = net.IPv4(127, 2, 3, 1)
	bombAddr      = net.IPv4(127, 2, 4, 1)
	crossSiteAddr = net.IPv4(127, 2, 5, 1)
	// ownerAddr is the attacked account's owner: an address that has never
	// failed a login.
	ownerAddr = net.IPv4(127, 3, 0, 1)
)

// evilOrigin is the foreign site of the cross-site requests.
const evilOrigin = "https://evil.example"

// attacker is the shared context of one run's attacks.
type attacker struct {
	base, admin, adminToken, room string
	timeout                       time.Duration
	rec                           *measure.Recorder // every attack request, by attack
}

// client returns an API client whose connections all come from src.
func (a *attacker) client(src net.IP, conns int) *client.API {
	return &client.API{Base: a.base, Room: a.room, HTTP: client.NewFrom(src, conns, a.timeout), Rec: a.rec}
}

// enter enters user (an access token) from cl and returns the queue token
// and the name of the cookie the server set with it (wr_queue unless the
// server names it otherwise, e.g. __Host-wr_queue over HTTPS).
func (a *attacker) enter(ctx context.Context, cl *client.API, access string) (qtok, cookie string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+cl.RoomPath("enter"), nil)
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("enter: %w", client.StatusError(resp.StatusCode))
	}
	var st client.QueueStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", "", fmt.Errorf("enter: %w", err)
	}
	cookie = "wr_queue"
	for _, c := range resp.Cookies() {
		if c.Value == st.QueueToken {
			cookie = c.Name
		}
	}
	return st.QueueToken, cookie, nil
}

// send sends req from cl and records its status (0: no answer) under name:
// for the requests client.API.Call cannot make (a raw or form body, a cookie).
func (a *attacker) send(cl *client.API, name string, req *http.Request) {
	start := time.Now()
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		if req.Context().Err() == nil {
			a.rec.Record(name, measure.NoResponse, time.Since(start))
		}
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	a.rec.Record(name, resp.StatusCode, time.Since(start))
}
