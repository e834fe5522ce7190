package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
)

// The attacks of the attack scenario. Each runs from source addresses of
// its own in 127.2.0.0/16 — disjoint from the legitimate crowd's 127.1.x.y
// — is bounded by count and by time, and records what the server answered.
// None of them retries: an attacker does not back off.

// Attack source addresses: one /24 per attack, so a per-address defence
// that bites one attack shows in that attack's figures only.
func stuffingAddr(k int) net.IP { return net.IPv4(127, 2, 0, byte(1+k%250)) }

var (
	stormAddr     = net.IPv4(127, 2, 1, 1)
	idleFloodAddr = net.IPv4(127, 2, 2, 1)
	streamAddr    = net.IPv4(127, 2, 3, 1)
	bombAddr      = net.IPv4(127, 2, 4, 1)
	crossSiteAddr = net.IPv4(127, 2, 5, 1)
	// ownerAddr is the attacked account's owner: an address that has never
	// failed a login.
	ownerAddr = net.IPv4(127, 3, 0, 1)
)

// evilOrigin is the foreign site of the cross-site requests.
const evilOrigin = "https://evil.example"

// attacker is the shared context of one run's attacks.
type attacker struct {
	base, admin, adminToken, room string
	timeout                       time.Duration
	rec                           *Recorder // every attack request, by attack
}

// client returns an API client whose connections all come from src.
func (a *attacker) client(src net.IP, conns int) *api {
	return &api{base: a.base, room: a.room, hc: newClientFrom(src, conns, a.timeout), rec: a.rec}
}

// enter enters user (an access token) from cl and returns the queue token
// and the name of the cookie the server set with it (wr_queue unless the
// server names it otherwise, e.g. __Host-wr_queue over HTTPS).
func (a *attacker) enter(ctx context.Context, cl *api, access string) (qtok, cookie string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+cl.roomPath("enter"), nil)
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := cl.hc.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("enter: %w", statusError(resp.StatusCode))
	}
	var st queueStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", "", fmt.Errorf("enter: %w", err)
	}
	cookie = "wr_queue"
	for _, c := range resp.Cookies() {
		if c.Value == st.QueueToken {
			cookie = c.Name
		}
	}
	return st.QueueToken, cookie, nil
}

// send sends req from cl, records its status (0: no answer) under name, and
// returns the status and at most 512 bytes of the body.
func (a *attacker) send(cl *api, name string, req *http.Request) (int, []byte) {
	start := time.Now()
	resp, err := cl.hc.Do(req)
	if err != nil {
		if req.Context().Err() == nil {
			a.rec.Record(name, codeError, time.Since(start))
		}
		return codeError, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	a.rec.Record(name, resp.StatusCode, time.Since(start))
	return resp.StatusCode, b
}

// --- credential stuffing ---------------------------------------------------

// stuffingResult is what the credential-stuffing burst achieved.
type stuffingResult struct {
	Attempts  int     `json:"attempts"`
	Addrs     int     `json:"sourceAddresses"`
	LoginIDs  int     `json:"loginIds"`
	Owner     string  `json:"attackedAccount"`
	OwnerHits int     `json:"attemptsOnAttackedAccount"`
	Codes     Summary `json:"answers"`
	// OwnerCode is the owner's own login, the right password from a fresh
	// address, right after the burst: it must be 200.
	OwnerCode int `json:"ownerLoginStatus"`
}

// stuffing sends attempts wrong passwords over loginIds — every fourth to
// the owner's account, the others spread over the crowd's accounts — from
// addrs addresses, conns at a time, as fast as answered; then the owner
// logs in with the right password from ownerAddr.
func (a *attacker) stuffing(ctx, reqCtx context.Context, attempts, addrs, conns int, owner, password string, crowdFirst, crowdN int) *stuffingResult {
	res := &stuffingResult{Addrs: addrs, Owner: owner}
	clients := make([]*api, addrs)
	for k := range clients {
		clients[k] = a.client(stuffingAddr(k), max(conns/addrs, 1))
	}
	ids := map[string]bool{}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= attempts {
					return
				}
				id := owner
				if i%4 != 0 {
					id = "user" + strconv.Itoa(crowdFirst+(i*7919)%crowdN)
				}
				body, _ := json.Marshal(map[string]string{"loginId": id, "password": "wrong-" + strconv.Itoa(i)})
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/api/v1/auth/login", bytes.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				a.send(clients[i%addrs], "stuffing", req)
				mu.Lock()
				ids[id] = true
				res.Attempts++
				if id == owner {
					res.OwnerHits++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, c := range clients {
		c.hc.CloseIdleConnections()
	}
	res.LoginIDs = len(ids)
	oc := a.client(ownerAddr, 1)
	defer oc.hc.CloseIdleConnections()
	body, _ := json.Marshal(map[string]string{"loginId": owner, "password": password})
	if req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, a.base+"/api/v1/auth/login", bytes.NewReader(body)); err == nil {
		req.Header.Set("Content-Type", "application/json")
		res.OwnerCode, _ = a.send(oc, "owner-login", req)
	}
	res.Codes = a.rec.Summary("stuffing")
	return res
}

// --- refresh storm -----------------------------------------------------------

// stormResult is what the refresh storm achieved.
type stormResult struct {
	Tokens int `json:"tokens"`
	// Ready is how many 200s said READY: a READY status asks for no
	// pause (pollAfterMs 0), so the server's poll limit, paced by it,
	// does not apply to them.
	Ready        int     `json:"readyAnswers"`
	Seconds      float64 `json:"seconds"`
	Codes        Summary `json:"answers"`
	PerSecond    float64 `json:"requestsPerSecond"`
	EnterFailure string  `json:"enterFailure,omitempty"`
}

// storm makes each queue token poll its position in a closed loop, as fast
// as answered, for d or until limit requests were sent in all.
func (a *attacker) storm(ctx context.Context, tokens []string, d time.Duration, limit int) *stormResult {
	res := &stormResult{Tokens: len(tokens)}
	cl := a.client(stormAddr, len(tokens))
	defer cl.hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sent, ready atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, tok := range tokens {
		wg.Go(func() {
			for ctx.Err() == nil && sent.Add(1) <= int64(limit) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+cl.roomPath("position"), nil)
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+tok)
				if code, body := a.send(cl, "storm", req); code == http.StatusOK && bytes.Contains(body, []byte(`"READY"`)) {
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

// --- idle-socket flood -------------------------------------------------------

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

// --- stream flood --------------------------------------------------------------

// streamFloodResult is what the stream flood achieved.
type streamFloodResult struct {
	Attempts int     `json:"attempts"`
	Codes    Summary `json:"answers"` // 200: a stream opened
	MaxOpen  int64   `json:"maxOpen"`
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
	d, err := newStreamDialer("sse", a.base, a.room, a.timeout, idle)
	if err != nil {
		res.EnterFailure = err.Error()
		return res
	}
	d = d.from(loopbackDial(func() net.IP { return streamAddr }))
	var (
		open     atomic.Int64
		replaced atomic.Int64
		mu       sync.Mutex
		pcs      []pushConn
		wg       sync.WaitGroup
	)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		octx, cancel := context.WithTimeout(ctx, a.timeout)
		start := time.Now()
		pc, m, err := d.open(octx, qtok)
		cancel()
		var se statusError
		switch {
		case errors.As(err, &se):
			a.rec.Record("stream-flood", int(se), time.Since(start))
			continue
		case err != nil:
			if ctx.Err() == nil {
				a.rec.Record("stream-flood", codeError, time.Since(start))
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
			for ; ; m, err = pc.next() {
				if err != nil {
					why = whyEnded(err)
					break
				}
				if m.kind == "reconnect" {
					replaced.Add(1)
				}
				if m.kind == "gone" || m.kind == "reconnect" {
					why = m.kind
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
	if sleep(ctx, 2*time.Second) {
		res.OpenAfterSettle = int(open.Load())
	} else {
		res.OpenAfterSettle = -1
	}
	counted()
	// Held until the run ends: streams are what this attack hoards.
	<-ctx.Done()
	mu.Lock()
	for _, pc := range pcs {
		pc.close()
	}
	mu.Unlock()
	wg.Wait()
	res.Replaced = int(replaced.Load())
	res.Codes = a.rec.Summary("stream-flood")
	return res
}

// --- decompression bombs -------------------------------------------------------

// bombResult is what the decompression bombs achieved.
type bombResult struct {
	Bombs      int                `json:"bombs"`
	BodyBytes  int                `json:"bodyBytes"`
	InflateMiB int                `json:"inflatesToMiB"`
	Codes      map[string]Summary `json:"answers"` // by target: login, orders, admin
	RSSBefore  float64            `json:"serverRssBeforeMiB"`
	RSSAfter   float64            `json:"serverRssAfterMiB"` // after the last bomb was answered
}

// bombTargets are the endpoints the bombs go to, in turn.
var bombTargets = []string{"login", "orders", "admin"}

var (
	bombMu    sync.Mutex
	bombCache = map[int][]byte{}
)

// bombBody returns gzip(gzip(mib MiB of zeros)): about 600 bytes for
// 256 MiB. Made once per size and kept.
func bombBody(mib int) ([]byte, error) {
	bombMu.Lock()
	defer bombMu.Unlock()
	if b, ok := bombCache[mib]; ok {
		return b, nil
	}
	var inner bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&inner, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range mib {
		if _, err := zw.Write(zeros); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	var outer bytes.Buffer
	zw, _ = gzip.NewWriterLevel(&outer, gzip.BestCompression)
	if _, err := zw.Write(inner.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	bombCache[mib] = outer.Bytes()
	return outer.Bytes(), nil
}

// bombs sends n bombs, spread evenly over d, to login, orders (with
// qtok) and the admin API (with the admin token: what a stolen token or
// an insider could send), in turn, each with Content-Encoding: gzip, gzip.
func (a *attacker) bombs(ctx context.Context, adm *admin, n, mib int, d time.Duration, qtok string) *bombResult {
	res := &bombResult{Bombs: n, InflateMiB: mib, Codes: map[string]Summary{}}
	body, err := bombBody(mib)
	if err != nil {
		return res
	}
	res.BodyBytes = len(body)
	res.RSSBefore = serverRSS(ctx, adm)
	cl := a.client(bombAddr, 1)
	defer cl.hc.CloseIdleConnections()
	for i := 0; i < n; i++ {
		if i > 0 && !sleep(ctx, d/time.Duration(n)) {
			break
		}
		target := bombTargets[i%len(bombTargets)]
		var req *http.Request
		switch target {
		case "login":
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/api/v1/auth/login", bytes.NewReader(body))
		case "orders":
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/api/v1/orders", bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+qtok)
				req.Header.Set("X-Entry-Token", "AAAAAAAAAAAAAAAAAAAAAA")
			}
		case "admin":
			req, err = http.NewRequestWithContext(ctx, http.MethodPut, a.admin+"/admin/rooms/"+url.PathEscape(a.room), bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+a.adminToken)
			}
		}
		if err != nil {
			break
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip, gzip")
		a.send(cl, "bomb-"+target, req)
	}
	for _, t := range bombTargets {
		res.Codes[t] = a.rec.Summary("bomb-" + t)
	}
	res.RSSAfter = serverRSS(context.WithoutCancel(ctx), adm)
	return res
}

// serverRSS is the server's resident memory in MiB (0 if unknown).
func serverRSS(ctx context.Context, adm *admin) float64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, _ := scrapeMetrics(ctx, adm)
	return m[metricRSS] / (1 << 20)
}

// --- cross-site requests ---------------------------------------------------------

// crossSiteResult is what the cross-site requests achieved.
type crossSiteResult struct {
	Attempts     int     `json:"attempts"` // of each kind
	Cookie       string  `json:"cookie"`
	Leave        Summary `json:"leaveAnswers"`     // form POST leave, cookie only
	WS           Summary `json:"websocketAnswers"` // handshake; 101: upgraded
	WSLeaked     int     `json:"websocketFramesWithEntryToken"`
	WSFirstFrame int     `json:"websocketFirstFrames"`
	// PlaceKept: the victim's position afterwards (with its Bearer token):
	// 200 means the place survived; 404 that a forged leave took it.
	PlaceCode    int    `json:"victimPositionStatus"`
	EnterFailure string `json:"enterFailure,omitempty"`
	qtok         string // the victim's queue token
}

// crossSite makes a victim enter, then sends n WebSocket handshakes and n
// form POSTs to leave as a foreign page would make the victim's browser
// send them: the victim's cookie, Origin https://evil.example,
// Sec-Fetch-Site: cross-site, no Authorization.
func (a *attacker) crossSite(ctx context.Context, access string, n int) *crossSiteResult {
	res := &crossSiteResult{Attempts: n}
	cl := a.client(crossSiteAddr, 2)
	defer cl.hc.CloseIdleConnections()
	qtok, cookie, err := a.enter(ctx, cl, access)
	if err != nil {
		res.EnterFailure = whyEnded(err)
		return res
	}
	res.Cookie, res.qtok = cookie, qtok
	u, _ := url.Parse(a.base)
	wsURL := *u
	wsURL.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	wsURL.Path = cl.roomPath("ws")
	dial := loopbackDial(func() net.IP { return crossSiteAddr })
	wd := &websocket.Dialer{NetDialContext: dial, HandshakeTimeout: a.timeout, ReadBufferSize: streamBuf, WriteBufferSize: 1 << 10}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		h := http.Header{}
		h.Set("Origin", evilOrigin)
		h.Set("Cookie", cookie+"="+qtok)
		start := time.Now()
		wc, resp, err := wd.DialContext(ctx, wsURL.String(), h)
		switch {
		case err == nil:
			a.rec.Record("csrf-ws", http.StatusSwitchingProtocols, time.Since(start))
			_ = wc.SetReadDeadline(time.Now().Add(a.timeout))
			if _, data, err := wc.ReadMessage(); err == nil {
				res.WSFirstFrame++
				var st pushStatus
				if json.Unmarshal(data, &st) == nil && st.EntryToken != "" {
					res.WSLeaked++
				}
			}
			wc.Close()
		case resp != nil:
			a.rec.Record("csrf-ws", resp.StatusCode, time.Since(start))
		case ctx.Err() == nil:
			a.rec.Record("csrf-ws", codeError, time.Since(start))
		}
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+cl.roomPath("leave"), strings.NewReader("confirm=1"))
		if err != nil {
			break
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie+"="+qtok)
		req.Header.Set("Origin", evilOrigin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		a.send(cl, "csrf-leave", req)
	}
	res.WS, res.Leave = a.rec.Summary("csrf-ws"), a.rec.Summary("csrf-leave")
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, a.base+cl.roomPath("position"), nil)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+qtok)
		res.PlaceCode, _ = a.send(cl, "victim-position", req)
	}
	return res
}
