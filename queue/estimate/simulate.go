package estimate

import (
	"math"
	"time"
)

// maxSteps bounds a forecast's length (a tiny hold with a long window).
const maxSteps = 4000

// simulate runs the room's slots forward from s (see the package comment)
// and returns the step, the admissions expected by each point k·step from
// now (cum[0]: those the free slots admit at once),
// and the steady rate past the horizon.
func simulate(s Sample, p float64, h, tau time.Duration, adm []float64) (step time.Duration, cum []float64, steady float64) {
	ttl := s.EntryTTL
	step = min(max(h/4, 50*time.Millisecond), time.Second)
	// Over one entry window and two holds, at most maxSteps: a long window
	// is run as far as its steps reach, the steady rate after that.
	horizon := min(ttl+2*h, maxSteps*step)
	n := int(horizon/step) + 1
	rel := make([]float64, n+1) // slots freed at each point k·step from now
	// free adds v slots freed d from now, split between the two nearest
	// points so that the mean time is kept.
	free := func(from int, d time.Duration, v float64) {
		x := float64(from) + max(d.Seconds()/step.Seconds(), 0)
		k := int(x)
		frac := x - float64(k)
		if from > 0 && k <= from { // freed after an admission at from: at the earliest the next point
			k, frac = from+1, 0
		}
		if k < n && v > 0 {
			rel[k] += v * (1 - frac)
		}
		if k+1 < n && v > 0 {
			rel[k+1] += v * frac
		}
	}
	heldNow(s, p, h, tau, adm, free)
	// a shower's hold is spread evenly over 0.5h…1.5h, in spread parts
	const spread = 8
	cum = make([]float64, n)
	open, total := float64(s.Target-s.Active), 0.0
	for k := range n {
		open += rel[k]
		a := max(open, 0)
		open -= a
		total += a
		cum[k] = total
		if a == 0 {
			continue
		}
		for m := range spread {
			free(k, time.Duration(float64(h)*(0.5+(float64(m)+0.5)/spread)), a*(1-p)/spread)
		}
		free(k, ttl, a*p)
	}
	if hold := (1-p)*h.Seconds() + p*ttl.Seconds(); hold > 0 {
		steady = float64(s.Target) / hold
	}
	return step, cum, steady
}

// heldNow schedules with free (from point 0) the release of the slots held
// now (Sample.Remaining). A bin of users admitted less than tau ago, in
// part or whole, may hold users who will still order: its count is spread
// over its ages, one second each, in proportion to the users admitted then
// (adm[k]: admitted k…k+1 s ago; nil or too short: evenly) times the odds
// that they still hold a slot, p + (1 − p)·S(a), S(a) = e^(−a/h); of those
// of age a, the share who will order, (1 − p)·S(a) ÷ (p + (1 − p)·S(a)),
// frees the slot after the rest of a hold, the others at the end of their
// window. Every other bin frees at its deadlines (its middle).
func heldNow(s Sample, p float64, h, tau time.Duration, adm []float64, free func(int, time.Duration, float64)) {
	ttl, hs := s.EntryTTL, h.Seconds()
	surv := func(age time.Duration) float64 { // share of showers still deciding
		if hs <= 0 {
			return 0
		}
		return (1 - p) * math.Exp(-age.Seconds()/hs)
	}
	for i, c := range s.Remaining {
		if c <= 0 {
			continue
		}
		// its users' ages; deadlines past the window (the last bin) count
		// as the youngest
		lo, hi := max(ttl-time.Duration(i+1)*s.Bin, 0), max(ttl-time.Duration(i)*s.Bin, time.Second)
		if lo >= tau {
			free(0, time.Duration(i)*s.Bin+s.Bin/2, float64(c))
			continue
		}
		first, last := int(max(lo, 0)/time.Second), int((hi-1)/time.Second)
		weights := make([]float64, 0, last-first+1)
		total := 0.0
		for k := first; k <= last; k++ {
			w := 1.0
			if adm != nil && last < len(adm) {
				w = adm[k]
			}
			age := time.Duration(k)*time.Second + time.Second/2
			w *= p + surv(age)
			weights = append(weights, w)
			total += w
		}
		for j, w := range weights {
			age := time.Duration(first+j)*time.Second + time.Second/2
			part := float64(c) / float64(len(weights))
			if total > 0 {
				part = float64(c) * w / total
			}
			showers := 0.0
			if held := p + surv(age); held > 0 {
				showers = part * surv(age) / held
			}
			free(0, max(h-age, h/3), showers)
			free(0, ttl-age, part-showers)
		}
	}
}
