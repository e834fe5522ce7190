package queuestatus

import (
	"testing"
	"time"
)

// The fuzz target's seed corpus runs with every `go test`; run it with
// `go test -run '^$' -fuzz FuzzParseBands ./server/queuestatus/`.

func FuzzParseBands(f *testing.F) {
	for _, s := range []string{DefaultBands, "*:1s", "10:1s,*:2s", "", ",", "1:1s,1:1s,*:1s", "*:1s,*:1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBands(s)
		if err != nil {
			return
		}
		if len(b) == 0 || b[len(b)-1].Max != 0 {
			t.Fatalf("%q: the last band must be unbounded: %+v", s, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i-1].Max == 0 || (b[i].Max != 0 && b[i].Max <= b[i-1].Max) {
				t.Fatalf("%q: bands not ascending: %+v", s, b)
			}
		}
		for _, pos := range []int64{1, 100, 1 << 40} {
			if d := b.PollAfter(pos); d < 100*time.Millisecond || d > time.Hour {
				t.Fatalf("%q: PollAfter(%d) = %v", s, pos, d)
			}
		}
	})
}
