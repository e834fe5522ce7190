package stream

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"waitingroom/queue"
)

// TestGoneSetMatchesASortedList: random departures and admissions applied
// to a goneSet and to a plain sorted list agree on every rank, and every
// earlier set still agrees with the list it had (states share their
// lists, so nothing may write to one once built).
func TestGoneSetMatchesASortedList(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type version struct {
		g       goneSet
		list    []int64
		serving int64
	}
	var g goneSet
	var list []int64
	var serving int64
	var versions []version
	for step := range 3000 {
		if rng.IntN(10) == 0 {
			serving += rng.Int64N(40)
			g = g.above(serving)
			list = slices.DeleteFunc(slices.Clone(list), func(x int64) bool { return x <= serving })
		}
		left := make([]int64, 1+rng.IntN(3))
		for i := range left {
			left[i] = serving - 5 + rng.Int64N(3000) // some at or below serving, some twice
		}
		g = g.with(left, serving)
		list = slices.Clone(list)
		for _, x := range left {
			if x > serving && !slices.Contains(list, x) {
				list = append(list, x)
			}
		}
		slices.Sort(list)
		if step%50 == 0 {
			versions = append(versions, version{g, list, serving})
		}
	}
	versions = append(versions, version{g, list, serving})
	for i, v := range versions {
		if got := v.g.all(); !slices.Equal(got, v.list) || v.g.len() != len(v.list) {
			t.Fatalf("version %d holds %v, want %v", i, got, v.list)
		}
		for x := v.serving - 3; x < v.serving+3010; x++ {
			n, has := v.g.rank(x)
			wn, whas := slices.BinarySearch(v.list, x)
			if n != wn || has != whas {
				t.Fatalf("version %d: rank(%d) = %d, %v; want %d, %v", i, x, n, has, wn, whas)
			}
		}
	}
}

// BenchmarkApply measures applying one departure, then one admission that
// moves serving, to a state holding 150,000 departed tickets.
func BenchmarkApply(b *testing.B) {
	const n = 150_000
	base := make([]int64, n)
	for i := range base {
		base[i] = int64(2*i + 1000)
	}
	s := &roomState{room: "r1", ev: 1, gone: goneSet{base: base}}
	now := time.Now()
	b.ResetTimer()
	for i := range b.N {
		ev := s.ev + 1
		if i%2 == 0 {
			s = s.apply(queue.Event{Room: "r1", Ev: ev, At: now, Left: []int64{int64(2*(i%n) + 1001)}})
		} else {
			s = s.apply(queue.Event{Room: "r1", Ev: ev, At: now, Serving: s.serving + 1})
		}
	}
}
