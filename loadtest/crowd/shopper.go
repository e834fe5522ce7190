package crowd

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/crowdnet"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/stream"
)

// shopper is one simulated shopper of the crowd scenario, from arrival to
// order or departure.
type shopper struct {
	idx       int    // user index: user<first-user + idx>
	transport string // sse, ws or poll
	g         *crowdnet.Group
	qtok      string
	entered   time.Time
}

// waitEnd is how a shopper's wait ended.
type waitEnd uint8

const (
	waitReady   waitEnd = iota // admitted: READY with an entry token
	waitGone                   // told: gone event or 404 not_in_queue
	waitStopped                // their patience or the run ended
)

// shopperTransports are mix's transports, dealt in turn.
var shopperTransports = []string{"sse", "ws", "poll"}

// arrive runs one shopper until they are no longer waiting: admitted (the
// order then goes on in a goroutine of its own), told gone, or gone home.
// It is false when the shopper could not enter.
func (r *crowdRun) arrive() bool {
	idx, ok := r.take()
	if !ok {
		return true
	}
	n := r.cnt.arrived.Add(1)
	s := &shopper{idx: idx, g: r.crowd.Of(idx), transport: r.cfg.transport}
	if s.transport == "mix" {
		s.transport = shopperTransports[int(n)%len(shopperTransports)]
	}
	st, ok := r.enter(s)
	if !ok {
		r.free(idx)
		return false
	}
	ctx, cancel := r.patience()
	defer cancel()
	if st.Status != "READY" {
		r.cnt.waiting.Add(1)
		st = r.wait(ctx, s, st)
		r.cnt.waiting.Add(-1)
	}
	switch {
	case st.Status == "READY":
		r.cnt.admitted.Add(1)
		r.waits.add(time.Since(s.entered))
		r.wg.Go(func() { r.checkout(s, st.EntryToken) })
	case st.Status == "GONE":
		r.cnt.gone.Add(1)
		r.free(idx)
	default: // patience or the run ended
		if r.ctx.Err() != nil {
			r.cnt.sentHome.Add(1)
		} else {
			r.cnt.gaveUp.Add(1)
		}
		r.goHome(s)
	}
	return true
}

// enterTimeout bounds one enter request of a shopper.
const enterTimeout = 10 * time.Second

// enter gets the shopper an access token and enters the room, retried on
// 429, 503 or no answer (enter is idempotent).
func (r *crowdRun) enter(s *shopper) (client.QueueStatus, bool) {
	access, err := "", error(nil) // anonymous in gateway mode
	if r.cfg.gateway == nil {
		access, err = r.tokens.token(r.ctx, s.idx, s.g.API)
	}
	if err != nil {
		if r.ctx.Err() == nil {
			r.cnt.enterFailed.Add(1)
			r.why.add("access token: " + stream.WhyEnded(err))
		}
		return client.QueueStatus{}, false
	}
	// An enter sent is let finish when the run ends meanwhile: the server
	// queues the shopper whether or not the answer is read, and a shopper
	// entered must be known, to be sent home (retries stop with the run).
	var st client.QueueStatus
	code, err := client.WithRetry(r.ctx, func() (int, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), enterTimeout)
		defer cancel()
		var code int
		var err error
		if r.cfg.gateway != nil {
			st, code, err = r.cfg.gateway.enter(ctx, s.g.API)
		} else {
			st, code, err = s.g.API.Enter(ctx, access)
		}
		return code, err
	})
	if err == nil && code != http.StatusOK {
		err = client.StatusError(code)
	}
	if err != nil {
		if r.ctx.Err() == nil {
			r.cnt.enterFailed.Add(1)
			r.why.add("enter: " + stream.WhyEnded(err))
		}
		return client.QueueStatus{}, false
	}
	s.qtok, s.entered = st.QueueToken, time.Now()
	r.cnt.entered.Add(1)
	return st, true
}

// patience is the context of one shopper's wait: the run's, or for the
// --leave share of shoppers a deadline 10–90 s away, when they give up.
func (r *crowdRun) patience() (context.Context, context.CancelFunc) {
	if rand.Float64() >= r.cfg.leave {
		return context.WithCancel(r.ctx)
	}
	return context.WithTimeout(r.ctx, 10*time.Second+rand.N(80*time.Second))
}

// wait waits by the shopper's transport until READY, GONE, or ctx ends
// (Status ""). A stream that ends otherwise is opened again, at most three
// times in all; then the shopper polls.
func (r *crowdRun) wait(ctx context.Context, s *shopper, st client.QueueStatus) client.QueueStatus {
	if s.transport != "poll" {
		for range 3 {
			got, done := r.stream(ctx, s)
			if done || ctx.Err() != nil {
				return got
			}
			r.cnt.drops.Add(1)
		}
	}
	return r.poll(ctx, s, st)
}

// stream holds one stream until READY or gone; done is false when it
// ended otherwise (dropped, refused, or ctx ended).
func (r *crowdRun) stream(ctx context.Context, s *shopper) (client.QueueStatus, bool) {
	octx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	pc, m, err := s.g.Dialer[s.transport].Open(octx, s.qtok)
	cancel()
	if err != nil {
		var se client.StatusError
		if errors.As(err, &se) && int(se) == http.StatusNotFound {
			return client.QueueStatus{Status: "GONE"}, true
		}
		return client.QueueStatus{}, false
	}
	stop := context.AfterFunc(ctx, pc.Close)
	defer func() { stop(); pc.Close() }()
	for range stream.MaxMessages {
		switch {
		case m.Kind == "gone":
			return client.QueueStatus{Status: "GONE"}, true
		case m.Kind == "status" && !m.Bad && m.Status.Status == "READY":
			return client.QueueStatus{Status: "READY", EntryToken: m.Status.EntryToken}, true
		}
		if m, err = pc.Next(); err != nil {
			return client.QueueStatus{}, false
		}
	}
	return client.QueueStatus{}, false
}

// poll asks for the position every pollAfterMs (0.1–5 s, ±10 % as the
// page jitters it) until READY, 404 or ctx ends. Without the jitter the
// crowd polls in lockstep: shoppers who entered a few milliseconds apart
// keep the same phase poll after poll, so the ones admitted over a few
// seconds learn it in the same instant and reach the pool together, a
// burst no page makes.
func (r *crowdRun) poll(ctx context.Context, s *shopper, st client.QueueStatus) client.QueueStatus {
	pause := time.Duration(st.PollAfterMs) * time.Millisecond
	for range client.MaxPolls {
		if !pace.Sleep(ctx, jitter(min(max(pause, 100*time.Millisecond), 5*time.Second))) {
			return client.QueueStatus{}
		}
		got, code, err := s.g.API.Position(ctx, s.qtok)
		switch {
		case code == http.StatusNotFound:
			return client.QueueStatus{Status: "GONE"}
		case err != nil || code != http.StatusOK:
			if ctx.Err() == nil {
				r.cnt.pollErrors.Add(1)
			}
			pause = time.Second
			continue
		case got.Status == "READY":
			return got
		}
		pause = time.Duration(got.PollAfterMs) * time.Millisecond
	}
	return client.QueueStatus{}
}

// jitter spreads d by ±10 %, as the page's poll does.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// checkout is an admitted shopper: a think time, then one order of 1 or 2
// units of a product, retried only when the server answered 429 or 503.
// The run's end before the order is placed sends them home.
func (r *crowdRun) checkout(s *shopper, entryToken string) {
	think := r.cfg.think/2 + rand.N(r.cfg.think+1)
	code, err := measure.NoResponse, error(nil)
	if pace.Sleep(r.ctx, think) {
		if r.cfg.gateway != nil {
			code, err = r.cfg.gateway.visit(r.ctx, *s.g.API, r.o.Base, s.qtok, entryToken)
		} else {
			code, err = r.order(s, entryToken)
		}
	}
	switch {
	case code == http.StatusCreated, r.cfg.gateway != nil && code/100 == 2:
		r.cnt.ordered.Add(1)
		r.free(s.idx)
	case r.ctx.Err() != nil:
		r.cnt.sentHome.Add(1)
		r.goHome(s)
	default:
		r.cnt.orderFailed.Add(1)
		r.why.add("order: " + stream.WhyEnded(client.OrElse(err, client.StatusError(code))))
		r.goHome(s)
	}
}

// order places the shopper's order: 1 unit, sometimes 2, of one of the
// products.
func (r *crowdRun) order(s *shopper, entryToken string) (int, error) {
	product, qty := 1+rand.Int64N(int64(r.cfg.products)), int64(1)
	if rand.IntN(4) == 0 {
		qty = 2
	}
	code, err := client.WithRetry(r.ctx, func() (int, error) {
		code, err := s.g.API.OrderQty(r.ctx, s.qtok, entryToken, product, qty)
		if code == measure.NoResponse {
			return http.StatusBadGateway, err // no answer: it may have been placed, not retried
		}
		return code, err
	})
	if code == http.StatusBadGateway && err != nil {
		code = measure.NoResponse
	}
	return code, err
}

// goHome has the shopper leave the room — their place, or their entry
// window — within a few seconds also after the run's end, and frees their
// user.
func (r *crowdRun) goHome(s *shopper) {
	defer r.free(s.idx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 5*time.Second)
	defer cancel()
	if code, err := s.g.API.Leave(ctx, s.qtok); err != nil || code/100 != 2 {
		r.cnt.leaveFailed.Add(1)
	}
}
