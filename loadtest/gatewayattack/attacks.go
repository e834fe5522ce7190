package gatewayattack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/stream"
)

// The gateway attacks. Each runs from source addresses of its own,
// 127.6.k.x with k its index in gwAttackNames (so that the origin can tell
// which attack a request came from by the gateway's X-Forwarded-For), is
// bounded by count and by time, and records what the gateway answered.

var gwAttackNames = []string{"smuggle", "variants", "slow-readers", "bodies", "session-share", "stuffing"}

// gwAttackNet is the second octet of the attacks' source addresses.
const gwAttackNet = 6

// gwAddr is the j-th source address of attack name.
func gwAddr(name string, j int) net.IP {
	k := 0
	for k < len(gwAttackNames) && gwAttackNames[k] != name {
		k++
	}
	return net.IPv4(127, gwAttackNet, byte(k), byte(1+j%250))
}

// gwAttack is what one attack sent and how the gateway answered.
type gwAttack struct {
	Name   string         `json:"name"`
	Sent   int            `json:"sent"`
	Codes  map[string]int `json:"answers"` // status (or "closed", "err") → count
	Detail string         `json:"detail,omitempty"`
	// Unpassed is the origin's count of this attack's protected requests
	// without a valid pass.
	Unpassed int `json:"unpassedAtOrigin"`
	mu       sync.Mutex
}

func newGWAttack(name string) *gwAttack { return &gwAttack{Name: name, Codes: map[string]int{}} }

func (a *gwAttack) record(what string) {
	a.mu.Lock()
	a.Codes[what]++
	a.mu.Unlock()
}

func (a *gwAttack) sent(n int) {
	a.mu.Lock()
	a.Sent += n
	a.mu.Unlock()
}

// codesString lists the answers in order, e.g. "403×40 closed×2".
func (a *gwAttack) codesString() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a.Codes)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, a.Codes[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// gwAttacker is the shared context of one run's attacks.
type gwAttacker struct {
	base    string
	host    string // base's host:port
	timeout time.Duration
}

// dial opens a raw connection to the gateway from src.
func (g *gwAttacker) dial(ctx context.Context, src net.IP) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: src}}
	return d.DialContext(ctx, "tcp", g.host)
}

// answerName is how a raw exchange's answer is counted.
func answerName(resp *http.Response, err error) string {
	switch {
	case err == nil:
		return fmt.Sprint(resp.StatusCode)
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return "closed"
	}
	return "err"
}

// smuggle sends, n times, an upgrade on an unprotected path with a
// protected POST pipelined behind it on the same socket, and reads what
// comes back: the upgrade's answer, then the smuggled request's (if the
// gateway answers it at all, it must be without reaching the origin).
func (g *gwAttacker) smuggle(ctx context.Context, n int) *gwAttack {
	a := newGWAttack("smuggle")
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		conn, err := g.dial(ctx, gwAddr(a.Name, i))
		if err != nil {
			a.record("err")
			continue
		}
		a.sent(2)
		raw := "GET /hello HTTP/1.1\r\nHost: " + g.host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" +
			"POST /api/orders HTTP/1.1\r\nHost: " + g.host + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.WriteString(conn, raw); err != nil {
			a.record("err")
			conn.Close()
			continue
		}
		br := bufio.NewReader(conn)
		for k, what := range []string{"upgrade", "smuggled"} {
			resp, err := http.ReadResponse(br, nil)
			a.record(what + " " + answerName(resp, err))
			if err != nil {
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if k == 0 && resp.StatusCode == http.StatusSwitchingProtocols {
				break // a tunnel: nothing more is HTTP
			}
		}
		conn.Close()
	}
	return a
}

// routeVariants are spellings of the protected POST /api/orders that
// origins route to its handler, and of GET /checkout/*.
var routeVariants = []string{
	"POST /API/orders/", "POST /Api/Orders", "POST /api//orders", "POST //api/orders//", "POST /api/orders;x=1",
	"POST /api;v=2/orders", "POST /api/orders.json", "POST /api%2Forders", "POST /api/orders%2F", "POST /api/./orders",
	"POST /api/x/../orders", "POST /%61pi/orders", "POST /api%5Corders", "POST /api/orders.", "GET /Checkout/pay", "GET /CHECKOUT/PAY",
	"HEAD /checkout/pay", "GET /checkout;x=1/pay",
}

// variants sends each route variant without a pass, rounds times, one
// request per connection, written byte for byte.
func (g *gwAttacker) variants(ctx context.Context, rounds int) *gwAttack {
	a := newGWAttack("variants")
	for r := range rounds {
		for i, v := range routeVariants {
			if ctx.Err() != nil {
				return a
			}
			method, path, _ := strings.Cut(v, " ")
			raw := method + " " + path + " HTTP/1.1\r\nHost: " + g.host + "\r\nAccept: application/json\r\nConnection: close\r\n"
			if method == http.MethodPost {
				raw += "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
			} else {
				raw += "\r\n"
			}
			a.sent(1)
			conn, err := g.dial(ctx, gwAddr(a.Name, r*len(routeVariants)+i))
			if err != nil {
				a.record("err")
				continue
			}
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(conn, raw)
			req := &http.Request{Method: method}
			resp, err := http.ReadResponse(bufio.NewReader(conn), req)
			a.record(answerName(resp, err))
			if err == nil {
				resp.Body.Close()
			}
			conn.Close()
		}
	}
	return a
}

// slowReaders opens n downloads of the origin's large file and reads each
// at rate bytes a second for d, then closes them.
func (g *gwAttacker) slowReaders(ctx context.Context, n int, rate int, d time.Duration) *gwAttack {
	a := newGWAttack("slow-readers")
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var read atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a.sent(1)
			conn, err := g.dial(ctx, gwAddr(a.Name, i))
			if err != nil {
				a.record("err")
				return
			}
			defer conn.Close()
			// A small receive buffer: the reader is slow, the kernel too.
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(16 << 10)
			}
			_, _ = io.WriteString(conn, "GET /download/big HTTP/1.1\r\nHost: "+g.host+"\r\n\r\n")
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReaderSize(conn, 4<<10)
			resp, err := http.ReadResponse(br, nil)
			a.record(answerName(resp, err))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, max(rate/10, 1))
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				k, err := io.ReadFull(resp.Body, buf)
				read.Add(int64(k))
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	a.Detail = fmt.Sprintf("%d readers at %d KiB/s for %v read %.1f MiB in all", n, rate>>10, d, float64(read.Load())/(1<<20))
	return a
}

// zeros is an endless body of zero bytes, at most n.
type zeros struct{ left int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.left)
	clear(p[:n])
	z.left -= n
	return int(n), nil
}

// bodies sends n large bodies (mib each) to the protected POST /api/orders
// without a pass, and n to the unprotected POST /upload, all at once.
func (g *gwAttacker) bodies(ctx context.Context, n, mib int) *gwAttack {
	a := newGWAttack("bodies")
	var wg sync.WaitGroup
	for i := range 2 * n {
		path := "/api/orders"
		if i%2 == 1 {
			path = "/upload"
		}
		wg.Go(func() {
			a.sent(1)
			hc := client.NewFrom(gwAddr(a.Name, i), 1, time.Minute)
			defer hc.CloseIdleConnections()
			size := int64(mib) << 20
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+path, io.NopCloser(&zeros{left: size}))
			if err != nil {
				a.record("err")
				return
			}
			req.ContentLength = size
			req.Header.Set("Content-Type", "application/octet-stream")
			resp, err := hc.Do(req)
			if err != nil {
				a.record(path + " " + stream.WhyEnded(err))
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			a.record(fmt.Sprintf("%s %d", path, resp.StatusCode))
		})
	}
	wg.Wait()
	a.Detail = fmt.Sprintf("%d × %d MiB to /api/orders (protected, no pass) and %d to /upload", n, mib, n)
	return a
}

// sessionShare is admitted once to room (its pass mode session), opens
// the session with one protected request, then uses its cookies from
// addrs addresses at once, in a closed loop, for d.
func (g *gwAttacker) sessionShare(ctx context.Context, room, path string, addrs int, d time.Duration, bound time.Duration) *gwAttack {
	a := newGWAttack("session-share")
	owner := newGWVisitor(g.base, room, gwAddr(a.Name, 0), g.timeout)
	defer owner.hc.CloseIdleConnections()
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	st, err := owner.enter(octx, 10)
	if err == nil {
		err = owner.awaitReady(octx, st)
	}
	var code int
	if err == nil {
		code, _, err = owner.do(octx, http.MethodGet, path, "", nil)
	}
	if err != nil || code != http.StatusOK {
		a.Detail = fmt.Sprintf("the owner could not open a session: %d %s", code, stream.WhyEnded(err))
		return a
	}
	u, _ := url.Parse(g.base)
	cookies := owner.hc.Jar.Cookies(u)
	sctx, scancel := context.WithTimeout(ctx, d)
	defer scancel()
	var wg sync.WaitGroup
	for j := range addrs {
		wg.Go(func() {
			c := newGWVisitor(g.base, room, gwAddr(a.Name, 1+j), g.timeout)
			defer c.hc.CloseIdleConnections()
			c.hc.Jar.SetCookies(u, cookies)
			for sctx.Err() == nil {
				code, _, err := c.do(sctx, http.MethodGet, path, "", nil)
				if err != nil {
					if sctx.Err() == nil { // not one the window's end cut
						a.sent(1)
						a.record("err")
					}
					continue
				}
				a.sent(1)
				a.record(fmt.Sprint(code))
			}
		})
	}
	wg.Wait()
	a.Detail = fmt.Sprintf("one session cookie from %d addresses for %v", addrs, d)
	return a
}

// stuffing takes places as a bot does: fresh visitors (no cookie) from a
// few addresses, bare enters without a proof (bare of them), and enters
// with a solved proof (solved of them), as fast as answered.
func (g *gwAttacker) stuffing(ctx context.Context, room string, addrs, bare, solved int) *gwAttack {
	a := newGWAttack("stuffing")
	var wg sync.WaitGroup
	var next atomic.Int64
	for j := range addrs {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= bare+solved {
					return
				}
				v := newGWVisitor(g.base, room, gwAddr(a.Name, j), g.timeout)
				body := ""
				if i >= bare {
					var err error
					if body, err = v.proof(ctx); err != nil {
						a.record("err")
						v.hc.CloseIdleConnections()
						continue
					}
				}
				a.sent(1)
				var e struct {
					Error string `json:"error"`
				}
				code, _, err := v.do(ctx, http.MethodPost, v.roomPath("enter"), body, &e)
				v.hc.CloseIdleConnections()
				kind := "bare"
				if body != "" {
					kind = "solved"
				}
				switch {
				case err != nil:
					a.record(kind + " err")
				case e.Error != "":
					a.record(fmt.Sprintf("%s %d %s", kind, code, e.Error))
				default:
					a.record(fmt.Sprintf("%s %d", kind, code))
				}
			}
		})
	}
	wg.Wait()
	a.Detail = fmt.Sprintf("%d bare and %d solved enters of fresh visitors from %d addresses", bare, solved, addrs)
	return a
}
