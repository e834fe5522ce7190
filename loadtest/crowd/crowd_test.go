package crowd

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
)

// TestSmokeCrowd runs the crowd for a few seconds against a real server,
// with minted tokens and then with logins, and counts: shoppers entered,
// were admitted and ordered, nothing failed, and at the end every shopper
// still in the room left it.
func TestSmokeCrowd(t *testing.T) {
	s := smoke.Start(t)
	common := []string{"--ramp", "1s", "--arrival-gap", "100ms", "--think", "300ms", "--transport", "mix",
		"--first-user", "1", "--users", strconv.Itoa(smoke.Users), "--products", "1"}

	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args(append(common, "--waiting", "30", "--duration", "6s",
		"--mint-tokens", "--jwt-secret", smoke.Secret)...))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*crowdReport)
	smoke.LogOnFailure(t, r)
	if r.StoppedBy != "duration" || r.Interrupted {
		t.Errorf("stopped by %q (interrupted %v), want duration", r.StoppedBy, r.Interrupted)
	}
	// 30 kept waiting, 20 admitted at once and ordering within 0.45 s: more
	// arrive than the 30 of the ramp.
	if r.Entered <= 30 || r.Admitted == 0 || r.Ordered == 0 || r.WaitCount != r.Admitted {
		t.Errorf("entered %d, admitted %d, ordered %d, waits %d: want > 30 entered, some admitted and ordered, a wait per admission",
			r.Entered, r.Admitted, r.Ordered, r.WaitCount)
	}
	if r.EnterFailed != 0 || r.OrderFailed != 0 || r.Gone != 0 || r.LeaveFailed != 0 || r.PollErrors != 0 || len(r.Failures) != 0 {
		t.Errorf("enter failed %d, order failed %d, gone %d, leaves failed %d, poll errors %d (%v): want 0 each",
			r.EnterFailed, r.OrderFailed, r.Gone, r.LeaveFailed, r.PollErrors, r.Failures)
	}
	if r.SentHome == 0 || r.Endpoints["leave"][http.StatusNoContent] < r.SentHome {
		t.Errorf("sent home %d, leaves %v: want every shopper still in the room to leave", r.SentHome, r.Endpoints["leave"])
	}
	// The server may still finish a request whose answer the run stopped
	// reading (an order, then its release): the room is empty once it has.
	var st client.RoomState
	deadline := time.Now().Add(5 * time.Second)
	for st, err = s.RoomState(t); err == nil && (st.Waiting != 0 || st.Active != 0) && time.Now().Before(deadline); st, err = s.RoomState(t) {
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || st.Waiting != 0 || st.Active != 0 {
		t.Errorf("room after the run: waiting %d, active %d (%v), want 0, 0", st.Waiting, st.Active, err)
	}

	// Without --mint-tokens each user logs in once; its token is kept.
	rep, err = Run(t.Context(), &o, s.Args(append(common, "--waiting", "10", "--duration", "3s", "--password", smoke.Password)...))
	if err != nil {
		t.Fatal(err)
	}
	r = rep.(*crowdReport)
	smoke.LogOnFailure(t, r)
	logins := r.Endpoints["login"][http.StatusOK]
	if r.Entered == 0 || r.EnterFailed != 0 || len(r.Failures) != 0 || logins == 0 || logins > r.Arrived {
		t.Errorf("with logins: entered %d (failed %d, %v), logins %d of %d arrivals", r.Entered, r.EnterFailed, r.Failures, logins, r.Arrived)
	}
}
