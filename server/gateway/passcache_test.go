package gateway

import (
	"testing"
	"time"

	"waitingroom/server/pass"
)

func TestPassCache(t *testing.T) {
	var pc passCache
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	c := pass.Claims{Room: "sale", Subject: "v1", PassID: "p1", Mode: pass.ModeSession, IssuedAt: at.Add(-time.Minute), Expiry: at.Add(10 * time.Minute)}
	if _, ok := pc.get("k", c, at); ok {
		t.Fatal("a pass from an empty cache")
	}
	pc.put("k", "signed", c, at)
	with := func(f func(*pass.Claims)) pass.Claims {
		n := c
		if f != nil {
			f(&n)
		}
		return n
	}
	for _, k := range []struct {
		name string
		now  time.Time
		c    pass.Claims
		want bool
	}{
		{"the same claims at once", at, c, true},
		{"exp and iat a little later, within the second", at.Add(900 * time.Millisecond), with(func(n *pass.Claims) {
			n.Expiry = n.Expiry.Add(900 * time.Millisecond)
			n.IssuedAt = n.IssuedAt.Add(900 * time.Millisecond)
		}), true},
		{"a second after it was signed", at.Add(time.Second), c, false},
		{"before it was signed (a clock step back)", at.Add(-time.Millisecond), c, false},
		{"an exp earlier than the cached one's: the slot's end moved back", at, with(func(n *pass.Claims) { n.Expiry = n.Expiry.Add(-time.Millisecond) }), false},
		{"an exp a second later", at, with(func(n *pass.Claims) { n.Expiry = n.Expiry.Add(time.Second) }), false},
		{"an iat earlier than the cached one's", at, with(func(n *pass.Claims) { n.IssuedAt = n.IssuedAt.Add(-time.Millisecond) }), false},
		{"another subject", at, with(func(n *pass.Claims) { n.Subject = "v2" }), false},
		{"another pass id", at, with(func(n *pass.Claims) { n.PassID = "p2" }), false},
		{"another room", at, with(func(n *pass.Claims) { n.Room = "other" }), false},
		{"another mode", at, with(func(n *pass.Claims) { n.Mode = pass.ModeOnce }), false},
	} {
		p, ok := pc.get("k", k.c, k.now)
		if ok != k.want || ok && p != "signed" {
			t.Errorf("%s: get = %q, %v; want %v", k.name, p, ok, k.want)
		}
	}
	if _, ok := pc.get("other", c, at); ok {
		t.Error("a pass for another key")
	}
	// A put a second on sweeps out the passes older than a second.
	pc.put("k2", "signed2", c, at.Add(time.Second))
	if len(pc.m) != 1 {
		t.Errorf("%d passes kept after the sweep, want 1", len(pc.m))
	}
}
