package surge

import (
	"math"
	"testing"
	"time"
)

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// shownCase is a user admitted 100 s into the run, shown six statuses.
func shownCase() []etaShown {
	return []etaShown{
		{at: secs(10), pos: 50, eta: 90, known: true},   // real 90: 0 %
		{at: secs(20), pos: 500, eta: 100, known: true}, // real 80: 25 %
		{at: secs(40), pos: 1500, eta: 30, known: true}, // real 60: 50 %
		{at: secs(50), pos: 400, eta: -1},               // withheld
		{at: secs(60), pos: 100, eta: 60, known: false}, // real 40: 50 %, a guess
		{at: secs(99.5), pos: 1, eta: 5, known: true},   // real 0.5 s: skipped
		{at: secs(101), pos: 1, eta: 0, known: true},    // after the admission: skipped
	}
}

func TestEstimateErrors(t *testing.T) {
	errs, withheld := estimateErrors(shownCase(), secs(100))
	if withheld != 1 {
		t.Errorf("withheld: got %d, want 1", withheld)
	}
	want := []struct {
		real, ape float64
	}{{90, 0}, {80, 25}, {60, 50}, {40, 50}}
	if len(errs) != len(want) {
		t.Fatalf("compared: got %d, want %d (%+v)", len(errs), len(want), errs)
	}
	for i, w := range want {
		if errs[i].real != secs(w.real) || math.Abs(errs[i].ape-w.ape) > 1e-9 {
			t.Errorf("estimate %d: real %v, APE %v; want %vs, %v %%", i, errs[i].real, errs[i].ape, w.real, w.ape)
		}
	}
}

func TestWaitAccuracy(t *testing.T) {
	errs, withheld := estimateErrors(shownCase(), secs(100))
	a := newWaitAccuracy(errs, withheld, 1)
	// APEs 0, 25, 50, 50: median (nearest rank 2) 25, p90 (rank 4) 50.
	// Signed errors 0, +20, −30, +20: median −30, 0, 20, 20 → 0.
	// etaKnown only: 0, 25, 50 → 25; one guess.
	if a.Users != 1 || a.Count != 4 || a.Withheld != 1 || a.Guessed != 1 || a.MedianAPE != 25 || a.P90APE != 50 || a.KnownMedianAPE != 25 || a.MedianErrSeconds != 0 {
		t.Errorf("got %+v", a)
	}
	// Bands: 1–100 holds 0 % and 50 %; 101–1000 25 %; >1000 50 %.
	want := []bandAccuracy{{"1–100", 2, 0, 50}, {"101–1000", 1, 25, 25}, {">1000", 1, 50, 50}}
	for i, w := range want {
		if a.ByBand[i] != w {
			t.Errorf("band %d: got %+v, want %+v", i, a.ByBand[i], w)
		}
	}
	if z := newWaitAccuracy(nil, 0, 0); z.Count != 0 || z.MedianAPE != 0 || len(z.ByBand) != 3 || z.ByBand[0].Count != 0 {
		t.Errorf("no estimates: got %+v", z)
	}
}

func TestBandOf(t *testing.T) {
	for pos, want := range map[int64]int{1: 0, 100: 0, 101: 1, 1000: 1, 1001: 2, 1 << 40: 2} {
		if got := bandOf(pos); got != want {
			t.Errorf("bandOf(%d): got %d, want %d", pos, got, want)
		}
	}
}

func TestETASeries(t *testing.T) {
	errs, _ := estimateErrors(shownCase(), secs(100))
	s := etaSeries(errs, 70.2)
	if len(s) != 72 {
		t.Fatalf("points: got %d, want 72", len(s))
	}
	p := s[10]
	if p.T != 10 || p.Count != 1 || p.ShownP50 != 90 || p.RealP50 != 90 || p.BandCount != [3]int{1, 0, 0} || p.BandAPEP50[0] != 0 {
		t.Errorf("second 10: got %+v", p)
	}
	if p := s[40]; p.Count != 1 || p.BandCount != [3]int{0, 0, 1} || p.BandAPEP50[2] != 50 || p.RealP50 != 60 {
		t.Errorf("second 40: got %+v", p)
	}
	if p := s[0]; p.Count != 0 || p.ShownP50 != 0 {
		t.Errorf("second 0: got %+v", p)
	}
}

func TestShow(t *testing.T) {
	var u surgeUser
	eta, yes := int64(12), true
	u.show(secs(1), "WAITING", 7, &eta, &yes)
	u.show(secs(2), "WAITING", 6, nil, nil)
	u.show(secs(3), "READY", 0, nil, nil)
	u.show(secs(4), "PREQUEUE", 3, &eta, &yes)
	want := []etaShown{{at: secs(1), pos: 7, eta: 12, known: true}, {at: secs(2), pos: 6, eta: -1}}
	if len(u.shown) != 2 || u.shown[0] != want[0] || u.shown[1] != want[1] {
		t.Errorf("got %+v, want %+v", u.shown, want)
	}
	for range maxShown {
		u.show(secs(5), "WAITING", 1, &eta, &yes)
	}
	if len(u.shown) != maxShown {
		t.Errorf("cap: got %d, want %d", len(u.shown), maxShown)
	}
}

// TestReconverged: the first second from the change on whose median error,
// and the next nine seconds' with estimates, stay at most 20 %.
func TestReconverged(t *testing.T) {
	var series []etaPoint
	for i := range 60 {
		p := etaPoint{T: i, Count: 5, APEP50: 10}
		switch {
		case i >= 20 && i < 33: // the change at 20 s throws the estimates off…
			p.APEP50 = 60
		case i == 36: // …a blip after they settled again at 33 s
			p.APEP50 = 25
		case i == 40 || i == 41: // seconds without estimates do not count
			p.Count, p.APEP50 = 0, 0
		}
		series = append(series, p)
	}
	// From 37 s on, ten seconds with estimates (37–39, 42–48) stay ≤ 20 %.
	if got := reconverged(series, 20*time.Second); got != 17 {
		t.Errorf("reconverged = %v s, want 17", got)
	}
	for i := 50; i < 60; i++ {
		series[i].APEP50 = 90
	}
	if got := reconverged(series, 45*time.Second); got != -1 {
		t.Errorf("never settled: reconverged = %v, want -1", got)
	}
	c := newETAChange("targetActive 50", 20*time.Second, []estimateError{
		{at: 10 * time.Second, ape: 90}, {at: 50 * time.Second, ape: 10}, {at: 55 * time.Second, ape: 30},
	}, series[:50])
	if c.After.Count != 2 || c.After.MedianAPE != 10 || c.ReconvergedSeconds != 17 || c.AtSeconds != 20 {
		t.Errorf("change = %+v", c)
	}
}

func TestLimitChangeAndSlowdownAtFlags(t *testing.T) {
	if n, at, err := parseLimitChange("50@150s"); err != nil || n != 50 || at != 150*time.Second {
		t.Errorf("50@150s = %d %v %v", n, at, err)
	}
	for _, bad := range []string{"50", "0@10s", "x@10s", "5@-1s", "5@soon"} {
		if _, _, err := parseLimitChange(bad); err == nil {
			t.Errorf("--limit-change %q accepted", bad)
		}
	}
	if d, err := shareOrTime("50%", 10*time.Second); err != nil || d != 5*time.Second {
		t.Errorf("50%% of 10 s = %v %v", d, err)
	}
	if d, err := shareOrTime("120s", 10*time.Second); err != nil || d != 120*time.Second {
		t.Errorf("120s = %v %v", d, err)
	}
	if _, err := shareOrTime("150%", time.Second); err == nil {
		t.Error("150% accepted")
	}
}
