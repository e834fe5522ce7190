package main

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// idleFloodResult is what the idle-socket flood achieved.
type idleFloodResult struct {
	Sockets   int `json:"sockets"`   // asked for
	Connected int `json:"connected"` // TCP connections made
	DialFails int `json:"dialFailures"`
	// Refused503: answered 503 at once (a connection cap); Answered: other
	// answers before the close (e.g. 408); Closed: closed by the server
	// without a word.
	Refused503 int            `json:"refused503"`
	Answered   map[string]int `json:"answeredOther,omitempty"`
	Closed     int            `json:"closedSilently"`
	MaxOpen    int64          `json:"maxOpen"`
	// HeldPastDeadline is how many were still open deadline + grace after
	// the last one was opened: the server should have closed them all.
	HeldPastDeadline int     `json:"heldPastDeadline"`
	DeadlineSeconds  float64 `json:"deadlineSeconds"`
	CheckedAtSeconds float64 `json:"checkedAfterSeconds"` // after the last open
	// Lifetimes of the connections the server closed: median and max.
	MedianLifeSeconds float64 `json:"medianLifetimeSeconds"`
	MaxLifeSeconds    float64 `json:"maxLifetimeSeconds"`
}

// idleFlood opens n sockets from one address — half send nothing, half
// half a request line — and watches which the server closes: every socket
// has a reader that waits for the server's answer or close. deadline + 2 s
// after the last open it counts those still open, then closes them all.
func (a *attacker) idleFlood(ctx context.Context, n int, deadline time.Duration) *idleFloodResult {
	res := &idleFloodResult{Sockets: n, Answered: map[string]int{}, DeadlineSeconds: deadline.Seconds()}
	u, err := url.Parse(a.base)
	if err != nil {
		return res
	}
	dial := loopbackDial(func() net.IP { return idleFloodAddr })
	var (
		open    atomic.Int64
		closing atomic.Bool // we close the rest: not the server's doing
		mu      sync.Mutex
		conns   []net.Conn
		lives   []time.Duration
		wg      sync.WaitGroup
	)
	watch := func(c net.Conn, opened time.Time) {
		defer wg.Done()
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		life := time.Since(opened)
		open.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(line, "HTTP/1.1 503"):
			res.Refused503++
		case strings.HasPrefix(line, "HTTP/"):
			f := strings.Fields(line)
			if len(f) > 1 {
				res.Answered[f[1]]++
			}
		case closing.Load() || ctx.Err() != nil:
			return // closed by us at the end
		case err != nil:
			res.Closed++
		}
		lives = append(lives, life)
	}
	half := []byte("GET " + (&url.URL{Path: "/api/v1/rooms/" + a.room + "/position"}).EscapedPath() + " HT")
	for i := 0; i < n && ctx.Err() == nil; i++ {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := dial(dctx, "tcp", u.Host)
		cancel()
		if err != nil {
			res.DialFails++
			continue
		}
		if i%2 == 1 {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(half)
		}
		res.Connected++
		res.MaxOpen = max(res.MaxOpen, open.Add(1))
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		wg.Add(1)
		go watch(c, time.Now())
	}
	lastOpen := time.Now()
	check := deadline + 2*time.Second
	if sleep(ctx, check) {
		res.HeldPastDeadline = int(open.Load())
		res.CheckedAtSeconds = time.Since(lastOpen).Seconds()
	}
	closing.Store(true)
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	if ctx.Err() != nil && res.CheckedAtSeconds == 0 {
		res.HeldPastDeadline = -1 // the run ended before the check
	}
	if len(lives) > 0 {
		l := slices.Clone(lives)
		slices.Sort(l)
		res.MedianLifeSeconds, res.MaxLifeSeconds = Percentile(l, 50).Seconds(), Percentile(l, 100).Seconds()
	}
	return res
}
