package rooms

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/stream"
	"waitingroom/loadtest/internal/users"
)

// Polling (--transport poll) follows the answers' pollAfterMs within
// these bounds.
const (
	minPoll = 50 * time.Millisecond
	maxPoll = 2 * time.Second
)

// readyRun is the READY latency of one phase's users.
type readyRun struct {
	Users    int             `json:"users"`
	Measured int             `json:"measured"` // users seen READY
	Latency  measure.Latency `json:"latency"`  // enter sent → READY seen
	// ByWay counts where READY was seen: "enter" (the enter answer),
	// "stream" (the first message or a later one) or "poll".
	ByWay    map[string]int `json:"byWay"`
	Failed   int            `json:"failed"`
	Failures map[string]int `json:"failures,omitempty"`
	Left     int            `json:"left"` // users who left again once READY
}

// readyLatency makes the users first, first+1, … enter the busy room one
// after another, user k through instance k mod I, and times each until
// READY; each then leaves.
func (r *roomsRun) readyLatency(first int) *readyRun {
	ctx := r.ctx
	n := r.cfg.users
	rr := &readyRun{Users: n, ByWay: map[string]int{}, Failures: map[string]int{}}
	access, err := users.AccessTokens(ctx, r.apis[0], r.cfg.mt, n, first, 4, r.cfg.password)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rooms: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "rooms: %d users enter %s one after another (%s)\n", n, r.busy, r.cfg.transport)
	var lat []time.Duration
	for k := range n {
		if r.cfg.gap > 0 && !pace.Sleep(ctx, rand.N(r.cfg.gap)) {
			break
		}
		if ctx.Err() != nil {
			break
		}
		if access[k] == "" {
			rr.Failed++
			rr.Failures["login failed"]++
			continue
		}
		i := k % len(r.apis)
		d, way, qtok, why := r.untilReady(ctx, i, access[k])
		if ctx.Err() != nil {
			break
		}
		if why != "" {
			rr.Failed++
			rr.Failures[why]++
		} else {
			rr.Measured++
			rr.ByWay[way]++
			lat = append(lat, d)
		}
		if qtok != "" {
			if code, err := r.apis[i].Leave(context.WithoutCancel(ctx), qtok); err == nil && code/100 == 2 {
				rr.Left++
			}
		}
	}
	rr.Latency = measure.NewLatency(lat)
	fmt.Fprintf(os.Stderr, "rooms: READY %d of %d, p50 %s\n", rr.Measured, n, report.Ms(rr.Latency.P50))
	return rr
}

// untilReady enters the busy room through instance i and waits until
// READY: the time from sending the enter, where READY was seen, the queue
// token (to leave with; "" if none) and why it failed ("" if READY).
func (r *roomsRun) untilReady(ctx context.Context, i int, access string) (d time.Duration, way, qtok, why string) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.readyWait)
	defer cancel()
	t0 := time.Now()
	st, code, err := r.apis[i].Enter(ctx, access)
	switch {
	case err != nil:
		return 0, "", "", "enter: " + stream.WhyEnded(err)
	case code != http.StatusOK:
		return 0, "", "", fmt.Sprintf("enter: HTTP %d", code)
	case st.Status == "READY":
		return time.Since(t0), "enter", st.QueueToken, ""
	case st.Status != "WAITING":
		return 0, "", st.QueueToken, "enter: " + st.Status
	}
	if r.dialers[i] == nil {
		way, why = r.poll(ctx, i, st)
	} else {
		way, why = r.stream(ctx, i, st.QueueToken)
	}
	return time.Since(t0), way, st.QueueToken, why
}

// stream opens a stream with the queue token and reads it until READY.
func (r *roomsRun) stream(ctx context.Context, i int, qtok string) (way, why string) {
	pc, m, err := r.dialers[i].Open(ctx, qtok)
	if err != nil {
		return "", "stream open: " + stream.WhyEnded(err)
	}
	stop := context.AfterFunc(ctx, pc.Close)
	defer func() { stop(); pc.Close() }()
	for range stream.MaxMessages {
		switch {
		case m.Kind == "gone":
			return "", "gone"
		case m.Kind == "status" && !m.Bad && m.Status.Status == "READY":
			return "stream", ""
		}
		if m, err = pc.Next(); err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", "not READY within --ready-timeout"
			}
			return "", "stream: " + stream.WhyEnded(err)
		}
	}
	return "", "stream: too many messages without READY"
}

// poll asks for the position at the answers' pace until READY.
func (r *roomsRun) poll(ctx context.Context, i int, st client.QueueStatus) (way, why string) {
	pause := time.Duration(st.PollAfterMs) * time.Millisecond
	for range client.MaxPolls {
		if !pace.Sleep(ctx, min(max(pause, minPoll), maxPoll)) {
			return "", "not READY within --ready-timeout"
		}
		got, code, err := r.apis[i].Position(ctx, st.QueueToken)
		switch {
		case code == http.StatusNotFound:
			return "", "position: 404 not_in_queue"
		case err != nil || code != http.StatusOK:
			pause = time.Second
			continue
		case got.Status == "READY":
			return "poll", ""
		}
		pause = time.Duration(got.PollAfterMs) * time.Millisecond
	}
	return "", "not READY within client.MaxPolls polls"
}
