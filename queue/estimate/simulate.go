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
func simulate(s Sample, p float64, h, tau time.Duration) (step time.Duration, cum []float64, steady float64) {
	ttl := s.EntryTTL
	step = min(max(h/4, 50*time.Millisecond), time.Second)
	horizon := ttl + 2*h
	if horizon/step > maxSteps {
		step = horizon / maxSteps
	}
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
	hs := h.Seconds()
	for i, c := range s.Remaining {
		if c <= 0 {
			continue
		}
		left := time.Duration(i)*s.Bin + s.Bin/2
		age := ttl - left
		if age < tau && hs > 0 {
			surv := (1 - p) * math.Exp(-age.Seconds()/hs)
			showers := float64(c) * surv / (surv + p)
			free(0, max(h-age, h/3), showers)
			free(0, left, float64(c)-showers)
			continue
		}
		free(0, left, float64(c))
	}
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
	if hold := (1-p)*hs + p*ttl.Seconds(); hold > 0 {
		steady = float64(s.Target) / hold
	}
	return step, cum, steady
}
