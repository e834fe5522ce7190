package poll

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
)

// The poll scenario's open loop (--mode open): each user polls at the pace
// its answer asks for — the next poll pollAfterMs after the answer, as the
// waiting-room page does — instead of as fast as the server answers. A
// server with its limits on answers such a crowd as it would a real one
// (a closed loop is a refresh storm, which it rightly refuses), so the
// run measures what the limits cost when they let everyone through: Redis
// commands and server CPU per poll, latency, and any 429 (there should be
// none). Throughput is the crowd's offered rate, not the server's ceiling.

// openPace is one user's next wait, from the answer: pollAfterMs on 200
// (READY's 0 ends the user's polling: nothing left to wait for), the
// Retry-After on 429 (whole seconds), else fallback.
func openPace(code int, body []byte, retryAfter string, fallback time.Duration) (wait time.Duration, done bool) {
	switch code {
	case http.StatusOK:
		ms, ok := pollAfterMs(body)
		if !ok {
			return fallback, false
		}
		return time.Duration(ms) * time.Millisecond, ms == 0
	case http.StatusTooManyRequests:
		if s, err := strconv.Atoi(retryAfter); err == nil && s > 0 {
			return time.Duration(s) * time.Second, false
		}
	}
	return fallback, false
}

// pollAfterMs finds "pollAfterMs":N in a QueueStatus body without decoding
// it (the generator shares the server's CPU).
func pollAfterMs(body []byte) (int64, bool) {
	const key = `"pollAfterMs":`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := body[i+len(key):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// openLoop runs one goroutine per token for spread + d: each polls target
// first at a random moment within spread (so the crowd does not start in
// step), then at its pace. Polls that start after spread are measured, and
// probe (nil: none) measures what the time after spread cost.
func openLoop(ctx context.Context, hc *http.Client, target string, tokens []string, spread, d time.Duration, probe *costProbe) *phase {
	start := time.Now()
	from, until := start.Add(spread), start.Add(spread+d)
	run, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	marked := make(chan probeMark, 1)
	go func() {
		pace.Sleep(run, time.Until(from))
		marked <- probe.begin(ctx)
	}()
	recs := make([]*measure.Recorder, len(tokens))
	paces := make([]time.Duration, len(tokens)) // the last pace each user was given
	var wg sync.WaitGroup
	for u, tok := range tokens {
		rec := measure.NewRecorder()
		recs[u] = rec
		wg.Go(func() {
			wait := time.Duration(rand.Int64N(int64(max(spread, time.Millisecond))))
			for pace.Sleep(run, wait) {
				t0 := time.Now()
				code, body, retry := pollOnce(ctx, hc, target, tok)
				if t0.After(from) {
					rec.Record("server", code, time.Since(t0))
				}
				var done bool
				if wait, done = openPace(code, body, retry, time.Second); done {
					return
				}
				paces[u] = wait
			}
		})
	}
	wg.Wait()
	all := measure.NewRecorder()
	for _, r := range recs {
		all.Merge(r)
	}
	p := summarize("server (open loop)", len(tokens), all.Summary("server"), d)
	probe.end(ctx, <-marked, p)
	for _, w := range paces {
		if w > 0 {
			p.OfferedRPS += float64(time.Second) / float64(w)
		}
	}
	return p
}

// pollOnce sends one poll and returns its status code (measure.NoResponse
// without an answer), body and Retry-After.
func pollOnce(ctx context.Context, hc *http.Client, target, token string) (int, []byte, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return measure.NoResponse, nil, ""
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return measure.NoResponse, nil, ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return measure.NoResponse, nil, ""
	}
	return resp.StatusCode, body, resp.Header.Get("Retry-After")
}
