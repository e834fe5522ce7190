package queue_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"waitingroom/queue"
)

// TestValidRoom: ValidRoom accepts exactly the names of its doc — 1–64
// characters of a–z, 0–9, '-' and '_', starting with a letter or digit —
// checked against that rule written as a regular expression, on chosen
// names and on random ones.
func TestValidRoom(t *testing.T) {
	rule := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	names := []string{"", "a", "0", "default", "sale-2026_b", "-a", "_a", "A", "a{b}", "a b", "a.b",
		"é", "a\x00", strings.Repeat("a", 64), strings.Repeat("a", 65), "a-", "a_"}
	const alphabet = "az09-_A{}. \x00\xff"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, name := range names {
		if got, want := queue.ValidRoom(name), rule.MatchString(name); got != want {
			t.Errorf("ValidRoom(%q) = %v, want %v", name, got, want)
		}
	}
}
