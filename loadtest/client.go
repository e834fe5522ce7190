package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"waitingroom/loadtest/internal/measure"
)

// sourceAddrs is how many loopback source addresses (127.0.0.2 onward) the
// dialer spreads connections over: each gives ~28,000 ephemeral ports toward
// one destination, so 16 cover any connection count this machine can hold.
const sourceAddrs = 16

// newClient returns a net/http client tuned for conns concurrent keep-alive
// connections to one host. Toward a loopback target its dialer binds each new
// connection to the next of 127.0.0.2, 127.0.0.3, … (round robin; Linux
// routes all of 127/8 to lo), so tens of thousands of connections do not
// exhaust one source address's ephemeral ports.
func newClient(conns int, timeout time.Duration) *http.Client {
	var next atomic.Uint32
	return httpClient(conns, timeout, loopbackDial(func() net.IP {
		return net.IPv4(127, 0, 0, byte(2+next.Add(1)%sourceAddrs))
	}))
}

// newClientFrom is newClient with every connection from the one source
// address src (toward a loopback target): one client of a crowd whose users
// come from many addresses, as a real sale's do. Its connections never mix
// with another address's.
func newClientFrom(src net.IP, conns int, timeout time.Duration) *http.Client {
	return httpClient(conns, timeout, dialFrom(src))
}

// dialFrom dials a loopback target from src alone: the connections of one
// address of a crowd, or of one attack.
func dialFrom(src net.IP) dialFunc {
	return loopbackDial(func() net.IP { return src })
}

// dialFunc is a DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// loopbackDial dials a loopback target from the source address that source
// names for each new connection, and any other target as the system would.
func loopbackDial(source func() net.IP) dialFunc {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || !isLoopback(host) {
			return dialer.DialContext(ctx, network, addr)
		}
		d := *dialer
		d.LocalAddr = &net.TCPAddr{IP: source()}
		return d.DialContext(ctx, "tcp4", addr)
	}
}

func httpClient(conns int, timeout time.Duration, dial dialFunc) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConns:        0, // no overall cap: MaxIdleConnsPerHost is the cap
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && ip.IsLoopback()
}

// queueStatus is the part of the server's QueueStatus the tool reads.
type queueStatus struct {
	Status      string `json:"status"`
	Position    int64  `json:"position"`
	EntryToken  string `json:"entryToken"`
	QueueToken  string `json:"queueToken"`
	PollAfterMs int64  `json:"pollAfterMs"`
	// ETASeconds and ETAKnown are set on WAITING, EntryExpiresAt on READY.
	ETASeconds     *int64     `json:"etaSeconds"`
	ETAKnown       *bool      `json:"etaKnown"`
	EntryExpiresAt *time.Time `json:"entryExpiresAt"`
}

// api calls the waiting room's public API and records every call in rec
// under its endpoint name: login, enter, position, orders, leave.
type api struct {
	base, room string
	hc         *http.Client
	rec        *measure.Recorder
}

func (a *api) login(ctx context.Context, user, password string) (string, int, error) {
	var out struct {
		AccessToken string `json:"accessToken"`
	}
	body := map[string]string{"loginId": user, "password": password}
	code, err := a.call(ctx, "login", http.MethodPost, "/api/v1/auth/login", "", body, &out)
	return out.AccessToken, code, err
}

func (a *api) enter(ctx context.Context, access string) (queueStatus, int, error) {
	var st queueStatus
	code, err := a.call(ctx, "enter", http.MethodPost, a.roomPath("enter"), access, nil, &st)
	return st, code, err
}

func (a *api) position(ctx context.Context, queueToken string) (queueStatus, int, error) {
	var st queueStatus
	code, err := a.call(ctx, "position", http.MethodGet, a.roomPath("position"), queueToken, nil, &st)
	return st, code, err
}

func (a *api) leave(ctx context.Context, queueToken string) (int, error) {
	return a.call(ctx, "leave", http.MethodPost, a.roomPath("leave"), queueToken, nil, nil)
}

func (a *api) order(ctx context.Context, queueToken, entryToken string, product int64) (int, error) {
	body := map[string]int64{"productId": product, "quantity": 1}
	return a.call(ctx, "orders", http.MethodPost, "/api/v1/orders", queueToken, body, nil, "X-Entry-Token", entryToken)
}

func (a *api) roomPath(action string) string {
	return "/api/v1/rooms/" + url.PathEscape(a.room) + "/" + action
}

// call sends one request and records it as endpoint; a 2xx JSON body is
// decoded into out when out is non-nil. A request that fails because ctx was
// cancelled (Ctrl-C) is not recorded: it measured nothing.
func (a *api) call(ctx context.Context, endpoint, method, path, bearer string, body, out any, header ...string) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := a.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			a.rec.Record(endpoint, measure.NoResponse, time.Since(start))
		}
		return measure.NoResponse, err
	}
	defer resp.Body.Close()
	var derr error
	if out != nil && resp.StatusCode/100 == 2 {
		derr = json.NewDecoder(resp.Body).Decode(out)
	}
	_, rerr := io.Copy(io.Discard, resp.Body) // drain, so the connection is reused
	if ctx.Err() != nil && (derr != nil || rerr != nil) {
		return measure.NoResponse, ctx.Err()
	}
	a.rec.Record(endpoint, resp.StatusCode, time.Since(start))
	if derr != nil {
		return resp.StatusCode, fmt.Errorf("%s: decode: %w", endpoint, derr)
	}
	return resp.StatusCode, rerr
}

// admin reads the management port: room state and the Prometheus text.
type admin struct {
	base, token, room string
	hc                *http.Client
}

// roomState is the part of GET /admin/rooms/{room} the tool reads.
type roomState struct {
	TargetActive    int64   `json:"targetActive"`
	Active          int64   `json:"active"`
	Waiting         int64   `json:"waiting"`
	EntryTTLSeconds float64 `json:"entryTtlSeconds"`
}

func (m *admin) roomState(ctx context.Context) (roomState, error) {
	var st roomState
	err := m.do(ctx, http.MethodGet, nil, &st)
	return st, err
}

// setTarget changes the room's targetActive live.
func (m *admin) setTarget(ctx context.Context, n int64) error {
	return m.do(ctx, http.MethodPut, map[string]int64{"targetActive": n}, nil)
}

// setOrderDelay injects (or, with 0, removes) the server's order-path
// delay through PUT /admin/faults (the server needs WR_FAULT_INJECTION=on).
func (m *admin) setOrderDelay(ctx context.Context, d time.Duration) error {
	return m.doPath(ctx, http.MethodPut, "/admin/faults", map[string]string{"orderDelay": d.String()}, nil)
}

func (m *admin) do(ctx context.Context, method string, body, out any) error {
	return m.doPath(ctx, method, "/admin/rooms/"+url.PathEscape(m.room), body, out)
}

func (m *admin) doPath(ctx context.Context, method, path string, body, out any) error {
	if m.token == "" {
		return fmt.Errorf("admin: no token: pass --admin-token or set WR_ADMIN_TOKEN")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, m.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("admin: %s %s: %s %s", method, req.URL.Path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
