package poll

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/users"
)

// The poll scenario's enter phases (--enter, closed loop): POST enter
// against the plain handler answering a body of enter's size, for users
// already waiting (the pollers enter again: enter is idempotent and keeps
// their place) and for fresh users (a new id per request: each takes a
// ticket and a new queue token), between two runs of the plain handler
// (the ratios are to their mean). Run the server with WR_RATE_LIMITS=off:
// the enter limits (per address, per user) would refuse a closed loop.

// enterConfig is the enter phases' flags.
type enterConfig struct {
	on             bool
	conns          int
	fresh, firstID int
}

// enterFlags registers the enter phases' flags on fs; the returned func,
// called after parsing with the minter (nil without --mint-tokens),
// checks them.
func enterFlags(fs *flag.FlagSet) func(mt *mint.Minter) (enterConfig, error) {
	on := fs.Bool("enter", false, "closed loop: also measure POST enter against the plain handler, for users already waiting (the pollers enter again) and for fresh users (needs --mint-tokens; run the server with WR_RATE_LIMITS=off)")
	conns := fs.Int("enter-conns", 0, "closed-loop connections of the enter phases (default --conns)")
	fresh := fs.Int("enter-users", 50_000, "fresh users minted for the fresh-enter phase (warm-up included); the phase ends early if they run out")
	first := fs.Int("enter-first-id", 1_000_001, "the first fresh user's id (enter reads no database row, so the ids need not be seeded)")
	return func(mt *mint.Minter) (enterConfig, error) {
		c := enterConfig{on: *on, conns: *conns, fresh: *fresh, firstID: *first}
		if c.conns == 0 {
			c.conns = intFlag(fs, "conns")
		}
		switch {
		case !c.on:
		case mt == nil:
			return c, errors.New("--enter needs --mint-tokens (fresh users cannot all log in)")
		case c.conns < 1 || c.fresh < 1 || c.firstID < 1:
			return c, errors.New("--enter-conns, --enter-users and --enter-first-id must be positive")
		}
		return c, nil
	}
}

// intFlag is the value of fs's int flag name (0 when it is not one).
func intFlag(fs *flag.FlagSet, name string) int {
	if f := fs.Lookup(name); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			n, _ := g.Get().(int)
			return n
		}
	}
	return 0
}

// enterPhases are the enter measurements, and their ratios to the
// yardstick.
type enterPhases struct {
	Waiting  *phase `json:"waiting,omitempty"`  // users already waiting enter again
	Fresh    *phase `json:"fresh,omitempty"`    // new users take a ticket
	Baseline *phase `json:"baseline,omitempty"` // the plain handler, a body of enter's size, after the enters
	// BaselineBefore is the plain handler again, before the enters: the
	// ratios are to the mean of the two, so that a machine whose load
	// drifts during the run moves the yardstick with the enters.
	BaselineBefore *phase  `json:"baselineBefore,omitempty"`
	WaitingRatio   float64 `json:"waitingRatio,omitempty"`
	FreshRatio     float64 `json:"freshRatio,omitempty"`
	BodyBytes      int     `json:"bodyBytes"`
	FreshEntered   int     `json:"freshEntered"` // fresh users who entered (warm-up included); they leave afterwards
	Error          string  `json:"error,omitempty"`
}

// measureEnter runs the enter phases (admission frozen), then has the
// fresh users leave.
func measureEnter(ctx context.Context, cfg pollConfig, a *client.API, adm *client.Admin, probe *costProbe) *enterPhases {
	e := &enterPhases{}
	hc, conns := a.HTTP, cfg.enter.conns
	enterURL := a.Base + a.RoomPath("enter")
	access, err := users.AccessTokens(ctx, a, cfg.mt, cfg.users, 1, 16, cfg.password)
	if err != nil {
		e.Error = err.Error()
		return e
	}
	sample, err := post(ctx, hc, enterURL, access[0])
	if err != nil {
		e.Error = fmt.Sprintf("sample enter: %v", err)
		return e
	}
	baseURL, stop, err := startBaseline(sample, cfg.ownProcess)
	if err != nil {
		e.Error = err.Error()
		return e
	}
	defer stop()
	e.BodyBytes = len(sample)
	fresh, err := users.AccessTokens(ctx, a, cfg.mt, cfg.enter.fresh, cfg.enter.firstID, 16, cfg.password)
	if err != nil {
		e.Error = err.Error()
		return e
	}
	fmt.Fprintf(os.Stderr, "poll: baseline (enter), enter (waiting), enter (fresh), baseline (enter): %d conns, %v warm-up + %v each\n", conns, cfg.warm, cfg.dur)
	e.BaselineBefore = measurePhase(ctx, hc, "baseline (enter, before)", conns, cfg.warm, cfg.dur, postRequests(baseURL, access), nil)
	e.Waiting = measurePhase(ctx, hc, "enter (waiting)", conns, cfg.warm, cfg.dur, postRequests(enterURL, access), probe)
	kept := make([][]string, conns) // the fresh users' queue tokens, by worker
	var next atomic.Int64
	e.Fresh = measurePhaseKeeping(ctx, hc, "enter (fresh)", conns, cfg.warm, cfg.dur, freshRequests(enterURL, fresh, &next),
		func(w int, body []byte) {
			if t := jsonString(body, "queueToken"); t != "" {
				kept[w] = append(kept[w], t)
			}
		}, probe)
	var left []string
	for _, ts := range kept {
		left = append(left, ts...)
	}
	e.FreshEntered = len(left)
	if ctx.Err() == nil {
		e.Baseline = measurePhase(ctx, hc, "baseline (enter)", conns, cfg.warm, cfg.dur, postRequests(baseURL, access), nil)
	}
	users.LeaveAll(context.WithoutCancel(ctx), a, adm, left, 16)
	if e.Baseline != nil && e.Baseline.RPS > 0 && e.BaselineBefore.RPS > 0 {
		base := (e.Baseline.RPS + e.BaselineBefore.RPS) / 2
		e.WaitingRatio, e.FreshRatio = e.Waiting.RPS/base, e.Fresh.RPS/base
	}
	return e
}

// postRequests are POSTs of target, worker w with the access token w mod
// len(tokens).
func postRequests(target string, tokens []string) reqFunc {
	return func(ctx context.Context, w, _ int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+tokens[w%len(tokens)])
		}
		return req, err
	}
}

// errNoFreshUsers ends a fresh-enter worker: every minted user entered.
var errNoFreshUsers = errors.New("no fresh users left")

// freshRequests are POSTs of target, each with the next unused access
// token of tokens.
func freshRequests(target string, tokens []string, next *atomic.Int64) reqFunc {
	return func(ctx context.Context, _, _ int) (*http.Request, error) {
		i := next.Add(1) - 1
		if i >= int64(len(tokens)) {
			return nil, errNoFreshUsers
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+tokens[i])
		}
		return req, err
	}
}

// post returns a 200 answer's body to a POST without a body.
func post(ctx context.Context, hc *http.Client, url, bearer string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	return readOK(hc, req)
}

// jsonString finds "key":"value" in a JSON body without decoding it
// (values without escapes only, as tokens are); "" when absent.
func jsonString(body []byte, key string) string {
	k := []byte(`"` + key + `":"`)
	i := bytes.Index(body, k)
	if i < 0 {
		return ""
	}
	rest := body[i+len(k):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
