package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"waitingroom/queue/queuetest"
	"waitingroom/server/admin/audit"
)

func TestFingerprint(t *testing.T) {
	// SHA-256("abc") begins with these four bytes.
	got := audit.Fingerprint("abc")
	if want := "ba7816bf"; got != want {
		t.Fatalf("Fingerprint(abc) = %q, want %q", got, want)
	}
}

func TestBodyAndDocBounds(t *testing.T) {
	if b, cut := audit.Body([]byte(`{"a":1}`)); b != `{"a":1}` || cut {
		t.Fatalf("a short body: %q %v", b, cut)
	}
	long := strings.Repeat("é", audit.MaxBody) // two bytes each: cut inside one
	b, cut := audit.Body([]byte("x" + long))
	if !cut || len(b) > audit.MaxBody || len(b) < audit.MaxBody-1 || strings.ContainsRune(b, '\uFFFD') {
		t.Fatalf("a long body kept as %d bytes, cut %v", len(b), cut)
	}
	for _, tc := range []struct{ in, want string }{
		{``, `null`},
		{`not json`, `null`},
		{`{ "room": "r1",  "paused": true }`, `{"room":"r1","paused":true}`},
	} {
		if got := string(audit.Doc([]byte(tc.in))); got != tc.want {
			t.Errorf("Doc(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	big, _ := json.Marshal(map[string]string{"deny": strings.Repeat("1", audit.MaxDoc)})
	var s string
	if err := json.Unmarshal(audit.Doc(big), &s); err != nil || !strings.HasSuffix(s, "…") || len(s) != audit.MaxDoc+len("…") {
		t.Fatalf("a big document kept as %d bytes: %v", len(s), err)
	}
}

// TestLogKeepsTheNewest: entries come back newest first, and the log holds
// the last Keep of them.
func TestLogKeepsTheNewest(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := audit.New(rdb, prefix)
	ctx := context.Background()
	for i := range audit.Keep + 5 {
		e := audit.Entry{At: time.Unix(int64(i), 0).UTC(), Method: "PUT", Path: "/admin/x", Before: json.RawMessage(`null`), After: json.RawMessage(`{"i":1}`)}
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.LLen(ctx, prefix+"admin:audit").Val(); n != audit.Keep {
		t.Fatalf("%d entries kept, want %d", n, audit.Keep)
	}
	got, err := l.Recent(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].At.Unix() != audit.Keep+4 || got[2].At.Unix() != audit.Keep+2 || string(got[0].After) != `{"i":1}` {
		t.Fatalf("newest three: %+v", got)
	}
	all, _ := l.Recent(ctx, 5000)
	if len(all) != audit.Keep || all[len(all)-1].At.Unix() != 5 {
		t.Fatalf("all: %d, oldest %v", len(all), all[len(all)-1].At)
	}
}
