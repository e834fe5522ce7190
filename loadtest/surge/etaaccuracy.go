package surge

import (
	"math"
	"slices"
	"time"
)

// ETA accuracy over the whole wait: every WAITING status a surge's user
// was shown (the enter response, each pushed status, each poll or reload
// answer) is compared, once the user is admitted, with the wait that
// really remained: real = admission − shown, and the absolute percentage
// error |eta − real| ÷ real × 100. Estimates shown less than a second
// before the admission are skipped (a rounding would dominate them);
// statuses without etaSeconds (withheld) are counted apart.

// etaShown is one WAITING status a user was shown.
type etaShown struct {
	at    time.Duration // when it was shown, after the run's start
	pos   int64
	eta   int32 // etaSeconds; -1: withheld
	known bool  // etaKnown
}

// maxShown caps the statuses kept per user (a user at the front is pushed
// one per admission tick).
const maxShown = 4000

// minRemaining is the shortest remaining wait an estimate is compared with.
const minRemaining = time.Second

// show records a status the user was shown, if it is WAITING.
func (u *surgeUser) show(at time.Duration, status string, pos int64, eta *int64, known *bool) {
	if status != "WAITING" || len(u.shown) >= maxShown {
		return
	}
	e := etaShown{at: at, pos: pos, eta: -1, known: known != nil && *known}
	if eta != nil {
		e.eta = int32(min(max(*eta, 0), math.MaxInt32))
	}
	u.shown = append(u.shown, e)
}

// estimateError is one shown estimate against the wait that remained.
type estimateError struct {
	at, eta, real time.Duration
	pos           int64
	known         bool
	ape           float64 // percent
}

// estimateErrors compares the estimates a user was shown with its
// admission (after the run's start); withheld counts the statuses shown
// without an estimate.
func estimateErrors(shown []etaShown, admitted time.Duration) (errs []estimateError, withheld int) {
	for _, s := range shown {
		real := admitted - s.at
		switch {
		case real < minRemaining:
			continue
		case s.eta < 0:
			withheld++
			continue
		}
		eta := time.Duration(s.eta) * time.Second
		errs = append(errs, estimateError{at: s.at, eta: eta, real: real, pos: s.pos, known: s.known,
			ape: 100 * math.Abs(float64(eta-real)) / float64(real)})
	}
	return errs, withheld
}

// positionBands are the report's position bands.
var positionBands = []struct {
	name string
	max  int64
}{{"1–100", 100}, {"101–1000", 1000}, {">1000", math.MaxInt64}}

// bandOf is the index of pos's band.
func bandOf(pos int64) int {
	for i, b := range positionBands {
		if pos <= b.max {
			return i
		}
	}
	return len(positionBands) - 1
}

// waitAccuracy is how far the estimates shown over the wait were from the
// waits that remained.
type waitAccuracy struct {
	Users            int            `json:"users"`    // admitted users whose estimates were compared
	Count            int            `json:"count"`    // estimates compared
	Withheld         int            `json:"withheld"` // WAITING statuses without etaSeconds
	Guessed          int            `json:"guessed"`  // of count: etaKnown false
	MedianAPE        float64        `json:"medianAbsPctError"`
	P90APE           float64        `json:"p90AbsPctError"`
	KnownMedianAPE   float64        `json:"knownMedianAbsPctError"` // etaKnown true only
	MedianErrSeconds float64        `json:"medianSignedErrorSeconds"`
	ByBand           []bandAccuracy `json:"byPosition"`
}

// bandAccuracy is the estimates shown at positions of one band.
type bandAccuracy struct {
	Band      string  `json:"band"`
	Count     int     `json:"count"`
	MedianAPE float64 `json:"medianAbsPctError"`
	P90APE    float64 `json:"p90AbsPctError"`
}

// newWaitAccuracy summarizes the estimate errors of users admitted users.
func newWaitAccuracy(errs []estimateError, withheld, users int) waitAccuracy {
	a := waitAccuracy{Users: users, Count: len(errs), Withheld: withheld}
	all, known, signed := make([]float64, 0, len(errs)), []float64{}, make([]float64, 0, len(errs))
	bands := make([][]float64, len(positionBands))
	for _, e := range errs {
		all = append(all, e.ape)
		signed = append(signed, (e.eta - e.real).Seconds())
		if e.known {
			known = append(known, e.ape)
		} else {
			a.Guessed++
		}
		b := bandOf(e.pos)
		bands[b] = append(bands[b], e.ape)
	}
	for _, s := range [][]float64{all, known, signed} {
		slices.Sort(s)
	}
	a.MedianAPE, a.P90APE, a.KnownMedianAPE = percentileF(all, 50), percentileF(all, 90), percentileF(known, 50)
	a.MedianErrSeconds = percentileF(signed, 50)
	for i, b := range bands {
		slices.Sort(b)
		a.ByBand = append(a.ByBand, bandAccuracy{Band: positionBands[i].name, Count: len(b), MedianAPE: percentileF(b, 50), P90APE: percentileF(b, 90)})
	}
	return a
}

// etaPoint is one second of the run's estimates, by when they were shown:
// the median estimate and the median wait that really remained, and the
// median error per position band (BandCount[i] 0: none in band i).
type etaPoint struct {
	T          int        `json:"t"`
	Count      int        `json:"count"`
	APEP50     float64    `json:"medianAbsPctError"`
	ShownP50   float64    `json:"shownMedianSeconds"`
	RealP50    float64    `json:"realMedianSeconds"`
	BandCount  [3]int     `json:"bandCount"`
	BandAPEP50 [3]float64 `json:"bandMedianAbsPctError"`
}

// etaSeries bins the estimate errors by the second they were shown in
// (at most maxTimeline seconds; later ones count in the last).
func etaSeries(errs []estimateError, seconds float64) []etaPoint {
	bins := min(int(math.Ceil(seconds))+1, maxTimeline)
	shown, real, apes := make([][]float64, bins), make([][]float64, bins), make([][]float64, bins)
	band := make([][3][]float64, bins)
	for _, e := range errs {
		i := min(max(int(e.at/time.Second), 0), bins-1)
		shown[i] = append(shown[i], e.eta.Seconds())
		real[i] = append(real[i], e.real.Seconds())
		apes[i] = append(apes[i], e.ape)
		b := bandOf(e.pos)
		band[i][b] = append(band[i][b], e.ape)
	}
	out := make([]etaPoint, bins)
	for i := range out {
		p := &out[i]
		p.T, p.Count = i, len(shown[i])
		p.ShownP50, p.RealP50, p.APEP50 = median(shown[i]), median(real[i]), median(apes[i])
		for b, l := range band[i] {
			p.BandCount[b], p.BandAPEP50[b] = len(l), median(l)
		}
	}
	return out
}

// median sorts v and returns its median (nearest rank); 0 when empty.
func median(v []float64) float64 {
	slices.Sort(v)
	return percentileF(v, 50)
}

// A change made during the run (--slowdown, --limit-change) and how the
// estimates fared after it.
type etaChange struct {
	What      string  `json:"what"`
	AtSeconds float64 `json:"atSeconds"`
	// After is the accuracy of the estimates shown from 30 s after the
	// change on.
	After waitAccuracy `json:"after30s"`
	// ReconvergedSeconds is how long after the change the per-second
	// median error fell to reconvergedPct or below and stayed there for
	// reconvergedHold seconds with estimates shown; -1: it never did.
	ReconvergedSeconds float64 `json:"reconvergedSeconds"`
}

const (
	reconvergedPct  = 20
	reconvergedHold = 10
)

// newETAChange judges the estimates shown after a change at at.
func newETAChange(what string, at time.Duration, errs []estimateError, series []etaPoint) etaChange {
	c := etaChange{What: what, AtSeconds: at.Seconds(), ReconvergedSeconds: -1}
	var after []estimateError
	for _, e := range errs {
		if e.at >= at+30*time.Second {
			after = append(after, e)
		}
	}
	c.After = newWaitAccuracy(after, 0, 0) // users not counted here
	c.ReconvergedSeconds = reconverged(series, at)
	return c
}

// reconverged is the first second from at on whose median error, and that
// of the next reconvergedHold seconds with estimates, is at most
// reconvergedPct, as seconds after at; -1 when none.
func reconverged(series []etaPoint, at time.Duration) float64 {
	for i := range series {
		if time.Duration(series[i].T)*time.Second < at || series[i].Count == 0 {
			continue
		}
		ok, seen := true, 0
		for j := i; j < len(series) && seen < reconvergedHold; j++ {
			if series[j].Count == 0 {
				continue
			}
			seen++
			if series[j].APEP50 > reconvergedPct {
				ok = false
				break
			}
		}
		if ok && seen == reconvergedHold {
			return max(0, (time.Duration(series[i].T)*time.Second - at).Seconds())
		}
	}
	return -1
}
