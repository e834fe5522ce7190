package resetroom

import (
	"net/http"
	"testing"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
)

// TestSmokeResetRoom: a room left adaptive, paused, random and scheduled is
// put back to the demo's settings.
func TestSmokeResetRoom(t *testing.T) {
	s := smoke.Start(t)
	adm := &client.Admin{Base: s.Admin, Token: smoke.AdminToken, Room: "default", HTTP: http.DefaultClient}
	left := map[string]any{"targetActive": 7, "mode": "adaptive", "paused": true, "method": "random",
		"opensAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	if err := adm.Do(t.Context(), http.MethodPut, left, nil); err != nil {
		t.Fatal(err)
	}
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--target", "25", "--wait-ready", "10s"))
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := adm.Do(t.Context(), http.MethodGet, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got.TargetActive != 25 || got.Mode != "fixed" || got.Paused || got.Method != "fifo" || got.OpensAt != nil {
		t.Errorf("room after reset-room: %+v, want targetActive 25, fixed, not paused, fifo, no opening", got)
	}
	if r := rep.(*Report); r.Room != "default" || r.TargetActive != 25 {
		t.Errorf("report %+v, want room default at 25", r)
	}
}
