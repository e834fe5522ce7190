package estimate_test

import (
	"testing"
	"time"

	"waitingroom/queue/estimate"
)

// steadyRoom feeds e two minutes of a room with 10 slots whose users all
// order and hold a slot 2 s each (5 admitted a second), departing a
// second waiting users leave, and returns the last forecast.
func steadyRoom(e *estimate.Estimator, departing int64) estimate.Forecast {
	return passingRoom(e, departing, 0, 0)
}

// passingRoom is steadyRoom whose admission also passes over passing
// absent users a second, waiting of them in line still.
func passingRoom(e *estimate.Estimator, departing, passing, waiting int64) estimate.Forecast {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var fc estimate.Forecast
	for s := range int64(121) {
		rem := make([]int64, 25)
		rem[23] = 10 // admitted within the last 2.5 s of a 60 s window (bins of 2.5 s)
		fc = e.Observe(estimate.Sample{At: t0.Add(time.Duration(s) * time.Second), Target: 10, Active: 10,
			EntryTTL: time.Minute, Admitted: 5 * s, Holds: 5 * s, HoldTime: time.Duration(5*s) * 2 * time.Second,
			Departed: departing * s, Passed: passing * s, PassedWaiting: waiting, Remaining: rem, Bin: 2500 * time.Millisecond})
	}
	return fc
}

// The users passed over wait at the front, in everyone's position, and
// nobody waits for them; a share of those behind them will be absent too.
func TestForecastPassesOver(t *testing.T) {
	// 40 passed over wait still: position 140 is where 100 was.
	fc := passingRoom(&estimate.Estimator{}, 0, 0, 40)
	if got, ok := fc.ETA(140); !ok || got < 19 || got > 21 {
		t.Errorf("ETA(140) with 40 passed over = %d, %v; want 20 ± 1", got, ok)
	}
	if got, _ := fc.ETA(30); got != 1 {
		t.Errorf("ETA(30) with 40 passed over = %d; want 1 (a passed-over user back is admitted next)", got)
	}
	// As many passed over as admitted: a = ½, half of those ahead are
	// not waited for.
	fc = passingRoom(&estimate.Estimator{}, 0, 5, 0)
	if got, ok := fc.ETA(100); fc.Absent != 0.5 || !ok || got < 9 || got > 11 {
		t.Errorf("passing: a %.2f, ETA(100) = %d; want 10 ± 1", fc.Absent, got)
	}
}

func TestForecastByHand(t *testing.T) {
	// No no-shows, h = 2 s: 10 ÷ 2 s = 5 admissions a second, so position
	// 100 is reached in 20 s.
	fc := steadyRoom(&estimate.Estimator{}, 0)
	if !fc.Known || fc.Hold != 2*time.Second || fc.NoShow != 0 || fc.Depart != 0 || fc.Rate() != 5 {
		t.Fatalf("forecast = %+v", fc)
	}
	if got, ok := fc.ETA(100); !ok || got < 19 || got > 21 {
		t.Errorf("ETA(100) = %d, %v; want 20 ± 1", got, ok)
	}
	if got, _ := fc.ETA(1); got != 1 {
		t.Errorf("ETA(1) = %d, want 1 (at least a second)", got)
	}
	// As many leave as are admitted: d = ½, positions move twice as fast.
	fc = steadyRoom(&estimate.Estimator{}, 5)
	if got, ok := fc.ETA(100); fc.Depart != 0.5 || !ok || got < 9 || got > 11 {
		t.Errorf("with departures: d %.2f, ETA(100) = %d; want 10 ± 1", fc.Depart, got)
	}
}

func TestForecastWithheld(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	measured := estimate.Sample{At: at, Target: 10, EntryTTL: time.Minute, Admitted: 500, Holds: 500, HoldTime: 1000 * time.Second,
		Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond}
	for _, tt := range []struct {
		name string
		s    estimate.Sample
		why  string
	}{
		{"paused or closed", func() estimate.Sample { s := measured; s.Halted = true; return s }(), estimate.WhyHalted},
		{"nobody admitted", func() estimate.Sample { s := measured; s.Target = 0; return s }(), estimate.WhyNobody},
		{"just opened", estimate.Sample{At: at, Target: 10, EntryTTL: time.Minute, Admitted: 10, Active: 10,
			Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond}, estimate.WhyMeasuring},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e estimate.Estimator
			fc := e.Observe(tt.s)
			if _, ok := fc.ETA(10); ok || fc.Known || fc.Why != tt.why {
				t.Fatalf("forecast %+v, want withheld (%s)", fc, tt.why)
			}
		})
	}
	// An instance that joins a room mid-sale stands in the room's
	// all-time figures until it has seen cohorts of its own.
	var e estimate.Estimator
	s := measured
	s.Expired = 50
	if fc := e.Observe(s); !fc.Known || fc.NoShow != 0.1 || fc.Hold != 2*time.Second {
		t.Fatalf("joined mid-sale: %+v", fc)
	}
}

// TestLongWindowBounded: a room with a three-hour entry window, sampled
// every second for longer than the estimator keeps at full pace, still
// gets a forecast (the older samples are thinned, not lost).
func TestLongWindowBounded(t *testing.T) {
	var e estimate.Estimator
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var fc estimate.Forecast
	for s := range int64(6000) {
		rem := make([]int64, 25)
		rem[23] = 10
		fc = e.Observe(estimate.Sample{At: t0.Add(time.Duration(s) * time.Second), Target: 10, Active: 10,
			EntryTTL: 3 * time.Hour, Admitted: 5 * s, Holds: 5 * s, HoldTime: time.Duration(5*s) * 2 * time.Second,
			Remaining: rem, Bin: 450 * time.Second})
	}
	if got, ok := fc.ETA(100); !fc.Known || !ok || got < 19 || got > 21 {
		t.Fatalf("forecast %+v: ETA(100) = %d, %v; want 20 ± 1", fc, got, ok)
	}
}

// TestDenseSamples: a hub re-reads a busy room many times a second (each
// missed event asks for a read); samples closer than a second reuse the
// last forecast, so the kept samples stay a second apart and the
// measurement over minutes is the same as from one sample a second.
func TestDenseSamples(t *testing.T) {
	var e estimate.Estimator
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var fc estimate.Forecast
	for ms := int64(0); ms <= 600_000; ms += 50 { // 20 a second for 10 minutes
		s := ms / 1000
		rem := make([]int64, 25)
		rem[23] = 10
		fc = e.Observe(estimate.Sample{At: t0.Add(time.Duration(ms) * time.Millisecond), Target: 10, Active: 10,
			EntryTTL: time.Minute, Admitted: 5 * s, Holds: 5 * s, HoldTime: time.Duration(5*s) * 2 * time.Second,
			Remaining: rem, Bin: 2500 * time.Millisecond})
	}
	if got, ok := fc.ETA(100); !fc.Known || !ok || got < 19 || got > 21 || fc.NoShow != 0 {
		t.Fatalf("forecast %+v: ETA(100) = %d, %v; want 20 ± 1 and no no-shows", fc, got, ok)
	}
}

// TestMeasuredStaysMeasured: once the no-show share was measured, seconds
// with too few users of the right age to judge keep the last value; the
// estimate is not withheld again.
func TestMeasuredStaysMeasured(t *testing.T) {
	var e estimate.Estimator
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var fc estimate.Forecast
	for s := range 200 { // an instance joins mid-sale; then nobody is admitted for minutes
		fc = e.Observe(estimate.Sample{At: t0.Add(time.Duration(s) * time.Second), Target: 10, Active: 10,
			EntryTTL: time.Minute, Admitted: 500, Expired: 50, Holds: 450, HoldTime: 900 * time.Second,
			Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond})
		if !fc.Known || fc.NoShow != 0.1 {
			t.Fatalf("after %d s: forecast %+v, want known with p 0.1 throughout", s, fc)
		}
	}
}

// TestPastSaleIsProvisional: an estimator that sees a room only through
// its all-time figures (a past sale's: 2 s holds) says so, and takes the
// prior before them; once it has measured the room's own recent orders
// (4 s holds now) the forecast is measured, and stays so.
func TestPastSaleIsProvisional(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	past := estimate.Sample{At: t0, Target: 10, EntryTTL: time.Minute, Admitted: 500, Expired: 50, Holds: 450,
		HoldTime: 900 * time.Second, Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond}
	var e estimate.Estimator
	if fc := e.Observe(past); !fc.Known || !fc.Provisional || fc.Hold != 2*time.Second {
		t.Fatalf("all-time figures only: %+v, want provisional with h 2 s", fc)
	}
	var withPrior estimate.Estimator
	s := past
	s.Prior = estimate.Prior{Hold: 3 * time.Second, NoShow: 0.2, NoShowKnown: true}
	if fc := withPrior.Observe(s); !fc.Provisional || fc.Hold != 3*time.Second || fc.NoShow != 0.2 {
		t.Fatalf("with the last sale's figures: %+v, want them", fc)
	}
	// The sale runs: 5 orders a second ending, 4 s each, 5 admitted a
	// second, none unused.
	var fc estimate.Forecast
	for k := int64(1); k <= 90; k++ {
		s.At = t0.Add(time.Duration(k) * time.Second)
		s.Admitted, s.Holds, s.HoldTime = past.Admitted+5*k, past.Holds+5*k, past.HoldTime+time.Duration(5*k)*4*time.Second
		fc = withPrior.Observe(s)
		if k > 60 && fc.Provisional {
			t.Fatalf("at %d s still provisional: %+v", k, fc)
		}
	}
	if !fc.Known || fc.Hold < 3500*time.Millisecond {
		t.Fatalf("after 90 s of the sale: %+v, want measured, h near 4 s", fc)
	}
}

// A position the free slots admit at once is admitted by the next
// admission run, a tick away: its ETA is 0, not a second.
func TestForecastFreeSlotsNow(t *testing.T) {
	e := &estimate.Estimator{}
	steadyRoom(e, 0)
	t0 := time.Date(2026, 11, 27, 10, 2, 1, 0, time.UTC)
	rem := make([]int64, 25)
	rem[23] = 6 // 4 of the 10 slots free
	fc := e.Observe(estimate.Sample{At: t0, Target: 10, Active: 6, EntryTTL: time.Minute, Admitted: 605, Holds: 605,
		HoldTime: 1210 * time.Second, Remaining: rem, Bin: 2500 * time.Millisecond})
	for pos, want := range map[int64]int64{1: 0, 4: 0} {
		if got, ok := fc.ETA(pos); !ok || got != want {
			t.Errorf("ETA(%d) with 4 slots free = %d, %v; want %d", pos, got, ok, want)
		}
	}
	if got, ok := fc.ETA(5); !ok || got < 1 {
		t.Errorf("ETA(5) with 4 slots free = %d, %v; want at least 1", got, ok)
	}
}

// Departures while the room admits nobody (a pause, targetActive 0 while
// a finished sale's leftovers leave) say nothing of the share who leave
// while it admits: d is measured against admissions, which stop.
func TestDepartWhileFrozenIgnored(t *testing.T) {
	for _, tt := range []struct {
		name   string
		freeze func(*estimate.Sample)
	}{
		{"paused", func(s *estimate.Sample) { s.Halted = true }},
		{"targetActive 0", func(s *estimate.Sample) { s.Target = 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &estimate.Estimator{}
			steadyRoom(e, 0)
			t0 := time.Date(2026, 11, 27, 10, 2, 0, 0, time.UTC)
			rem := make([]int64, 25)
			rem[23] = 10
			s := estimate.Sample{Target: 10, Active: 10, EntryTTL: time.Minute, Admitted: 600, Holds: 600,
				HoldTime: 1200 * time.Second, Remaining: rem, Bin: 2500 * time.Millisecond}
			for k := range int64(30) { // 30 s frozen, 2 leave a second
				f := s
				f.At, f.Departed = t0.Add(time.Duration(k)*time.Second), 2*(k+1)
				tt.freeze(&f)
				e.Observe(f)
			}
			var fc estimate.Forecast
			for k := range int64(5) { // admitting again, nobody leaves
				f := s
				f.At, f.Departed = t0.Add(time.Duration(30+k)*time.Second), 60
				f.Admitted, f.Holds, f.HoldTime = 600+5*k, 600+5*k, time.Duration(600+5*k)*2*time.Second
				fc = e.Observe(f)
			}
			if !fc.Known || fc.Depart != 0 {
				t.Errorf("after %s: d %.2f (known %v); want 0: the 60 who left while it admitted nobody do not count", tt.name, fc.Depart, fc.Known)
			}
		})
	}
}

// A room empty for 5 s (nobody waiting, active or admitted) has no sale
// under way: the next one starts from the room's prior, provisional, not
// from what the estimator measured of the last sale's last slots. Empty
// for less, the measured figures stand.
func TestEmptyRoomStartsAnew(t *testing.T) {
	for _, tt := range []struct {
		empty       int64 // seconds
		provisional bool
	}{{3, false}, {6, true}} {
		e := &estimate.Estimator{}
		steadyRoom(e, 0)
		t0 := time.Date(2026, 11, 27, 10, 2, 1, 0, time.UTC)
		idle := estimate.Sample{Target: 10, EntryTTL: time.Minute, Admitted: 600, Holds: 600, HoldTime: 1200 * time.Second,
			Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond}
		for k := range tt.empty + 1 {
			s := idle
			s.At = t0.Add(time.Duration(k) * time.Second)
			e.Observe(s)
		}
		next := idle // the next sale's first second: 10 waiting, an operator's 7 s expected
		next.At, next.Waiting, next.Prior = t0.Add(time.Duration(tt.empty+1)*time.Second), 10, estimate.Prior{Hold: 7 * time.Second}
		fc := e.Observe(next)
		wantHold := 2 * time.Second
		if tt.provisional {
			wantHold = 7 * time.Second
		}
		if !fc.Known || fc.Provisional != tt.provisional || fc.Hold != wantHold {
			t.Errorf("empty %d s: known %v provisional %v hold %v; want provisional %v, hold %v",
				tt.empty, fc.Known, fc.Provisional, fc.Hold, tt.provisional, wantHold)
		}
	}
}
