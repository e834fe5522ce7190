package report

import (
	"testing"
)

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1076: "1,076", 100000000: "100,000,000", -4165: "-4,165"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCountsString(t *testing.T) {
	got := Counts(map[string]int{"timeout": 2, "HTTP 503": 7, "closed by server": 2})
	if want := " (HTTP 503 ×7, closed by server ×2, timeout ×2)"; got != want {
		t.Errorf("Counts = %q, want %q", got, want)
	}
	if got := Counts(nil); got != "" {
		t.Errorf("Counts(nil) = %q, want empty", got)
	}
}
