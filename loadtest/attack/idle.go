package attack

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

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
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
	dial := client.DialFrom(idleFloodAddr)
	f := &idleSockets{ctx: ctx, res: res}
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
		f.add(c)
	}
	lastOpen := time.Now()
	check := deadline + 2*time.Second
	if pace.Sleep(ctx, check) {
		res.HeldPastDeadline = int(f.open.Load())
		res.CheckedAtSeconds = time.Since(lastOpen).Seconds()
	}
	f.closeAll()
	if ctx.Err() != nil && res.CheckedAtSeconds == 0 {
		res.HeldPastDeadline = -1 // the run ended before the check
	}
	if len(f.lives) > 0 {
		l := slices.Clone(f.lives)
		slices.Sort(l)
		res.MedianLifeSeconds, res.MaxLifeSeconds = measure.Percentile(l, 50).Seconds(), measure.Percentile(l, 100).Seconds()
	}
	return res
}

// idleSockets are the flood's open sockets, each with a reader that waits
// for the server's answer or close.
type idleSockets struct {
	ctx     context.Context
	res     *idleFloodResult // its counts are written under mu
	open    atomic.Int64
	closing atomic.Bool // we close the rest: not the server's doing
	mu      sync.Mutex
	conns   []net.Conn
	lives   []time.Duration // of the connections the server ended
	wg      sync.WaitGroup
}

// add counts a connected socket and starts its reader.
func (f *idleSockets) add(c net.Conn) {
	f.res.Connected++
	f.res.MaxOpen = max(f.res.MaxOpen, f.open.Add(1))
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
	f.wg.Add(1)
	go f.watch(c, time.Now())
}

// watch reads c's first line: a 503 (a connection cap), another answer
// (e.g. 408), or a close without a word; sockets we close at the end are
// not counted.
func (f *idleSockets) watch(c net.Conn, opened time.Time) {
	defer f.wg.Done()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	life := time.Since(opened)
	f.open.Add(-1)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasPrefix(line, "HTTP/1.1 503"):
		f.res.Refused503++
	case strings.HasPrefix(line, "HTTP/"):
		fields := strings.Fields(line)
		if len(fields) > 1 {
			f.res.Answered[fields[1]]++
		}
	case f.closing.Load() || f.ctx.Err() != nil:
		return // closed by us at the end
	case err != nil:
		f.res.Closed++
	}
	f.lives = append(f.lives, life)
}

// closeAll closes every socket still open and waits for the readers.
func (f *idleSockets) closeAll() {
	f.closing.Store(true)
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
