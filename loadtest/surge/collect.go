package surge

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// Turning a surge run into its report: one pass over the users' records,
// the request recorder's answers, the admin API's room samples and the
// /metrics process samples, each also binned into the per-second timeline.

// collect fills the report from the users' records and the samples.
func (rep *Report) collect(r *surgeRun, rec *measure.Recorder, s samples) {
	tl := newTimeline(rep.Seconds)
	rep.collectUsers(r, tl)
	rep.collectAnswers(rec)
	rep.collectRoom(s, tl)
	rep.collectProcess(s, tl)
	rep.Timeline = tl.finish()
	rep.Checks = rep.checks()
}

// timeline is the per-second series under construction: one point per
// second of the run, and the enter latencies and fan-out lags that fell in
// each second, for their percentiles.
type timeline struct {
	points       []TimelinePoint
	enters, lags [][]time.Duration
}

func newTimeline(seconds float64) *timeline {
	bins := min(int(math.Ceil(seconds))+1, maxTimeline)
	tl := &timeline{points: make([]TimelinePoint, bins), enters: make([][]time.Duration, bins), lags: make([][]time.Duration, bins)}
	for i := range tl.points {
		tl.points[i].T = i
	}
	return tl
}

// bin is the second d (after the run's start) falls in; times past the
// last bin count in it.
func (tl *timeline) bin(d time.Duration) int {
	return min(max(int(d/time.Second), 0), len(tl.points)-1)
}

// at is the point of the second d falls in.
func (tl *timeline) at(d time.Duration) *TimelinePoint { return &tl.points[tl.bin(d)] }

// finish computes each second's percentiles and returns the points.
func (tl *timeline) finish() []TimelinePoint {
	for i := range tl.points {
		if l := tl.enters[i]; len(l) > 0 {
			slices.Sort(l)
			p := &tl.points[i]
			p.HasEnter = true
			p.EnterP50, p.EnterP90, p.EnterP99 = report.Msf(measure.Percentile(l, 50)), report.Msf(measure.Percentile(l, 90)), report.Msf(measure.Percentile(l, 99))
		}
		if l := tl.lags[i]; len(l) > 0 {
			slices.Sort(l)
			p := &tl.points[i]
			p.HasLag = true
			p.LagP50, p.LagP99 = report.Msf(measure.Percentile(l, 50)), report.Msf(measure.Percentile(l, 99))
		}
	}
	return tl.points
}

// userTally is what the pass over the users gathers besides the report's
// counts: the samples of its latencies, FIFO check and ETA accuracy.
type userTally struct {
	enters, lags, lagSSE, lagWS []time.Duration
	adm                         []admission
	etas                        []etaSample
	waitErrs                    []estimateError // every estimate shown to an admitted user
	withheld, waitUsers         int
	firstEnter, lastReady       time.Duration
}

// collectUsers counts the users by outcome and derives the figures that
// need them all: latencies, FIFO inversions, ETA accuracy, drain time.
func (rep *Report) collectUsers(r *surgeRun, tl *timeline) {
	rep.EnterFailures, rep.OrderFailures, rep.GoneWhy, rep.LostWhy = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	rep.ByTransport = map[string]int{}
	t := &userTally{firstEnter: time.Duration(math.MaxInt64)}
	for i := range r.users {
		rep.countUser(r, &r.users[i], tl, t)
	}
	rep.ErrorCount = rep.EnterFailed + rep.OrderFailed + rep.PollErrors
	rep.EnterLatency = measure.NewLatency(t.enters)
	rep.Lag, rep.LagSSE, rep.LagWS = measure.NewLatency(t.lags), measure.NewLatency(t.lagSSE), measure.NewLatency(t.lagWS)
	rep.Admissions = len(t.adm)
	rep.Inversions = fifoInversions(t.adm)
	rep.ETA = newETAAccuracy(t.etas)
	rep.ETAFirst = firstShown(t.etas)
	rep.ETAWait = newWaitAccuracy(t.waitErrs, t.withheld, t.waitUsers)
	rep.ETASeries = etaSeries(t.waitErrs, rep.Seconds)
	if rep.SlowdownMs > 0 {
		rep.ETAChanges = append(rep.ETAChanges, newETAChange(fmt.Sprintf("order delay %.0f ms", rep.SlowdownMs),
			time.Duration(rep.SlowdownAtSeconds*float64(time.Second)), t.waitErrs, rep.ETASeries))
	}
	if rep.LimitChangeTo > 0 {
		rep.ETAChanges = append(rep.ETAChanges, newETAChange(fmt.Sprintf("targetActive %d", rep.LimitChangeTo),
			time.Duration(rep.LimitChangeAtSeconds*float64(time.Second)), t.waitErrs, rep.ETASeries))
	}
	if rep.Ready > 0 {
		rep.DrainSeconds = t.lastReady.Seconds()
		if rep.DrainSeconds > 0 {
			rep.OrdersPerSecond = float64(rep.Ordered) / rep.DrainSeconds
		}
		if span := (t.lastReady - t.firstEnter).Seconds(); span > 0 {
			rep.AdmitPerSecond = float64(rep.Ready) / span
		}
	}
}

// countUser counts one user who arrived: whether it entered, its enter
// latency and fan-out lags, and where it ended — still waiting (lost), told
// it was gone, or READY (countReady).
func (rep *Report) countUser(r *surgeRun, u *surgeUser, tl *timeline, t *userTally) {
	if u.outcome == surgeNotArrived {
		return
	}
	rep.Arrived++
	if u.reloaded {
		rep.Reloads++
	}
	rep.ByTransport[u.transport]++
	rep.Polls += u.polls
	rep.PollErrors += u.pollErrors
	rep.Drops += u.drops
	if u.outcome == surgeEnterFailed {
		rep.EnterFailed++
		rep.EnterFailures[u.why]++
		return
	}
	rep.Entered++
	t.enters = append(t.enters, u.enterLat)
	t.firstEnter = min(t.firstEnter, u.enterAt)
	tl.at(u.enterAt).Entered++
	b := tl.bin(u.enterAt)
	tl.enters[b] = append(tl.enters[b], u.enterLat)
	for _, l := range u.lags {
		t.lags = append(t.lags, l.lag)
		if u.transport == "ws" {
			t.lagWS = append(t.lagWS, l.lag)
		} else {
			t.lagSSE = append(t.lagSSE, l.lag)
		}
		b := tl.bin(l.at)
		tl.lags[b] = append(tl.lags[b], l.lag)
	}
	switch u.outcome {
	case surgeWaiting:
		rep.Lost++
		why := u.why
		if why == "" {
			why = "still waiting"
		}
		rep.LostWhy[why]++
		if r.ctx.Err() != nil {
			rep.LostAtEnd++
		}
	case surgeGone:
		rep.Gone++
		rep.GoneWhy[u.why]++
	case surgeAbandoned:
		rep.Abandoned++
	default:
		rep.countReady(r, u, tl, t)
	}
}

// countReady counts a user who got READY, whatever followed: its admission
// time for the FIFO check, its ETA against the real wait, and its order.
func (rep *Report) countReady(r *surgeRun, u *surgeUser, tl *timeline, t *userTally) {
	rep.Ready++
	if u.immediate {
		rep.Immediate++
	}
	t.lastReady = max(t.lastReady, u.readyAt)
	tl.at(u.readyAt).Admitted++
	if u.admittedAt.IsZero() || u.ticket == 0 {
		rep.NoAdmitTime++
	} else {
		t.adm = append(t.adm, admission{ticket: u.ticket, at: u.admittedAt})
		if s, ok := firstEstimate(u.shown, u.enterAt, u.admittedAt.Sub(r.start)); ok && !u.immediate {
			t.etas = append(t.etas, s)
		}
		if !u.immediate {
			errs, withheld := estimateErrors(u.shown, u.admittedAt.Sub(r.start))
			t.waitErrs, t.withheld, t.waitUsers = append(t.waitErrs, errs...), t.withheld+withheld, t.waitUsers+1
		}
	}
	switch u.outcome {
	case surgeOrdered:
		rep.Ordered++
		tl.at(u.orderAt).Ordered++
	case surgeOrderFailed:
		rep.OrderFailed++
		rep.OrderFailures[u.why]++
		tl.at(u.orderAt).Errors++
	case surgeNoShow:
		rep.NoShows++
	}
}

// collectAnswers takes the per-endpoint summaries and counts the requests
// answered 429 or 5xx, or not at all, retries included.
func (rep *Report) collectAnswers(rec *measure.Recorder) {
	rep.Enter, rep.Orders, rep.Position = rec.Summary("enter"), rec.Summary("orders"), rec.Summary("position")
	for _, e := range []measure.Summary{rep.Enter, rep.Orders, rep.Position} {
		for code, k := range e.Codes {
			if code == measure.NoResponse || code == http.StatusTooManyRequests || code >= 500 {
				rep.AttemptErrors += k
			}
		}
	}
}

// collectRoom reads the room samples: the maximum active, the samples over
// the limit, and the last sample of each second. It needs rep.Orders
// (collectAnswers) for the slowest order.
//
// A lowered limit (an operator's change, or an adaptive room's cut)
// applies to new admissions: users admitted before it keep their slots
// until they order. So a sample is over the limit only when active exceeds
// every targetActive sampled within that hold — the slowest order plus a
// second to notice READY — before it.
func (rep *Report) collectRoom(s samples, tl *timeline) {
	rep.RoomSamples, rep.RoomSampleErrs, rep.RoomSeries = len(s.Room), s.RoomErrs, s.Room
	hold := rep.Orders.Max + time.Second
	for i, x := range s.Room {
		if i == 0 || x.Active > rep.MaxActive {
			rep.MaxActive, rep.MaxActiveTarget = x.Active, x.Target
		}
		limit := x.Target
		for j := i - 1; j >= 0 && x.At-s.Room[j].At <= hold; j-- {
			limit = max(limit, s.Room[j].Target)
		}
		if x.Active > limit {
			rep.SamplesOverLimit++
		}
		p := tl.at(x.At)
		p.HasRoom, p.Waiting, p.Active, p.Target = true, x.Waiting, x.Active, x.Target
	}
}

// collectProcess reads the process samples: the server's RSS and its CPU,
// per second and over the run.
func (rep *Report) collectProcess(s samples, tl *timeline) {
	rep.ProcErr = s.FirstProc
	for i, x := range s.Proc {
		mb := x.RSSBytes / (1 << 20)
		if i == 0 {
			rep.ServerRSS0MiB = mb
		}
		rep.ServerRSSMax = max(rep.ServerRSSMax, mb)
		rep.ServerRSSEnd = mb
		p := tl.at(x.At)
		p.HasProc, p.RSSMiB = true, mb
		if i > 0 {
			prev := s.Proc[i-1]
			if dt := (x.At - prev.At).Seconds(); dt > 0 {
				pct := 100 * (x.CPUSeconds - prev.CPUSeconds) / dt
				p.CPUPct, p.HasCPUPct = pct, true
				rep.ServerCPUPeak = max(rep.ServerCPUPeak, pct)
			}
		}
	}
	if n := len(s.Proc); n > 1 {
		rep.ServerCPUSecs = s.Proc[n-1].CPUSeconds - s.Proc[0].CPUSeconds
		if dt := (s.Proc[n-1].At - s.Proc[0].At).Seconds(); dt > 0 {
			rep.ServerCPUMean = 100 * rep.ServerCPUSecs / dt
		}
	}
}
