package stream

import (
	"slices"
	"sort"
)

// goneSet is a room's departed tickets above serving, as two ascending
// lists: base (a snapshot's list, or the last merge) and recent (the
// departures applied since, a short list). States share both lists and
// nothing writes to a list once it is built, so an event makes a new
// state without copying the whole set: advancing serving only reslices
// (O(log n)); a departure copies recent and, once recent outgrows √n,
// merges it into a new base (O(n) every √n departures), so O(√n) a
// departure amortized instead of O(n). At 150,000 departures that is a few
// hundred tickets copied per event instead of the whole set.
type goneSet struct {
	base, recent []int64
}

// mergeMin is the shortest recent list merged into base: below it a
// departure costs little either way.
const mergeMin = 32

// len returns how many tickets the set holds.
func (g goneSet) len() int { return len(g.base) + len(g.recent) }

// rank returns how many tickets of the set are below t, and whether t is
// one of them.
func (g goneSet) rank(t int64) (n int, has bool) {
	i, a := slices.BinarySearch(g.base, t)
	j, b := slices.BinarySearch(g.recent, t)
	return i + j, a || b
}

// above returns the set without the tickets ≤ serving.
func (g goneSet) above(serving int64) goneSet {
	return goneSet{base: after(g.base, serving), recent: after(g.recent, serving)}
}

// after returns the tail of ascending s above v (a reslice, not a copy).
func after(s []int64, v int64) []int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i] > v })
	if i == len(s) {
		return nil
	}
	return s[i:]
}

// with returns the set plus the tickets of left above serving it lacks.
func (g goneSet) with(left []int64, serving int64) goneSet {
	var add []int64
	for _, t := range left {
		if _, has := g.rank(t); !has && t > serving {
			add = append(add, t)
		}
	}
	if len(add) == 0 {
		return g
	}
	r := make([]int64, 0, len(g.recent)+len(add))
	r = append(append(r, g.recent...), add...)
	slices.Sort(r)
	r = slices.Compact(r)
	if len(r) < mergeMin || len(r)*len(r) < len(g.base) {
		return goneSet{base: g.base, recent: r}
	}
	return goneSet{base: merge(g.base, r)}
}

// merge returns the union of ascending a and b, which have no ticket in
// common, in a new list.
func merge(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// all returns the set's tickets, ascending, in a new list.
func (g goneSet) all() []int64 { return merge(g.base, g.recent) }
