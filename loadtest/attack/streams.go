package attack

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/stream"
)

// streamFloodResult is what the stream flood achieved.
type streamFloodResult struct {
	Attempts int             `json:"attempts"`
	Codes    measure.Summary `json:"answers"` // 200: a stream opened
	MaxOpen  int64           `json:"maxOpen"`
	// OpenAfterSettle is how many of the user's streams were still open
	// 2 s after the last attempt: the per-user cap should hold it.
	OpenAfterSettle int            `json:"openAfterSettle"`
	Replaced        int            `json:"toldReconnect"` // event/frame "reconnect"
	Ended           map[string]int `json:"endedBy,omitempty"`
	EnterFailure    string         `json:"enterFailure,omitempty"`
}

// streamFlood opens n SSE streams with one queue token from one address,
// each read until the server ends it, and counts how many stay open
// concurrently. It closes checked once it has counted them, 2 s after the
// last attempt, and holds them until ctx ends.
func (a *attacker) streamFlood(ctx context.Context, qtok string, n int, idle time.Duration, checked chan<- struct{}) *streamFloodResult {
	counted := sync.OnceFunc(func() { close(checked) })
	defer counted()
	res := &streamFloodResult{Attempts: n, Ended: map[string]int{}}
	d, err := stream.NewDialer("sse", a.base, a.room, a.timeout, idle)
	if err != nil {
		res.EnterFailure = err.Error()
		return res
	}
	d = d.From(client.DialFrom(streamAddr))
	var (
		open     atomic.Int64
		replaced atomic.Int64
		mu       sync.Mutex
		pcs      []stream.Conn
		wg       sync.WaitGroup
	)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		octx, cancel := context.WithTimeout(ctx, a.timeout)
		start := time.Now()
		pc, m, err := d.Open(octx, qtok)
		cancel()
		var se client.StatusError
		switch {
		case errors.As(err, &se):
			a.rec.Record("stream-flood", int(se), time.Since(start))
			continue
		case err != nil:
			if ctx.Err() == nil {
				a.rec.Record("stream-flood", measure.NoResponse, time.Since(start))
			}
			continue
		}
		a.rec.Record("stream-flood", http.StatusOK, time.Since(start))
		res.MaxOpen = max(res.MaxOpen, open.Add(1))
		mu.Lock()
		pcs = append(pcs, pc)
		mu.Unlock()
		wg.Go(func() {
			why := "-"
			for ; ; m, err = pc.Next() {
				if err != nil {
					why = stream.WhyEnded(err)
					break
				}
				if m.Kind == "reconnect" {
					replaced.Add(1)
				}
				if m.Kind == "gone" || m.Kind == "reconnect" {
					why = m.Kind
				}
			}
			open.Add(-1)
			if ctx.Err() == nil {
				mu.Lock()
				res.Ended[why]++
				mu.Unlock()
			}
		})
	}
	if pace.Sleep(ctx, 2*time.Second) {
		res.OpenAfterSettle = int(open.Load())
	} else {
		res.OpenAfterSettle = -1
	}
	counted()
	// Held until the run ends: streams are what this attack hoards.
	<-ctx.Done()
	mu.Lock()
	for _, pc := range pcs {
		pc.Close()
	}
	mu.Unlock()
	wg.Wait()
	res.Replaced = int(replaced.Load())
	res.Codes = a.rec.Summary("stream-flood")
	return res
}
