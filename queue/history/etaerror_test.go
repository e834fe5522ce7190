package history_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"waitingroom/queue/estimate"
	"waitingroom/queue/history"
	"waitingroom/queue/queuetest"
)

// TestETAErrors judges hand-made points: the last in line at 0 s (ticket
// 10) was promised 20 s and had their turn at 25 s (head past 10), the
// one at 5 s (ticket 12) 15 s for 20 s — 20 % and 25 % —; a withheld
// estimate, one whose wait was too short to judge, and one not served yet
// are left out.
func TestETAErrors(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	pt := func(sec, waiting, eta, seq, head int64) history.Point {
		return history.Point{At: t0.Add(time.Duration(sec) * time.Second), Waiting: waiting, ETA: eta, Seq: seq, Head: head}
	}
	pts := []history.Point{
		pt(0, 10, 20, 10, 1),
		pt(5, 12, 15, 12, 3),
		pt(6, 12, -1, 12, 3),  // withheld
		pt(20, 8, 3, 13, 6),   // served at 25 s: 5 s, too short to judge
		pt(24, 5, 9, 13, 9),   // served at 25 s: too short
		pt(25, 2, 40, 14, 11), // ticket 10 served
		pt(25, 1, 30, 14, 14), // tickets 12 and 13 served
		pt(40, 1, 9, 14, 14),  // ticket 14 never served in these points
	}
	got := history.ETAErrors(pts)
	if got.Count != 2 || got.MedianPct != 20 || got.P90Pct != 25 || got.MedianErr != -5 {
		t.Fatalf("ETAErrors = %+v, want 2 judged: median 20 %%, p90 25 %%, median −5 s", got)
	}
	// The user in the middle at 0 s (ticket 5) was promised 10 s and had
	// their turn at 20 s (the first head past 5): 50 % off.
	pts[0].ETAMid, pts[0].MidTicket = 10, 5
	if got := history.ETAErrors(pts); got.Count != 3 || got.MedianPct != 25 || got.P90Pct != 50 {
		t.Fatalf("with a middle estimate: %+v, want 3 judged: median 25 %%, p90 50 %%", got)
	}
	if z := history.ETAErrors(nil); z != (history.ETAError{}) {
		t.Fatalf("no points: %+v", z)
	}
}

// TestRecordsTheETAShown: with the hub's forecasts, each point records the
// ETA the last in line is shown (JSON "etaLast"); withheld, it is null.
// WithShown hears that ETA once per point recorded (-1 when withheld),
// never for a second another caller had claimed.
func TestRecordsTheETAShown(t *testing.T) {
	q, rdb := queuetest.Queue(t, 10, time.Minute)
	var fc estimate.Forecast // unknown until set below
	var shown []int64
	h := history.New(rdb, q, nil).WithForecasts(func(string) estimate.Forecast { return fc }).
		WithShown(func(room string, eta int64) {
			if room == "r1" {
				shown = append(shown, eta)
			}
		})
	for _, u := range []string{"u1", "u2", "u3", "u4"} {
		mustEnter(t, q, u)
	}
	if pts := mustRecord(t, h); pts[0].ETA != -1 {
		t.Fatalf("withheld, recorded %+v", pts[0])
	}
	var e estimate.Estimator // a room seen mid-sale: 2 s holds, 10 % no-shows
	fc = e.Observe(estimate.Sample{At: time.Now(), Target: 10, EntryTTL: time.Minute, Admitted: 500, Expired: 50,
		Holds: 450, HoldTime: 900 * time.Second, Remaining: make([]int64, 25), Bin: 2500 * time.Millisecond})
	want, ok := fc.ETA(4)
	if !ok {
		t.Fatalf("forecast %+v not known", fc)
	}
	if _, err := q.Leave(context.Background(), "r1", "u1"); err != nil {
		t.Fatal(err)
	}
	want, _ = fc.ETA(3)
	wantMid, _ := fc.ETA(2)
	pts := mustRecord(t, h)
	last := pts[len(pts)-1]
	// u1 left: u2, u3, u4 (tickets 2–4) wait; the middle one is u3.
	if last.ETA != want || last.Seq != 4 || last.Head != 2 || last.ETAMid != wantMid || last.MidTicket != 3 {
		t.Fatalf("point %+v, want ETA %d, seq 4, head 2, middle ETA %d at ticket 3", last, want, wantMid)
	}
	if len(shown) != len(pts) || shown[0] != -1 || shown[len(shown)-1] != want {
		t.Fatalf("shown %v for %d points, want one per point: -1 first, %d last", shown, len(pts), want)
	}
	b, _ := json.Marshal(last)
	var arr []any
	if err := json.Unmarshal(b, &arr); err != nil || len(arr) != len(history.Fields) || arr[6] != float64(want) || arr[7] != float64(wantMid) {
		t.Fatalf("point JSON %s: %v", b, err)
	}
	b, _ = json.Marshal(pts[0])
	if err := json.Unmarshal(b, &arr); err != nil || arr[6] != nil || arr[7] != nil {
		t.Fatalf("withheld point JSON %s", b)
	}
	if _, err := h.Since(context.Background(), "r1", 0); err != nil {
		t.Fatal(err)
	}
}
