package crowd

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
)

// shopOrigin is a shop behind the gateway that logs every request it
// gets: method, path and whether a pass came with it.
type shopOrigin struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []string
}

func startShop(t *testing.T) *shopOrigin {
	o := &shopOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.URL.Path
		if r.Header.Get("Waitingroom-Pass") != "" {
			line += " (pass)"
		}
		o.mu.Lock()
		o.log = append(o.log, line)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<h1>Checkout</h1>"))
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *shopOrigin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.log...)
}

// TestSmokeCrowdGateway runs the crowd in gateway mode (--gateway) against
// a real server in gateway mode on Redis alone, in front of a shop that
// logs what reaches it, with the proof of work on: shoppers enter
// anonymously under /_wr/, are admitted and make the protected request,
// which reaches the shop with a pass. The shop sees nothing else: no
// /api/v1/... at the root, which the gateway would have forwarded, no
// heartbeat of the crowd's, only what an admitted visitor sends.
func TestSmokeCrowdGateway(t *testing.T) {
	shop := startShop(t)
	s := smoke.StartGateway(t, shop.srv.URL, map[string]string{"WR_GATEWAY_CHALLENGE": "pow", "WR_POW_DIFFICULTY": "4"})
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--room", "sale", "--gateway", "GET /checkout/", "--waiting", "20", "--duration", "5s",
		"--ramp", "1s", "--arrival-gap", "100ms", "--think", "300ms", "--transport", "mix", "--users", "200"))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*crowdReport)
	smoke.LogOnFailure(t, r)
	if r.Entered == 0 || r.Admitted == 0 || r.Ordered == 0 || r.Tokens != "anonymous visitors (gateway mode)" {
		t.Errorf("entered %d, admitted %d, through %d (tokens %q): want some of each, anonymously", r.Entered, r.Admitted, r.Ordered, r.Tokens)
	}
	if r.EnterFailed != 0 || r.OrderFailed != 0 || r.LeaveFailed != 0 || r.PollErrors != 0 || len(r.Failures) != 0 {
		t.Errorf("enter failed %d, protected request failed %d, leaves failed %d, poll errors %d (%v): want 0 each",
			r.EnterFailed, r.OrderFailed, r.LeaveFailed, r.PollErrors, r.Failures)
	}
	if r.Endpoints["challenge"][http.StatusOK] == 0 {
		t.Errorf("no challenge asked for: %v", r.Endpoints)
	}
	got := shop.requests()
	for _, line := range got {
		if line != "GET /checkout/ (pass)" {
			t.Errorf("the shop got %q: want only GET /checkout/ with a pass", line)
		}
	}
	if len(got) < r.Ordered {
		t.Errorf("the shop got %d requests, the crowd counted %d through", len(got), r.Ordered)
	}
	if strings.Contains(strings.Join(got, "\n"), "/api/") {
		t.Errorf("the waiting room's API reached the shop:\n%s", strings.Join(got, "\n"))
	}
}
