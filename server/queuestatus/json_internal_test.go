package queuestatus

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestStatusFieldsAreEncodingJSON: the streams' hand-built status document
// is byte for byte what encoding/json writes, for every state's shape and
// for strings that need escaping.
func TestStatusFieldsAreEncodingJSON(t *testing.T) {
	if n := reflect.TypeFor[Doc]().NumField(); n != 15 {
		t.Fatalf("Doc has %d fields: teach AppendFields the new ones, then this test", n)
	}
	eta, known, unknown := int64(42), true, false
	in := int64(1500)
	at := time.Date(2026, 12, 1, 0, 30, 0, 123456789, time.UTC)
	local := time.Date(2026, 12, 1, 1, 30, 0, 0, time.FixedZone("x", 3600))
	docs := []Doc{
		{Status: "WAITING", Room: "default", Position: 3, Waiting: 17000, ETASeconds: &eta, ETAKnown: &known, PollAfterMs: 2000},
		{Status: "WAITING", Room: "default", Position: 1, Waiting: 1, ETAKnown: &unknown, PollAfterMs: 0, Paused: true, Message: "back soon"},
		{Status: "WAITING", Room: "default", Position: 9, Waiting: 40, ETASeconds: &eta, ETAKnown: &known, ETAProvisional: true, PollAfterMs: 1000},
		{Status: "READY", Room: "sale-1", EntryToken: "eyJhbGciOi.eyJzdWIi.sig-_", EntryExpiresAt: &at},
		{Status: "READY", Room: "r", EntryToken: "t", EntryExpiresAt: &local},
		{Status: "PREQUEUE", Room: "drop", Position: 9, Waiting: 10, PollAfterMs: 1000, OpensAt: &at, OpensInMs: &in},
		{Status: "CLOSED", Room: "default", PollAfterMs: 30000, QueueToken: "q.t.s"},
		{Status: "WAITING", Room: "<room>&\"x\"", Position: -1, PollAfterMs: -5,
			Message: "line\nbreak \\ tab\t é 😀 \u2028 <b>&amp;</b> \x7f \xff"},
		{},
	}
	for _, d := range docs {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got := append(AppendFields([]byte{'{'}, &d), '}')
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
