package attack

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
)

// stormResult is what the refresh storm achieved.
type stormResult struct {
	Tokens int `json:"tokens"`
	// Ready is how many 200s said READY: a READY status asks for no
	// pause (pollAfterMs 0), so the server's poll limit, paced by it,
	// does not apply to them.
	Ready        int             `json:"readyAnswers"`
	Seconds      float64         `json:"seconds"`
	Codes        measure.Summary `json:"answers"`
	PerSecond    float64         `json:"requestsPerSecond"`
	EnterFailure string          `json:"enterFailure,omitempty"`
}

// storm makes each queue token poll its position in a closed loop, as fast
// as answered, for d or until limit requests were sent in all.
func (a *attacker) storm(ctx context.Context, tokens []string, d time.Duration, limit int) *stormResult {
	res := &stormResult{Tokens: len(tokens)}
	cl := a.client(stormAddr, len(tokens))
	defer cl.HTTP.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sent, ready atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, tok := range tokens {
		wg.Go(func() {
			for ctx.Err() == nil && sent.Add(1) <= int64(limit) {
				var st client.QueueStatus
				if code, _ := cl.Call(ctx, "storm", http.MethodGet, cl.RoomPath("position"), tok, nil, &st); code == http.StatusOK && st.Status == "READY" {
					ready.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Ready = int(ready.Load())
	res.Codes = a.rec.Summary("storm")
	if res.Seconds > 0 {
		res.PerSecond = float64(res.Codes.Count) / res.Seconds
	}
	return res
}
