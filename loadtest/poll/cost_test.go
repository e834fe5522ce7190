package poll

import (
	"testing"
	"time"

	"waitingroom/loadtest/internal/measure"
)

func TestOpenPace(t *testing.T) {
	for _, c := range []struct {
		code  int
		body  string
		retry string
		wait  time.Duration
		done  bool
	}{
		{200, `{"status":"WAITING","position":3,"pollAfterMs":1000}`, "", time.Second, false},
		{200, `{"status":"WAITING","pollAfterMs":5000,"queueToken":"x"}`, "", 5 * time.Second, false},
		{200, `{"status":"READY","entryToken":"t","pollAfterMs":0}`, "", 0, true},
		{200, `{"status":"WAITING"}`, "", 700 * time.Millisecond, false}, // no pace: the fallback
		{429, `{"error":"rate_limited"}`, "2", 2 * time.Second, false},
		{429, `{"error":"rate_limited"}`, "", 700 * time.Millisecond, false},
		{measure.NoResponse, "", "", 700 * time.Millisecond, false},
	} {
		wait, done := openPace(c.code, []byte(c.body), c.retry, 700*time.Millisecond)
		if wait != c.wait || done != c.done {
			t.Errorf("openPace(%d, %s, %q) = %v, %v; want %v, %v", c.code, c.body, c.retry, wait, done, c.wait, c.done)
		}
	}
}

func TestJSONString(t *testing.T) {
	body := []byte(`{"status":"WAITING","position":7,"queueToken":"eyJ.abc-_","pollAfterMs":1000}`)
	if got := jsonString(body, "queueToken"); got != "eyJ.abc-_" {
		t.Errorf("queueToken = %q", got)
	}
	if got := jsonString(body, "entryToken"); got != "" {
		t.Errorf("absent key = %q", got)
	}
	if got := jsonString([]byte(`{"queueToken":"unterminated`), "queueToken"); got != "" {
		t.Errorf("unterminated = %q", got)
	}
}

// TestSummarize: 2xx are OK; 2xx and 429 are answers (a refused poll ran
// the whole path); per second over the measured time.
func TestSummarize(t *testing.T) {
	p := summarize("server", 8, measure.Summary{Count: 1000, Codes: map[int]int{200: 600, 204: 100, 429: 250, 404: 40, measure.NoResponse: 10}}, 2*time.Second)
	if p.OK != 700 || p.Answered != 950 || p.RPS != 350 || p.AnsweredRPS != 475 || p.Conns != 8 || p.Seconds != 2 {
		t.Fatalf("got %+v, want OK 700, answered 950, 350 and 475 per second", p)
	}
}
