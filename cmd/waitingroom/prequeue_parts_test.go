package main

import (
	"context"
	"testing"
)

// TestAdminPrequeueParts: prequeueParts is shown in a room's view, set by
// PUT /admin/rooms/{room} within 1 to 16 (else 400 in the contract's
// form), counted in preQueue across the parts, recorded in the room's
// definition, and refused with 409 prequeue_not_empty while anyone is
// pre-queued.
func TestAdminPrequeueParts(t *testing.T) {
	quickBeside(t)
	e := newEnv(t)
	in := e.start(nil)
	ctx := context.Background()
	for _, bad := range []string{`{"prequeueParts":0}`, `{"prequeueParts":17}`, `{"prequeueParts":-1}`,
		`{"prequeueParts":"3"}`, `{"prequeueParts":2.5}`, `{"prequeueParts":4294967297}`, `{"prequeueParts":1e20}`,
		`{"prequeueParts":null,"prequeueParts":[3]}`} {
		if r := do(t, "PUT", in.admin+"/admin/rooms/drop", testAdminToken, bad); r.status != 400 || r.str("error") != "invalid_request" || r.str("message") == "" {
			t.Errorf("PUT %s = %d %s, want 400 invalid_request with a message", bad, r.status, r.raw)
		}
	}
	if r := do(t, "PUT", in.admin+"/admin/rooms/plain", testAdminToken, `{"targetActive":5}`); r.status != 200 || r.body["prequeueParts"] != 1.0 {
		t.Fatalf("PUT plain = %d %s, want prequeueParts 1", r.status, r.raw)
	}
	r := do(t, "PUT", in.admin+"/admin/rooms/drop", testAdminToken,
		`{"targetActive":5,"method":"random","opensAt":"2031-05-01T12:00:00Z","prequeueParts":3}`)
	if r.status != 200 || r.body["prequeueParts"] != 3.0 || r.body["shuffleParts"] != 1.0 {
		t.Fatalf("PUT drop = %d %s", r.status, r.raw)
	}
	for _, u := range []string{"ann", "bob", "cat", "dan"} {
		if _, err := in.parts.Queue.Enter(ctx, "drop", u); err != nil {
			t.Fatal(err)
		}
	}
	if g := in.adminRoom("drop"); g.body["prequeueParts"] != 3.0 || g.body["preQueue"] != 4.0 {
		t.Fatalf("GET drop = %s, want 3 parts holding 4", g.raw)
	}
	if r := do(t, "PUT", in.admin+"/admin/rooms/drop", testAdminToken, `{"prequeueParts":2}`); r.status != 409 || r.str("error") != "prequeue_not_empty" || r.str("message") == "" {
		t.Fatalf("PUT drop parts 2 with 4 pre-queued = %d %s, want 409 prequeue_not_empty", r.status, r.raw)
	}
	if g := in.adminRoom("drop"); g.body["prequeueParts"] != 3.0 || g.body["preQueue"] != 4.0 {
		t.Fatalf("GET drop after the refused change = %s, want 3 parts holding 4 still", g.raw)
	}
	// The same number again is no change, and no conflict.
	if r := do(t, "PUT", in.admin+"/admin/rooms/drop", testAdminToken, `{"prequeueParts":3}`); r.status != 200 {
		t.Fatalf("PUT drop parts 3 again = %d %s", r.status, r.raw)
	}
	defs, err := in.parts.definitions.RoomDefinitions(ctx)
	if err != nil || defs["drop"].PrequeueParts != 3 || defs["plain"].PrequeueParts > 1 {
		t.Fatalf("definitions %+v, %v", defs, err)
	}
}
