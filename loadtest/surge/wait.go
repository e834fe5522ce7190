package surge

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/stream"
)

// How a surge's user waits: by its transport until READY or told why, with
// the shopper model's abandon (the tab closed: the stream closed or the
// polls stopped, no leave) and reload (the connection dropped, then the
// page's GET position and a new stream with the same queue token). Every
// WAITING status the user is shown is recorded for the ETA accuracy.

// wait waits until READY, gone / 404, the run's end or the user's abandon,
// and returns the last status (Status "" unless READY or GONE).
func (r *surgeRun) wait(u *surgeUser, st client.QueueStatus) client.QueueStatus {
	for {
		at, abandon := r.nextEvent(u)
		ctx, cancel := r.ctx, context.CancelFunc(func() {})
		if !at.IsZero() {
			ctx, cancel = context.WithDeadline(r.ctx, at)
		}
		got := r.waitBy(ctx, u, st)
		cancel()
		if got.Status != "" || r.ctx.Err() != nil || ctx.Err() == nil {
			return got
		}
		if abandon {
			u.outcome, u.why = surgeAbandoned, "abandoned"
			r.cnt.abandoned.Add(1)
			return client.QueueStatus{}
		}
		u.reloaded = true
		r.cnt.reloads.Add(1)
		if got = r.reload(u); got.Status != "" {
			return got
		}
		st = client.QueueStatus{PollAfterMs: st.PollAfterMs}
	}
}

// nextEvent is when the user's wait is next interrupted by its plan, and
// whether it is the abandon (else the reload); zero: never.
func (r *surgeRun) nextEvent(u *surgeUser) (time.Time, bool) {
	entered := r.start.Add(u.enterAt)
	reload := !u.reloaded && u.plan.reload > 0
	switch {
	case u.plan.abandon > 0 && (!reload || u.plan.abandon <= u.plan.reload):
		return entered.Add(u.plan.abandon), true
	case reload:
		return entered.Add(u.plan.reload), false
	}
	return time.Time{}, false
}

// reload is the page loading again after 0.5–2 s: one GET position, shown
// as the page shows it; READY or GONE end the wait.
func (r *surgeRun) reload(u *surgeUser) client.QueueStatus {
	if !pace.Sleep(r.ctx, 500*time.Millisecond+rand.N(1500*time.Millisecond)) {
		return client.QueueStatus{}
	}
	got, _, end := r.askPosition(u)
	if end {
		return got
	}
	return client.QueueStatus{}
}

// askPosition is one GET position of u, counted, its answer shown as the
// page shows it. end: READY or gone (got says which; empty after a 404);
// failed: no answer (an error or an unexpected status).
func (r *surgeRun) askPosition(u *surgeUser) (got client.QueueStatus, failed, end bool) {
	got, code, err := u.group.API.Position(r.reqCtx, u.qtok)
	u.polls++
	switch {
	case code == http.StatusNotFound:
		return r.told(u, "404 not_in_queue"), false, true
	case err != nil || code != http.StatusOK:
		u.pollErrors++
		r.cnt.pollErrors.Add(1)
		return client.QueueStatus{}, true, false
	case got.Status == "READY":
		return got, false, true
	}
	u.show(time.Since(r.start), got.Status, got.Position, got.ETASeconds, got.ETAKnown)
	return got, false, false
}

// waitBy waits by u's transport until READY, gone / 404 or ctx's end. A
// stream that ends without READY or gone is opened again, at most
// maxStream times over the user's wait; after that the user polls.
func (r *surgeRun) waitBy(ctx context.Context, u *surgeUser, st client.QueueStatus) client.QueueStatus {
	if u.transport != "poll" {
		for u.drops < r.maxStream && ctx.Err() == nil {
			got, done := r.stream(ctx, u)
			if done {
				return got
			}
			if ctx.Err() != nil {
				return client.QueueStatus{}
			}
			u.drops++
			r.cnt.drops.Add(1)
		}
	}
	return r.poll(ctx, u, st)
}

// stream holds one stream until READY or gone; done is false when it ended
// otherwise (dropped, refused, or ctx ended).
func (r *surgeRun) stream(ctx context.Context, u *surgeUser) (client.QueueStatus, bool) {
	octx, cancel := context.WithTimeout(ctx, r.timeout)
	pc, m, err := u.group.Dialer[u.transport].Open(octx, u.qtok)
	cancel()
	if err != nil {
		var se client.StatusError
		if errors.As(err, &se) && int(se) == http.StatusNotFound {
			return r.told(u, "404 not_in_queue"), true
		}
		if ctx.Err() == nil {
			u.why = "stream open: " + stream.WhyEnded(err)
		}
		return client.QueueStatus{}, false
	}
	stop := context.AfterFunc(ctx, pc.Close)
	defer func() { stop(); pc.Close() }()
	for k := 0; k < stream.MaxMessages; k++ {
		switch {
		case m.Kind == "gone":
			return r.told(u, "gone"), true
		case m.Kind == "status" && !m.Bad:
			if k > 0 && m.Status.TS != 0 && len(u.lags) < stream.MaxLagSamples {
				u.lags = append(u.lags, lagSample{at: m.At.Sub(r.start), lag: max(m.At.Sub(time.UnixMilli(m.Status.TS)), 0)})
			}
			if m.Status.Status == "READY" {
				return client.QueueStatus{Status: "READY", EntryToken: m.Status.EntryToken, EntryExpiresAt: m.Status.EntryExpiresAt}, true
			}
			u.show(m.At.Sub(r.start), m.Status.Status, m.Status.Position, m.Status.ETASeconds, m.Status.ETAKnown)
		}
		if m, err = pc.Next(); err != nil {
			if ctx.Err() == nil {
				u.why = "stream: " + stream.WhyEnded(err)
			}
			return client.QueueStatus{}, false
		}
	}
	u.why = "stream: more than maxStreamMessages without READY"
	return client.QueueStatus{}, false
}

// told records that the server said why the user is not in the queue.
func (r *surgeRun) told(u *surgeUser, why string) client.QueueStatus {
	u.outcome, u.why = surgeGone, why
	r.cnt.gone.Add(1)
	return client.QueueStatus{Status: "GONE"}
}

// poll asks for the position every pollAfterMs (clamped to minPoll …
// maxPoll) until READY, 404, ctx's end, or client.MaxPolls polls.
func (r *surgeRun) poll(ctx context.Context, u *surgeUser, st client.QueueStatus) client.QueueStatus {
	pause := time.Duration(st.PollAfterMs) * time.Millisecond
	for range client.MaxPolls {
		if !pace.Sleep(ctx, min(max(pause, r.minPoll), r.maxPoll)) {
			return client.QueueStatus{}
		}
		got, failed, end := r.askPosition(u)
		switch {
		case end:
			return got
		case failed:
			pause = time.Second
			continue
		}
		pause = time.Duration(got.PollAfterMs) * time.Millisecond
	}
	return client.QueueStatus{}
}
