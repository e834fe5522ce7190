package access_test

import (
	"errors"
	"net"
	"slices"
	"testing"

	"waitingroom/queue/queuetest"
	"waitingroom/server/access"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		entries []string
		ip      string
		user    string
		wantIP  bool
		wantUsr bool
		wantErr string
	}{
		{entries: []string{"198.51.100.7"}, ip: "198.51.100.7", wantIP: true},
		{entries: []string{"198.51.100.7"}, ip: "198.51.100.8"},
		{entries: []string{" 203.0.113.0/24 "}, ip: "203.0.113.200", wantIP: true},
		{entries: []string{"2001:db8::1"}, ip: "2001:db8::1", wantIP: true},
		{entries: []string{"2001:db8::/64"}, ip: "2001:db8::ffff", wantIP: true},
		{entries: []string{"user:42", ""}, user: "42", wantUsr: true, ip: "198.51.100.7"},
		{entries: []string{"203.0.113.0/24"}, ip: "not an ip"},
		{entries: []string{"user:"}, wantErr: `entry "user:": empty user id`},
		{entries: []string{"example.com"}, wantErr: `entry "example.com": want an IP, a CIDR or user:<id>`},
	} {
		l, err := access.Parse(tc.entries)
		if tc.wantErr != "" {
			var ee *access.EntryError
			if !errors.As(err, &ee) || err.Error() != tc.wantErr {
				t.Errorf("Parse(%q) error = %v, want %q", tc.entries, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.entries, err)
		}
		if got := l.HasIP(net.ParseIP(tc.ip)); got != tc.wantIP {
			t.Errorf("Parse(%q).HasIP(%q) = %v, want %v", tc.entries, tc.ip, got, tc.wantIP)
		}
		if got := l.HasUser(tc.user); got != tc.wantUsr {
			t.Errorf("Parse(%q).HasUser(%q) = %v, want %v", tc.entries, tc.user, got, tc.wantUsr)
		}
	}
}

// TestReplaceAndLoad: a replacement written by one instance is what another
// loads; absent lists stay; an invalid entry names its list and writes
// nothing.
func TestReplaceAndLoad(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	ctx := t.Context()
	a, b := access.New(rdb, prefix), access.New(rdb, prefix)
	deny, allow := []string{"198.51.100.7", " user:9 ", ""}, []string{"203.0.113.0/24"}
	if err := a.Replace(ctx, access.Update{Deny: &deny, Allow: &allow}); err != nil {
		t.Fatal(err)
	}
	if b.Current().Deny.HasUser("9") {
		t.Fatal("lists in force before the first load")
	}
	mustLoad(t, b)
	got := b.Current()
	if want := []string{"198.51.100.7", "user:9"}; !sameSet(got.Deny.Entries(), want) {
		t.Fatalf("deny = %q, want %q", got.Deny.Entries(), want)
	}
	if !got.Deny.HasUser("9") || !got.Allow.HasIP(net.ParseIP("203.0.113.9")) || len(got.Bypass.Entries()) != 0 {
		t.Fatalf("loaded lists = %+v", got)
	}

	bad, bypass := []string{"10.0.0.1", "nonsense"}, []string{"user:1"}
	err := a.Replace(ctx, access.Update{Bypass: &bypass, Allow: &bad})
	var ee *access.EntryError
	if !errors.As(err, &ee) || ee.List != "allow" || err.Error() != `allow: entry "nonsense": want an IP, a CIDR or user:<id>` {
		t.Fatalf("invalid replacement: error %v", err)
	}
	mustLoad(t, b)
	if got := b.Current(); got.Bypass.HasUser("1") || !got.Allow.HasIP(net.ParseIP("203.0.113.9")) {
		t.Fatalf("a refused replacement changed the lists: %+v", got)
	}

	empty := []string{}
	if err := a.Replace(ctx, access.Update{Deny: &empty}); err != nil {
		t.Fatal(err)
	}
	mustLoad(t, b)
	if got := b.Current(); len(got.Deny.Entries()) != 0 || !got.Allow.HasIP(net.ParseIP("203.0.113.9")) {
		t.Fatalf("after emptying deny: %+v", got)
	}
}

func mustLoad(tb testing.TB, l *access.Lists) {
	tb.Helper()
	if err := l.Load(tb.Context()); err != nil {
		tb.Fatal(err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
