package measure

import "math"

// Histogram is one Prometheus histogram read from /metrics, summed over its
// label sets. Two snapshots taken before and after a run give the run's own
// observations: after.Sub(before).
type Histogram struct {
	Sum     float64
	Count   float64
	Buckets []Bucket // cumulative, ascending by LE; normally the last is +Inf
}

// Bucket is a cumulative histogram bucket: Count observations were ≤ LE.
type Bucket struct {
	LE    float64
	Count float64
}

// Sub returns h − before: what was observed between the two snapshots.
// A negative Count means the counters were reset (the server restarted).
func (h Histogram) Sub(before Histogram) Histogram {
	prev := make(map[float64]float64, len(before.Buckets))
	for _, b := range before.Buckets {
		prev[b.LE] = b.Count
	}
	d := Histogram{Sum: h.Sum - before.Sum, Count: h.Count - before.Count}
	for _, b := range h.Buckets {
		d.Buckets = append(d.Buckets, Bucket{LE: b.LE, Count: b.Count - prev[b.LE]})
	}
	return d
}

// Mean is Sum ÷ Count, or 0 without observations.
func (h Histogram) Mean() float64 {
	if h.Count <= 0 {
		return 0
	}
	return h.Sum / h.Count
}

// MaxBucket bounds the largest observation by bucket bounds: it lies in
// (lo, hi], hi being the lowest bound whose cumulative count reaches Count —
// the highest bucket that holds any observation. hi is +Inf when the largest
// observation is above every finite bound. ok is false without observations.
func (h Histogram) MaxBucket() (lo, hi float64, ok bool) {
	if h.Count <= 0 {
		return 0, 0, false
	}
	for _, b := range h.Buckets {
		if b.Count >= h.Count {
			return lo, b.LE, true
		}
		lo = b.LE
	}
	return lo, math.Inf(1), true
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the observations,
// interpolating linearly inside the bucket that holds it (from 0 for the
// first); above every finite bound it is the highest finite bound. 0
// without observations.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count <= 0 {
		return 0
	}
	rank := q * h.Count
	lo, prev := 0.0, 0.0
	for _, b := range h.Buckets {
		if b.Count >= rank {
			if math.IsInf(b.LE, 1) {
				return lo
			}
			if b.Count == prev {
				return b.LE
			}
			return lo + (b.LE-lo)*(rank-prev)/(b.Count-prev)
		}
		lo, prev = b.LE, b.Count
	}
	return lo
}
