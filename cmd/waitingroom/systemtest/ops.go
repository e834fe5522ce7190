package systemtest

import (
	"strings"
	"testing"
)

// LogLine is the first line of the instance's log holding every one of
// parts, or "".
func (in *Instance) LogLine(parts ...string) string {
	for line := range strings.Lines(in.Logs.String()) {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}

// Scrape is the instance's /metrics as text.
func Scrape(t *testing.T, in *Instance) string {
	t.Helper()
	r := Do(t, "GET", in.Admin+"/metrics", "", nil)
	if r.Status != 200 {
		t.Fatalf("/metrics: %d", r.Status)
	}
	return r.Raw
}
