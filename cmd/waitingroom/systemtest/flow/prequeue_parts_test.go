package flow

import (
	"context"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestAdminPrequeueParts: prequeueParts is shown in a room's view, set by
// PUT /admin/rooms/{room} within 1 to 16 (else 400 in the contract's
// form), counted in preQueue across the parts, recorded in the room's
// definition, and refused with 409 prequeue_not_empty while anyone is
// pre-queued.
func TestAdminPrequeueParts(t *testing.T) {
	systemtest.QuickBeside(t)
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	ctx := context.Background()
	for _, bad := range []string{`{"prequeueParts":0}`, `{"prequeueParts":17}`, `{"prequeueParts":-1}`,
		`{"prequeueParts":"3"}`, `{"prequeueParts":2.5}`, `{"prequeueParts":4294967297}`, `{"prequeueParts":1e20}`,
		`{"prequeueParts":null,"prequeueParts":[3]}`} {
		if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/drop", systemtest.TestAdminToken, bad); r.Status != 400 || r.Str("error") != "invalid_request" || r.Str("message") == "" {
			t.Errorf("PUT %s = %d %s, want 400 invalid_request with a message", bad, r.Status, r.Raw)
		}
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/plain", systemtest.TestAdminToken, `{"targetActive":5}`); r.Status != 200 || r.Body["prequeueParts"] != 1.0 {
		t.Fatalf("PUT plain = %d %s, want prequeueParts 1", r.Status, r.Raw)
	}
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/drop", systemtest.TestAdminToken,
		`{"targetActive":5,"method":"random","opensAt":"2031-05-01T12:00:00Z","prequeueParts":3}`)
	if r.Status != 200 || r.Body["prequeueParts"] != 3.0 || r.Body["shuffleParts"] != 1.0 {
		t.Fatalf("PUT drop = %d %s", r.Status, r.Raw)
	}
	for _, u := range []string{"ann", "bob", "cat", "dan"} {
		if _, err := in.Parts.Queue.Enter(ctx, "drop", u); err != nil {
			t.Fatal(err)
		}
	}
	if g := in.AdminRoom("drop"); g.Body["prequeueParts"] != 3.0 || g.Body["preQueue"] != 4.0 {
		t.Fatalf("GET drop = %s, want 3 parts holding 4", g.Raw)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/drop", systemtest.TestAdminToken, `{"prequeueParts":2}`); r.Status != 409 || r.Str("error") != "prequeue_not_empty" || r.Str("message") == "" {
		t.Fatalf("PUT drop parts 2 with 4 pre-queued = %d %s, want 409 prequeue_not_empty", r.Status, r.Raw)
	}
	if g := in.AdminRoom("drop"); g.Body["prequeueParts"] != 3.0 || g.Body["preQueue"] != 4.0 {
		t.Fatalf("GET drop after the refused change = %s, want 3 parts holding 4 still", g.Raw)
	}
	// The same number again is no change, and no conflict.
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/drop", systemtest.TestAdminToken, `{"prequeueParts":3}`); r.Status != 200 {
		t.Fatalf("PUT drop parts 3 again = %d %s", r.Status, r.Raw)
	}
	defs, err := in.Parts.RoomRecord.RoomDefinitions(ctx)
	if err != nil || defs["drop"].PrequeueParts != 3 || defs["plain"].PrequeueParts > 1 {
		t.Fatalf("definitions %+v, %v", defs, err)
	}
}
