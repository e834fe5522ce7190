package gatewayattack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/stream"
	"waitingroom/server/pow"
)

// A legitimate visitor of the gateway-attack scenario is a browser-like
// anonymous client: a cookie jar, no redirects followed. It enters the
// room through /_wr/api/v1 (solving the proof of work when the room asks
// for one), polls its position at the pace the answers ask until READY,
// then makes one protected request, which must reach the origin with a
// pass (2xx).

// gwVisitor is one browser-like client.
type gwVisitor struct {
	base, room string
	hc         *http.Client
}

// newGWVisitor is a visitor whose connections come from src.
func newGWVisitor(base, room string, src net.IP, timeout time.Duration) *gwVisitor {
	jar, _ := cookiejar.New(nil)
	hc := client.NewFrom(src, 2, timeout)
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &gwVisitor{base: base, room: room, hc: hc}
}

// do sends a request and decodes a JSON answer into out (when not nil),
// returning the status and the Retry-After seconds, if any.
func (v *gwVisitor) do(ctx context.Context, method, path, body string, out any) (int, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, v.base+path, strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if out != nil {
		_ = json.Unmarshal(raw, out)
	}
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, ra, nil
}

func (v *gwVisitor) roomPath(op string) string { return "/_wr/api/v1/rooms/" + v.room + "/" + op }

// proof fetches a challenge and solves it: enter's body ("" when the room
// asks none).
func (v *gwVisitor) proof(ctx context.Context) (string, error) {
	var ch struct {
		Required   bool   `json:"required"`
		Challenge  string `json:"challenge"`
		Difficulty int    `json:"difficulty"`
	}
	code, _, err := v.do(ctx, http.MethodGet, v.roomPath("challenge"), "", &ch)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("challenge: %w", client.StatusError(code))
	}
	if !ch.Required {
		return "", nil
	}
	b, _ := json.Marshal(map[string]string{"challenge": ch.Challenge, "solution": pow.Solve(ch.Challenge, ch.Difficulty)})
	return string(b), nil
}

// enter enters the room as the page does: a proof if asked, a retry after
// Retry-After on 429, a fresh proof on 403 challenge_invalid (a harder
// one is due). It gives up after tries attempts.
func (v *gwVisitor) enter(ctx context.Context, tries int) (client.QueueStatus, error) {
	var st client.QueueStatus
	body, err := v.proof(ctx)
	if err != nil {
		return st, err
	}
	for range tries {
		var e struct {
			Error string `json:"error"`
		}
		raw := &json.RawMessage{}
		code, ra, err := v.do(ctx, http.MethodPost, v.roomPath("enter"), body, raw)
		if err != nil {
			return st, err
		}
		switch {
		case code == http.StatusOK:
			err := json.Unmarshal(*raw, &st)
			return st, err
		case code == http.StatusTooManyRequests:
			if !pace.Sleep(ctx, time.Duration(max(ra, 1))*time.Second) {
				return st, ctx.Err()
			}
		case code == http.StatusForbidden && json.Unmarshal(*raw, &e) == nil && strings.HasPrefix(e.Error, "challenge_"):
			if body, err = v.proof(ctx); err != nil {
				return st, err
			}
		default:
			return st, fmt.Errorf("enter: %w", client.StatusError(code))
		}
	}
	return st, errors.New("enter: still refused after retries")
}

// awaitReady polls the position at the pace the answers ask until READY.
func (v *gwVisitor) awaitReady(ctx context.Context, st client.QueueStatus) error {
	for st.Status != "READY" {
		if st.Status != "WAITING" && st.Status != "" {
			return fmt.Errorf("position: status %s", st.Status)
		}
		if !pace.Sleep(ctx, max(time.Duration(st.PollAfterMs)*time.Millisecond, 100*time.Millisecond)) {
			return ctx.Err()
		}
		code, ra, err := v.do(ctx, http.MethodGet, v.roomPath("position"), "", &st)
		if err != nil {
			return err
		}
		switch code {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			st = client.QueueStatus{Status: "WAITING", PollAfterMs: int64(max(ra, 1)) * 1000}
		default:
			return fmt.Errorf("position: %w", client.StatusError(code))
		}
	}
	return nil
}

// gwLegit is what the legitimate visitors of one run did.
type gwLegit struct {
	Visitors   int             `json:"visitors"`
	Completed  int             `json:"completed"` // protected request answered 2xx
	Errors     int             `json:"errors"`    // a final answer other than 2xx, or none
	Lost       int             `json:"lost"`      // never READY within the run's bound
	EnterReady measure.Summary `json:"enterToReady"`
	Protected  measure.Summary `json:"protected"`
	Failures   []string        `json:"failures,omitempty"` // the first few, why
}

// gwLegitAddr is the g-th legitimate address: 127.1.x.y, each of the
// first 250 in a /24 of its own, as a real crowd comes from many networks
// (the gateway's enter limits and the proof's rise count per /24).
func gwLegitAddr(g int) net.IP { return net.IPv4(127, 1, byte(1+g%250), byte(1+g/250%250)) }

// runLegit runs n visitors arriving evenly over over, perAddr to an
// address starting at the addrFrom-th; each is bounded by bound.
func runLegit(ctx context.Context, base, room, protected string, n, perAddr, addrFrom int, over, bound, timeout time.Duration) *gwLegit {
	res := &gwLegit{Visitors: n}
	rec := measure.NewRecorder()
	var mu sync.Mutex
	fail := func(lost bool, why string) {
		mu.Lock()
		defer mu.Unlock()
		if lost {
			res.Lost++
		} else {
			res.Errors++
		}
		if len(res.Failures) < 5 {
			res.Failures = append(res.Failures, why)
		}
	}
	method, path, _ := strings.Cut(protected, " ")
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		at := start.Add(time.Duration(int64(over) * int64(i) / int64(max(n, 1))))
		wg.Go(func() {
			if !pace.SleepUntil(ctx, at) {
				return
			}
			vctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			v := newGWVisitor(base, room, gwLegitAddr(addrFrom+i/perAddr), timeout)
			defer v.hc.CloseIdleConnections()
			t0 := time.Now()
			st, err := v.enter(vctx, 10)
			if err != nil {
				fail(false, "enter: "+stream.WhyEnded(err))
				return
			}
			if err := v.awaitReady(vctx, st); err != nil {
				fail(vctx.Err() != nil, "waiting: "+stream.WhyEnded(err))
				return
			}
			rec.Record("ready", http.StatusOK, time.Since(t0))
			t1 := time.Now()
			code, _, err := v.do(vctx, method, path, `{"productId":1,"quantity":1}`, nil)
			if err != nil {
				fail(false, "protected request: "+stream.WhyEnded(err))
				return
			}
			rec.Record("protected", code, time.Since(t1))
			if code/100 != 2 {
				fail(false, fmt.Sprintf("protected request: %d", code))
				return
			}
			mu.Lock()
			res.Completed++
			mu.Unlock()
		})
	}
	wg.Wait()
	res.EnterReady, res.Protected = rec.Summary("ready"), rec.Summary("protected")
	return res
}
