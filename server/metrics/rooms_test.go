package metrics_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/history"
	"waitingroom/server/metrics"
)

// clock is a clock the test moves.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// sample is one series of a scrape: its family and labels, and its value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// mustScrape gathers reg as a scrape does (which sweeps the quiet rooms
// when a sweep is due).
func mustScrape(tb testing.TB, reg *prometheus.Registry) []sample {
	tb.Helper()
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var out []sample
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			s := sample{name: f.GetName(), labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// byRoom is the families with a series of each room (any family with a
// room label: those added later are held to the bound too).
func byRoom(samples []sample) map[string][]string {
	out := map[string][]string{}
	for _, s := range samples {
		if room, ok := s.labels["room"]; ok && !slices.Contains(out[room], s.name) {
			out[room] = append(out[room], s.name)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// value is the value of the series name{labels} ("room=sale"), and
// whether it is there.
func value(samples []sample, name string, labels ...string) (float64, bool) {
next:
	for _, s := range samples {
		if s.name != name || len(s.labels) != len(labels) {
			continue
		}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

func mustValue(tb testing.TB, samples []sample, name string, labels ...string) float64 {
	tb.Helper()
	v, ok := value(samples, name, labels...)
	if !ok {
		tb.Fatalf("no series %s%v", name, labels)
	}
	return v
}

// busy is an admission run of room that found work.
func busy(room string, waiting, active int64, admitted ...string) queue.AdmitResult {
	return queue.AdmitResult{Room: room, Waiting: waiting, Active: active, Admitted: admitted, Target: 20}
}

// observeAll feeds every observer of room once.
func observeAll(m *metrics.Metrics, room string) {
	m.ObserveEnter(room, false)
	m.ObserveAdmission(queue.AdmitResult{Room: room, Waiting: 5, Active: 2, Admitted: []string{"u1"}, Pruned: 1, Abandoned: 1,
		Passed: 3, PassedFirst: 2, Target: 20})
	m.ObserveEnter(room, true)
	m.JudgedETA(room, history.ETAError{MedianPct: 12, Count: 40})
	m.ShownETA(room, 42)
	m.ObserveStep(room, adaptive.State{Signals: adaptive.Signals{Orders: 9, P90: time.Second}}, 20)
	m.ObserveLimitChange(room, adaptive.Step{Reason: "increase"})
}

// roomFamilies are the room-labelled families observeAll fills.
var roomFamilies = []string{
	"waitingroom_abandoned_total",
	"waitingroom_active",
	"waitingroom_adaptive_error_ratio",
	"waitingroom_adaptive_order_p90_baseline_seconds",
	"waitingroom_adaptive_order_p90_seconds",
	"waitingroom_adaptive_pool_wait_seconds",
	"waitingroom_adaptive_window_orders",
	"waitingroom_admission_limit",
	"waitingroom_admission_limit_changes_total",
	"waitingroom_admitted_total",
	"waitingroom_entered_total",
	"waitingroom_entry_expired_total",
	"waitingroom_eta_error_ratio",
	"waitingroom_eta_judged",
	"waitingroom_eta_last_in_line_seconds",
	"waitingroom_passed_over_total",
	"waitingroom_queue_waiting",
	"waitingroom_room_paused",
	"waitingroom_target_active",
}

// TestRoomSeriesGoWhenQuiet: a room's every series is there while it is
// active and gone once it has been quiet for QuietAfter; a run that
// reports its zeros sets them but is no activity; the totals stay.
func TestRoomSeriesGoWhenQuiet(t *testing.T) {
	c := newClock()
	m := metrics.New(nil, metrics.Options{QuietAfter: 10 * time.Minute, MaxRooms: 10, Now: c.now})
	observeAll(m, "sale")
	got := mustScrape(t, m.Registry)
	if rooms := byRoom(got); !slices.Equal(rooms["sale"], roomFamilies) || len(rooms) != 1 {
		t.Fatalf("series by room = %v, want sale's %v", rooms, roomFamilies)
	}
	if v := mustValue(t, got, "waitingroom_admitted_total", "room=sale"); v != 2 {
		t.Fatalf("admitted{sale} = %v, want 2 (a run's and a passthrough)", v)
	}

	c.advance(5 * time.Minute)
	m.ObserveAdmission(queue.AdmitResult{Room: "sale", Target: 20}) // its last run: zeros
	m.ObserveAdmission(busy("other", 3, 0))
	got = mustScrape(t, m.Registry)
	if v := mustValue(t, got, "waitingroom_queue_waiting", "room=sale"); v != 0 {
		t.Fatalf("waiting{sale} after its zeros = %v", v)
	}
	if v := mustValue(t, got, "waitingroom_rooms_waiting"); v != 3 {
		t.Fatalf("rooms_waiting = %v, want 3 (other's)", v)
	}

	c.advance(5*time.Minute + time.Minute) // sale quiet for 11 min, other for 6
	got = mustScrape(t, m.Registry)
	if rooms := byRoom(got); len(rooms["sale"]) != 0 || len(rooms["other"]) == 0 {
		t.Fatalf("series by room after sale's quiet 11 min = %v, want other's only", rooms)
	}
	for name, want := range map[string]float64{
		"waitingroom_rooms_entered_total": 2, "waitingroom_rooms_admitted_total": 2, "waitingroom_rooms_entry_expired_total": 1,
		"waitingroom_rooms_abandoned_total": 1, "waitingroom_rooms_waiting": 3, "waitingroom_rooms_active": 0,
		"waitingroom_rooms_passed_over_total": 2,
		"waitingroom_rooms_with_series":       1, "waitingroom_rooms_left_out": 0,
	} {
		if v := mustValue(t, got, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}

	c.advance(10 * time.Minute)
	if rooms := byRoom(mustScrape(t, m.Registry)); len(rooms) != 0 {
		t.Fatalf("series by room with every room quiet = %v", rooms)
	}
}

// TestIdleRoomsCostNothing: runs that find no work and the schedules'
// visits (judge, history, controller) give a room not seen lately no series.
func TestIdleRoomsCostNothing(t *testing.T) {
	m := metrics.New(nil, metrics.Options{Now: newClock().now})
	for i := range 5000 {
		room := fmt.Sprintf("r%d", i)
		m.ObserveAdmission(queue.AdmitResult{Room: room, Target: 20})
		m.JudgedETA(room, history.ETAError{MedianPct: 50, Count: 3})
		m.ShownETA(room, 30)
		m.ObserveStep(room, adaptive.State{}, 20)
		m.ObserveLimitChange(room, adaptive.Step{Reason: "decrease"})
	}
	got := mustScrape(t, m.Registry)
	if rooms := byRoom(got); len(rooms) != 0 {
		t.Fatalf("%d idle rooms have series", len(rooms))
	}
	if v := mustValue(t, got, "waitingroom_rooms_with_series") + mustValue(t, got, "waitingroom_rooms_left_out"); v != 0 {
		t.Fatalf("idle rooms kept: %v", v)
	}
}

// TestShownETA: the ETA shown to the last in line is the gauge's value;
// withheld (-1), the series goes, and it comes back with the next known
// one.
func TestShownETA(t *testing.T) {
	m := metrics.New(nil, metrics.Options{Now: newClock().now})
	m.ObserveAdmission(busy("sale", 40, 20))
	const name = "waitingroom_eta_last_in_line_seconds"
	for _, step := range []struct {
		shown int64
		want  float64
		there bool
	}{{95, 95, true}, {-1, 0, false}, {0, 0, true}, {-1, 0, false}, {120, 120, true}} {
		m.ShownETA("sale", step.shown)
		got, there := value(mustScrape(t, m.Registry), name, "room=sale")
		if there != step.there || got != step.want {
			t.Fatalf("after ShownETA(sale, %d): %s = %v (there: %v), want %v (there: %v)", step.shown, name, got, there, step.want, step.there)
		}
	}
}

// TestRoomSeriesCap: beyond MaxRooms a room gets no series and is
// counted as left out, the totals count it, and the schedules' visits
// give it none either; once a room with series goes quiet, the left-out
// room's next activity gives it series.
func TestRoomSeriesCap(t *testing.T) {
	c := newClock()
	m := metrics.New(nil, metrics.Options{QuietAfter: time.Minute, MaxRooms: 2, Now: c.now})
	m.ObserveAdmission(busy("a", 1, 0))
	m.ObserveAdmission(busy("b", 2, 0))
	m.ObserveAdmission(busy("c", 4, 0, "u1"))
	m.ObserveEnter("c", false)
	observeAll(m, "c")
	got := mustScrape(t, m.Registry)
	rooms := byRoom(got)
	if len(rooms) != 2 || len(rooms["c"]) != 0 {
		t.Fatalf("series by room = %v, want a's and b's", rooms)
	}
	for name, want := range map[string]float64{
		"waitingroom_rooms_with_series": 2, "waitingroom_rooms_left_out": 1,
		"waitingroom_rooms_waiting": 1 + 2 + 5, "waitingroom_rooms_admitted_total": 1 + 2, "waitingroom_rooms_entered_total": 3,
	} {
		if v := mustValue(t, got, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}

	c.advance(40 * time.Second)
	m.ObserveAdmission(busy("b", 2, 0))
	m.ObserveAdmission(busy("c", 4, 0))
	c.advance(30 * time.Second) // a quiet for 70 s
	m.ObserveAdmission(busy("c", 3, 0))
	got = mustScrape(t, m.Registry)
	if rooms := byRoom(got); len(rooms["a"]) != 0 || len(rooms["b"]) == 0 || len(rooms["c"]) == 0 {
		t.Fatalf("series by room after a's quiet = %v, want b's and c's", rooms)
	}
	if v := mustValue(t, got, "waitingroom_queue_waiting", "room=c"); v != 3 {
		t.Fatalf("waiting{c} = %v, want 3", v)
	}
	if v := mustValue(t, got, "waitingroom_rooms_left_out"); v != 0 {
		t.Fatalf("left out = %v, want 0", v)
	}
	// a's last run had 1 waiting and it was dropped: it leaves the total.
	if v := mustValue(t, got, "waitingroom_rooms_waiting"); v != 2+3 {
		t.Fatalf("rooms_waiting = %v, want 5", v)
	}
}

// TestForgetRoom: ForgetRoom removes every series of the room at once
// and its last run from the totals; the totals' counters keep counting;
// the room's next enter starts its counter again from 0.
func TestForgetRoom(t *testing.T) {
	m := metrics.New(nil, metrics.Options{Now: newClock().now})
	observeAll(m, "sale")
	m.ObserveAdmission(busy("stay", 1, 1))
	m.ForgetRoom("sale")
	m.ForgetRoom("never-seen")
	got := mustScrape(t, m.Registry)
	if rooms := byRoom(got); len(rooms["sale"]) != 0 || len(rooms["stay"]) == 0 {
		t.Fatalf("series by room after ForgetRoom(sale) = %v", rooms)
	}
	for name, want := range map[string]float64{
		"waitingroom_rooms_waiting": 1, "waitingroom_rooms_active": 1, "waitingroom_rooms_entered_total": 2,
		"waitingroom_rooms_admitted_total": 2, "waitingroom_rooms_with_series": 1,
	} {
		if v := mustValue(t, got, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	m.ObserveEnter("sale", false)
	got = mustScrape(t, m.Registry)
	if v := mustValue(t, got, "waitingroom_entered_total", "room=sale"); v != 1 {
		t.Fatalf("entered{sale} after forgetting = %v, want 1", v)
	}
	if _, ok := value(got, "waitingroom_queue_waiting", "room=sale"); ok {
		t.Fatal("an enter made sale's runner gauges again")
	}
}

// TestRoomSeriesConcurrent: observers, ForgetRoom and scrapes at once,
// the clock moving (run with -race); once every room is forgotten no
// series is left behind and the gauge totals are back at 0.
func TestRoomSeriesConcurrent(t *testing.T) {
	c := newClock()
	m := metrics.New(nil, metrics.Options{QuietAfter: time.Minute, MaxRooms: 8, Now: c.now})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 150 {
				room := fmt.Sprintf("r%d", (w+i)%16)
				switch i % 7 {
				case 0:
					m.ForgetRoom(room)
				case 1:
					c.advance(5 * time.Second)
				case 2:
					if _, err := m.Registry.Gather(); err != nil {
						t.Error(err)
					}
				default:
					observeAll(m, room)
				}
			}
		})
	}
	wg.Wait()
	for i := range 16 {
		m.ForgetRoom(fmt.Sprintf("r%d", i))
	}
	got := mustScrape(t, m.Registry)
	if rooms := byRoom(got); len(rooms) != 0 {
		t.Fatalf("series left behind: %v", rooms)
	}
	for _, name := range []string{"waitingroom_rooms_waiting", "waitingroom_rooms_active", "waitingroom_rooms_with_series", "waitingroom_rooms_left_out"} {
		if v := mustValue(t, got, name); v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
}
