// Package client is how the load tool talks to a waiting room: net/http
// clients whose connections spread over loopback source addresses, the
// public API (every call recorded), the admin API and its /metrics and
// /readyz, and retries of the answers that ask for one.
package client

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

// New returns a net/http client tuned for conns concurrent keep-alive
// connections to one host. Toward a loopback target its dialer binds each new
// connection to the next of 127.0.0.2, 127.0.0.3, … (round robin; Linux
// routes all of 127/8 to lo), so tens of thousands of connections do not
// exhaust one source address's ephemeral ports.
func New(conns int, timeout time.Duration) *http.Client {
	var next atomic.Uint32
	return httpClient(conns, timeout, loopbackDial(func() net.IP {
		return net.IPv4(127, 0, 0, byte(2+next.Add(1)%sourceAddrs))
	}))
}

// NewFrom is New with every connection from the one source
// address src (toward a loopback target): one client of a crowd whose users
// come from many addresses, as a real sale's do. Its connections never mix
// with another address's.
func NewFrom(src net.IP, conns int, timeout time.Duration) *http.Client {
	return httpClient(conns, timeout, DialFrom(src))
}

// DialFrom dials a loopback target from src alone: the connections of one
// address of a crowd, or of one attack.
func DialFrom(src net.IP) DialFunc {
	return loopbackDial(func() net.IP { return src })
}

// DialFunc is a DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// loopbackDial dials a loopback target from the source address that source
// names for each new connection, and any other target as the system would.
func loopbackDial(source func() net.IP) DialFunc {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || !IsLoopback(host) {
			return dialer.DialContext(ctx, network, addr)
		}
		d := *dialer
		d.LocalAddr = &net.TCPAddr{IP: source()}
		return d.DialContext(ctx, "tcp4", addr)
	}
}

func httpClient(conns int, timeout time.Duration, dial DialFunc) *http.Client {
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

// IsLoopback reports whether host is localhost or an IPv4 loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && ip.IsLoopback()
}

// QueueStatus is the part of the server's QueueStatus the tool reads.
type QueueStatus struct {
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

// API calls the waiting room's public API and records every call in rec
// under its endpoint name: login, enter, position, orders, leave.
type API struct {
	Base, Room string
	HTTP       *http.Client
	Rec        *measure.Recorder
}

// Login logs user in and returns the access token and the status code.
func (a *API) Login(ctx context.Context, user, password string) (string, int, error) {
	var out struct {
		AccessToken string `json:"accessToken"`
	}
	body := map[string]string{"loginId": user, "password": password}
	code, err := a.Call(ctx, "login", http.MethodPost, "/api/v1/auth/login", "", body, &out)
	return out.AccessToken, code, err
}

// Enter enters the room with an access token.
func (a *API) Enter(ctx context.Context, access string) (QueueStatus, int, error) {
	var st QueueStatus
	code, err := a.Call(ctx, "enter", http.MethodPost, a.RoomPath("enter"), access, nil, &st)
	return st, code, err
}

// Position reads the queue token's status.
func (a *API) Position(ctx context.Context, queueToken string) (QueueStatus, int, error) {
	var st QueueStatus
	code, err := a.Call(ctx, "position", http.MethodGet, a.RoomPath("position"), queueToken, nil, &st)
	return st, code, err
}

// Leave gives up the queue token's place (or entry window).
func (a *API) Leave(ctx context.Context, queueToken string) (int, error) {
	return a.Call(ctx, "leave", http.MethodPost, a.RoomPath("leave"), queueToken, nil, nil)
}

// Order places an order of one unit of product with the entry token.
func (a *API) Order(ctx context.Context, queueToken, entryToken string, product int64) (int, error) {
	body := map[string]int64{"productId": product, "quantity": 1}
	return a.Call(ctx, "orders", http.MethodPost, "/api/v1/orders", queueToken, body, nil, "X-Entry-Token", entryToken)
}

// OrderQty is Order for qty units.
func (a *API) OrderQty(ctx context.Context, queueToken, entryToken string, product, qty int64) (int, error) {
	body := map[string]int64{"productId": product, "quantity": qty}
	return a.Call(ctx, "orders", http.MethodPost, "/api/v1/orders", queueToken, body, nil, "X-Entry-Token", entryToken)
}

// RoomPath is the public API path of the room's action: enter, position…
func (a *API) RoomPath(action string) string {
	return "/api/v1/rooms/" + url.PathEscape(a.Room) + "/" + action
}

// Call sends one request and records it as endpoint; a 2xx JSON body is
// decoded into out when out is non-nil. A request that fails because ctx was
// cancelled (Ctrl-C) is not recorded: it measured nothing.
func (a *API) Call(ctx context.Context, endpoint, method, path, bearer string, body, out any, header ...string) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Base+path, rd)
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
	resp, err := a.HTTP.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			a.Rec.Record(endpoint, measure.NoResponse, time.Since(start))
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
	a.Rec.Record(endpoint, resp.StatusCode, time.Since(start))
	if derr != nil {
		return resp.StatusCode, fmt.Errorf("%s: decode: %w", endpoint, derr)
	}
	return resp.StatusCode, rerr
}

// Admin reads the management port: room state and the Prometheus text.
type Admin struct {
	Base, Token, Room string
	HTTP              *http.Client
}

// RoomState is the part of GET /admin/rooms/{room} the tool reads.
type RoomState struct {
	TargetActive    int64   `json:"targetActive"`
	Active          int64   `json:"active"`
	Waiting         int64   `json:"waiting"`
	EntryTTLSeconds float64 `json:"entryTtlSeconds"`
	// The room's all-time counters.
	Admitted   int64 `json:"admitted"`
	Expired    int64 `json:"expired"`
	Abandoned  int64 `json:"abandoned"`
	PassedOver int64 `json:"passedOver"`
}

// RoomState reads the room through GET /admin/rooms/{room}.
func (m *Admin) RoomState(ctx context.Context) (RoomState, error) {
	var st RoomState
	err := m.Do(ctx, http.MethodGet, nil, &st)
	return st, err
}

// SetTarget changes the room's targetActive live.
func (m *Admin) SetTarget(ctx context.Context, n int64) error {
	return m.Do(ctx, http.MethodPut, map[string]int64{"targetActive": n}, nil)
}

// SetOrderDelay injects (or, with 0, removes) the server's order-path
// delay through PUT /admin/faults (the server needs WR_FAULT_INJECTION=on).
func (m *Admin) SetOrderDelay(ctx context.Context, d time.Duration) error {
	return m.doPath(ctx, http.MethodPut, "/admin/faults", map[string]string{"orderDelay": d.String()}, nil)
}

// SetRowDelay injects (or, with 0, removes) the server's delay inside an
// order's row lock through PUT /admin/faults.
func (m *Admin) SetRowDelay(ctx context.Context, d time.Duration) error {
	return m.doPath(ctx, http.MethodPut, "/admin/faults", map[string]string{"rowDelay": d.String()}, nil)
}

// Do sends method with body (JSON, nil: none) to the room's admin path and
// decodes a 200 answer into out when out is non-nil; an answer other than
// 200 or 204 is an *AdminError.
func (m *Admin) Do(ctx context.Context, method string, body, out any) error {
	return m.doPath(ctx, method, "/admin/rooms/"+url.PathEscape(m.Room), body, out)
}

func (m *Admin) doPath(ctx context.Context, method, path string, body, out any) error {
	if m.Token == "" {
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
	req, err := http.NewRequestWithContext(ctx, method, m.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := m.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &AdminError{Method: method, Path: req.URL.Path, Code: resp.StatusCode, Status: resp.Status, Body: string(bytes.TrimSpace(b))}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// AdminError is an admin API answer other than 200 or 204: its status
// and the start of its body.
type AdminError struct {
	Method, Path, Status, Body string
	Code                       int
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("admin: %s %s: %s %s", e.Method, e.Path, e.Status, e.Body)
}

// DeleteRoom deletes the room through DELETE /admin/rooms/{room}, with
// ?force=true when force (the room's users go with it). A server without
// the route answers 404 or 405: an *AdminError with that Code.
func (m *Admin) DeleteRoom(ctx context.Context, force bool) error {
	path := "/admin/rooms/" + url.PathEscape(m.Room)
	if force {
		path += "?force=true"
	}
	return m.doPath(ctx, http.MethodDelete, path, nil, nil)
}

// CheckLoopback fails unless base's host is a loopback address: binding
// 127.x source addresses reaches only a server on this machine.
func CheckLoopback(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	if !IsLoopback(u.Hostname()) {
		return fmt.Errorf("source addresses 127.x.y.z reach only a loopback target, not %q", u.Hostname())
	}
	return nil
}

// MaxPolls caps one ticket's polls, so every poll loop ends by count even
// if the clock never stopped it.
const MaxPolls = 10_000
