package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"waitingroom/server/gateway/origin"
)

// The origin's health, as the gateway last saw it: /readyz's origin check
// (Gateway.OriginCheck) and the start-time probe (Gateway.Probe).

// originFresh is how long a forward's outcome stands for the origin's
// health; past it (or before any forward) the check dials the origin.
const originFresh = 10 * time.Second

// ErrOriginUnreachable is an origin that could not be connected to;
// ErrOriginErrors one whose last answer was a 5xx, a timeout or unusable.
var (
	ErrOriginUnreachable = errors.New("unreachable")
	ErrOriginErrors      = errors.New("errors")
)

// originHealth is the outcome of the last forward, kept without a lock:
// every forward writes it.
type originHealth struct {
	at  atomic.Int64          // when, Unix nanoseconds; 0: no forward yet
	err atomic.Pointer[error] // nil: the origin answered below 500
}

func (h *originHealth) note(err error, now time.Time) {
	if err == nil {
		h.err.Store(nil)
	} else {
		h.err.Store(&err)
	}
	h.at.Store(now.UnixNano())
}

func (h *originHealth) last(now time.Time) (err error, fresh bool) {
	at := h.at.Load()
	if p := h.err.Load(); p != nil {
		err = *p
	}
	return err, at != 0 && now.Sub(time.Unix(0, at)) < originFresh
}

// noteForward records how a forward went: answered with status, or err.
func (g *Gateway) noteForward(status int, err error) {
	now := time.Now()
	switch {
	case errors.Is(err, origin.ErrTooLarge), errors.Is(err, origin.ErrRequestBody):
		// The request's fault: nothing learnt of the origin.
	case errors.Is(err, origin.ErrDial):
		g.health.note(fmt.Errorf("%w: %w", ErrOriginUnreachable, err), now)
	case err != nil:
		g.health.note(fmt.Errorf("%w: %w", ErrOriginErrors, err), now)
	case status >= 500:
		g.health.note(fmt.Errorf("%w: the last answer was %d", ErrOriginErrors, status), now)
	default:
		g.health.note(nil, now)
	}
}

// OriginCheck is /readyz's origin check in gateway mode: nil when the
// origin's last answer (within originFresh) was below 500, or, with no
// recent answer, when it accepts a connection; else an error wrapping
// ErrOriginUnreachable or ErrOriginErrors. Always nil in forward auth,
// which never talks to the origin.
func (g *Gateway) OriginCheck(ctx context.Context) error {
	if g.auth {
		return nil
	}
	if err, fresh := g.health.last(time.Now()); fresh {
		return err
	}
	return g.Probe(ctx)
}

// Probe connects to the origin once (and closes the connection): nil, or
// an error wrapping ErrOriginUnreachable. nil in forward auth.
func (g *Gateway) Probe(ctx context.Context) error {
	if g.auth {
		return nil
	}
	if err := g.o.Upstream.Probe(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrOriginUnreachable, err)
	}
	return nil
}

// Origin is the origin's address as the gateway dials it (host:port).
func (g *Gateway) Origin() string {
	if g.auth {
		return ""
	}
	return g.o.Upstream.Addr()
}
