package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/loadtest/internal/client"
)

// fakeServer is the contract in miniature: login, enter, events (SSE), ws,
// orders, leave on the public side; /admin/rooms/{room} and /metrics on the
// management side. Every stream sends its status on connect; once
// targetActive is above 0 it sends one WAITING update at position 1 and
// then READY, both stamped with "ts".
type fakeServer struct {
	noTS      bool          // events without "ts"
	gone      bool          // every stream answers gone at once
	silent    bool          // nothing after the first event, not even heartbeats
	noAdmit   bool          // never admit: streams only get heartbeats
	heartbeat time.Duration // comment / ping interval (0: none)
	lagMs     int64         // how old each update's ts is when sent
	onDrive   func()        // called when targetActive is set above 0

	target  atomic.Int64
	conns   atomic.Int64
	tickets atomic.Int64
	orders  atomic.Int64
	leaves  atomic.Int64
	cpu     atomic.Int64

	pub, adm *httptest.Server
}

const fakeRSSPerConn = 20 << 10 // the fake's RSS grows 20 KiB per stream

func newFakeServer(t *testing.T, f *fakeServer) *fakeServer {
	t.Helper()
	f.target.Store(7)
	pub := http.NewServeMux()
	pub.HandleFunc("POST /api/v1/auth/login", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ LoginID string }
		json.NewDecoder(r.Body).Decode(&in)
		writeJSONDoc(w, 200, map[string]any{"accessToken": "acc-" + in.LoginID, "tokenType": "Bearer"})
	})
	pub.HandleFunc("POST /api/v1/rooms/{room}/enter", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			writeJSONDoc(w, 401, map[string]any{"error": "unauthorized"})
			return
		}
		seq := f.tickets.Add(1)
		writeJSONDoc(w, 200, map[string]any{"status": "WAITING", "room": r.PathValue("room"), "position": seq, "queueToken": "q-" + strconv.FormatInt(seq, 10)})
	})
	pub.HandleFunc("GET /api/v1/rooms/{room}/events", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer q-")
		if !ok {
			writeJSONDoc(w, 401, map[string]any{"error": "unauthorized"})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		id := 0
		send := func(typ string, doc map[string]any) error {
			b, _ := json.Marshal(doc)
			id++
			_, err := fmt.Fprintf(w, "event: %s\nid: %d\ndata: %s\n\n", typ, id, b)
			fl.Flush()
			return err
		}
		beat := func() error {
			_, err := io.WriteString(w, ": hb\n")
			fl.Flush()
			return err
		}
		f.serve(r.Context(), tok, send, beat)
	})
	pub.HandleFunc("GET /api/v1/rooms/{room}/ws", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.URL.Query().Get("token"), "q-")
		if !ok {
			writeJSONDoc(w, 401, map[string]any{"error": "unauthorized"})
			return
		}
		up := websocket.Upgrader{}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() { // the client's close frame (or a broken connection) ends the stream
			defer cancel()
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		send := func(typ string, doc map[string]any) error {
			doc["type"] = typ
			return c.WriteJSON(doc)
		}
		beat := func() error { return c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) }
		f.serve(ctx, tok, send, beat)
	})
	pub.HandleFunc("POST /api/v1/orders", func(w http.ResponseWriter, r *http.Request) {
		q, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer q-")
		if r.Header.Get("X-Entry-Token") != "e-"+q {
			writeJSONDoc(w, 403, map[string]any{"error": "entry_token_invalid"})
			return
		}
		f.orders.Add(1)
		writeJSONDoc(w, 201, map[string]any{"orderId": 1, "status": "PLACED"})
	})
	pub.HandleFunc("POST /api/v1/rooms/{room}/leave", func(w http.ResponseWriter, r *http.Request) {
		f.leaves.Add(1)
		w.WriteHeader(204)
	})
	adm := http.NewServeMux()
	adm.HandleFunc("GET /admin/rooms/{room}", func(w http.ResponseWriter, r *http.Request) {
		writeJSONDoc(w, 200, map[string]any{"targetActive": f.target.Load()})
	})
	adm.HandleFunc("PUT /admin/rooms/{room}", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ TargetActive int64 }
		if r.Header.Get("Authorization") != "Bearer adm" || json.NewDecoder(r.Body).Decode(&in) != nil {
			writeJSONDoc(w, 400, map[string]any{"error": "invalid_request"})
			return
		}
		f.target.Store(in.TargetActive)
		if in.TargetActive > 0 && f.onDrive != nil {
			f.onDrive()
		}
		writeJSONDoc(w, 200, map[string]any{"targetActive": in.TargetActive})
	})
	adm.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		n := f.conns.Load()
		fmt.Fprintf(w, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", 100<<20+n*fakeRSSPerConn)
		fmt.Fprintf(w, "process_cpu_seconds_total %d\n", f.cpu.Add(1))
		fmt.Fprintf(w, "waitingroom_stream_connections{transport=\"sse\"} %d\nwaitingroom_stream_connections{transport=\"ws\"} 0\n", n)
	})
	f.pub, f.adm = httptest.NewServer(pub), httptest.NewServer(adm)
	t.Cleanup(f.pub.Close)
	t.Cleanup(f.adm.Close)
	return f
}

func writeJSONDoc(w http.ResponseWriter, code int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(doc)
}

// serve is one stream of either transport.
func (f *fakeServer) serve(ctx context.Context, tok string, send func(string, map[string]any) error, beat func() error) {
	f.conns.Add(1)
	defer f.conns.Add(-1)
	status := func(st string, pos int64) map[string]any {
		doc := map[string]any{"status": st, "room": "default"}
		if st == "READY" {
			doc["entryToken"] = "e-" + tok
		} else {
			doc["position"], doc["waiting"] = pos, 1000
		}
		if !f.noTS {
			doc["ts"] = time.Now().UnixMilli() - f.lagMs
		}
		return doc
	}
	if f.gone {
		send("gone", map[string]any{"error": "not_in_queue"})
		return
	}
	if send("status", status("WAITING", 500)) != nil || f.silent {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var hb <-chan time.Time
	if f.heartbeat > 0 {
		t := time.NewTicker(f.heartbeat)
		defer t.Stop()
		hb = t.C
	}
	for admitted := false; ; {
		select {
		case <-ctx.Done():
			return
		case <-hb:
			if beat() != nil {
				return
			}
		case <-tick.C:
			if admitted || f.noAdmit || f.target.Load() == 0 {
				continue
			}
			admitted = true
			if send("status", status("WAITING", 1)) != nil || send("status", status("READY", 0)) != nil {
				return
			}
		}
	}
}

func (f *fakeServer) args(extra ...string) []string {
	return append([]string{"--base", f.pub.URL, "--admin", f.adm.URL, "--admin-token", "adm", "--timeout", "5s"}, extra...)
}

func mustRunStreams(t *testing.T, args []string) *streamsReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var o options
	rep, err := runStreams(ctx, &o, args)
	if err != nil {
		t.Fatalf("runStreams: %v", err)
	}
	r, ok := rep.(*streamsReport)
	if !ok {
		t.Fatalf("report is %T", rep)
	}
	var b strings.Builder
	r.Print(&b)
	t.Log(b.String())
	return r
}

func TestStreamsScenarioAgainstFake(t *testing.T) {
	for _, tc := range []struct {
		transport string
		mint      bool
	}{{"sse", true}, {"ws", false}} {
		t.Run(tc.transport, func(t *testing.T) {
			f := newFakeServer(t, &fakeServer{lagMs: 40, heartbeat: 20 * time.Millisecond})
			args := f.args("-n", "40", "--transport", tc.transport, "--duration", "20s", "--conns", "8")
			if tc.mint {
				args = append(args, "--mint-tokens", "--jwt-secret", testSecret)
			}
			r := mustRunStreams(t, args)
			if r.Prepared != 40 || r.Opened != 40 || r.OpenFailed != 0 {
				t.Errorf("prepared %d, opened %d, failed %d; want 40, 40, 0", r.Prepared, r.Opened, r.OpenFailed)
			}
			if r.Ready != 40 || r.Ordered != 40 || f.orders.Load() != 40 {
				t.Errorf("READY %d, ordered %d, server orders %d; want 40 each", r.Ready, r.Ordered, f.orders.Load())
			}
			if r.Dropped != 0 || r.Gone != 0 || r.StillWaiting != 0 {
				t.Errorf("dropped %d, gone %d, still waiting %d; want 0 (drops: %v)", r.Dropped, r.Gone, r.StillWaiting, r.Drops)
			}
			// Every stream: the on-connect status (no lag), then WAITING at 1 and READY.
			if got, want := r.Events, 3*40; got != want {
				t.Errorf("events %d, want %d", got, want)
			}
			if l := r.Lag["all"]; l.Count != 80 || l.P50 < 40*time.Millisecond {
				t.Errorf("lag: %d samples with p50 %v; want 80 samples ≥ 40 ms (the fake's ts is 40 ms old)", l.Count, l.P50)
			}
			if r.Lag["READY"].Count != 40 || r.Lag["1–100"].Count != 40 || r.Lag[">1000"].Count != 0 {
				t.Errorf("lag bands %+v", r.Lag)
			}
			if r.RSSPerStreamKiB != 20 {
				t.Errorf("RSS per stream %.2f KiB, want 20 (the fake's)", r.RSSPerStreamKiB)
			}
			if r.DriveSeconds >= 20 {
				t.Errorf("the drive took %.1f s: it should end once every stream ordered", r.DriveSeconds)
			}
			if got := f.target.Load(); got != 7 {
				t.Errorf("targetActive after the run = %d, want the original 7", got)
			}
			if got := f.leaves.Load(); got != 0 {
				t.Errorf("%d leaves; every user ordered, none should leave", got)
			}
		})
	}
}

func TestStreamsScenarioWithoutTS(t *testing.T) {
	f := newFakeServer(t, &fakeServer{noTS: true})
	r := mustRunStreams(t, f.args("-n", "5", "--duration", "10s", "--mint-tokens", "--jwt-secret", testSecret))
	if r.Ordered != 5 || r.EventsWithoutTS != 10 || r.Lag["all"].Count != 0 {
		t.Errorf("ordered %d, events without ts %d, lag samples %d; want 5, 10, 0", r.Ordered, r.EventsWithoutTS, r.Lag["all"].Count)
	}
	var b strings.Builder
	r.Print(&b)
	if !strings.Contains(b.String(), "lag is unknown") || !strings.Contains(b.String(), "unknown (no events") {
		t.Errorf("the report does not say the lag is unknown:\n%s", b.String())
	}
}

func TestStreamsScenarioGoneAndSilent(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		f := newFakeServer(t, &fakeServer{gone: true})
		r := mustRunStreams(t, f.args("-n", "6", "--duration", "5s", "--mint-tokens", "--jwt-secret", testSecret))
		if r.Opened != 6 || r.Gone != 6 || r.Dropped != 0 || r.Ready != 0 {
			t.Errorf("opened %d, gone %d, dropped %d, READY %d; want 6, 6, 0, 0", r.Opened, r.Gone, r.Dropped, r.Ready)
		}
		if got := f.leaves.Load(); got != 6 {
			t.Errorf("%d leaves, want 6: users not ordered give their place back", got)
		}
	})
	t.Run("silent", func(t *testing.T) {
		f := newFakeServer(t, &fakeServer{silent: true})
		r := mustRunStreams(t, f.args("-n", "6", "--duration", "3s", "--idle", "300ms", "--mint-tokens", "--jwt-secret", testSecret))
		if r.Opened != 6 || r.Dropped != 6 || r.Drops["timeout"] != 6 {
			t.Errorf("opened %d, dropped %d %v; want 6 opened, 6 dropped by timeout", r.Opened, r.Dropped, r.Drops)
		}
	})
	for _, transport := range []string{"sse", "ws"} {
		t.Run("heartbeats keep a quiet stream alive/"+transport, func(t *testing.T) {
			f := newFakeServer(t, &fakeServer{heartbeat: 50 * time.Millisecond, noAdmit: true})
			r := mustRunStreams(t, f.args("-n", "4", "--duration", "1s", "--idle", "300ms", "--mint-tokens", "--jwt-secret", testSecret,
				"--transport", transport))
			if r.Dropped != 0 || r.StillWaiting != 4 {
				t.Errorf("dropped %d %v, still waiting %d: heartbeats should keep the 4 streams alive", r.Dropped, r.Drops, r.StillWaiting)
			}
			// A second of streams at a heartbeat every 50 ms: about 80.
			if r.Heartbeats < 4 {
				t.Errorf("%d heartbeats counted over 4 streams × 1 s", r.Heartbeats)
			}
		})
	}
}

func TestStreamOpenFailures(t *testing.T) {
	f := newFakeServer(t, &fakeServer{})
	for _, transport := range []string{"sse", "ws"} {
		d, err := newStreamDialer(transport, f.pub.URL, "default", time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = d.open(context.Background(), "not-a-queue-token")
		if got, want := whyEnded(err), "HTTP 401"; got != want {
			t.Errorf("%s: open with a bad token: %q (%v), want %q", transport, got, err, want)
		}
	}
	d, err := newStreamDialer("sse", "http://127.0.0.1:1", "default", time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.open(context.Background(), "q-1"); whyEnded(err) != "connection refused" {
		t.Errorf("open to a closed port: %q (%v), want connection refused", whyEnded(err), err)
	}
	if _, err := newStreamDialer("sse", "ftp://x", "default", time.Second, time.Second); err == nil {
		t.Error("an ftp base URL was accepted")
	}
	if _, err := newStreamDialer("grpc", f.pub.URL, "default", time.Second, time.Second); err == nil {
		t.Error("an unknown transport was accepted")
	}
}

func TestLagBand(t *testing.T) {
	for _, tc := range []struct {
		st   pushStatus
		want string
	}{
		{pushStatus{Status: "READY"}, "READY"},
		{pushStatus{Status: "WAITING", Position: 1}, "1–100"},
		{pushStatus{Status: "WAITING", Position: 100}, "1–100"},
		{pushStatus{Status: "WAITING", Position: 101}, "101–1000"},
		{pushStatus{Status: "WAITING", Position: 1000}, "101–1000"},
		{pushStatus{Status: "WAITING", Position: 1001}, ">1000"},
	} {
		if got := lagBands[lagBand(tc.st)]; got != tc.want {
			t.Errorf("lagBand(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

func TestWhyEnded(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{client.StatusError(503), "HTTP 503"},
		{fmt.Errorf("first message: %w", io.EOF), "closed by server"},
		{io.ErrUnexpectedEOF, "closed by server"},
		{fmt.Errorf("first message: %w", context.DeadlineExceeded), "timeout"},
		{&websocket.CloseError{Code: websocket.CloseGoingAway}, "closed by server (WebSocket close 1001)"},
		{errors.New(strings.Repeat("x", 100)), strings.Repeat("x", 60) + "…"},
	} {
		if got := whyEnded(tc.err); got != tc.want {
			t.Errorf("whyEnded(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// Ctrl-C: the run ends early, the report of what was measured comes back,
// the streams close, the users leave and targetActive is restored.
func TestStreamsScenarioInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Ctrl-C once every stream is open and admission resumes.
	f := newFakeServer(t, &fakeServer{noAdmit: true, heartbeat: 20 * time.Millisecond, onDrive: cancel})
	var o options
	start := time.Now()
	rep, err := runStreams(ctx, &o, f.args("-n", "8", "--duration", "30s", "--mint-tokens", "--jwt-secret", testSecret))
	if err != nil {
		t.Fatalf("runStreams: %v", err)
	}
	r := rep.(*streamsReport)
	if !r.Interrupted || r.Opened != 8 || r.StillWaiting != 8 {
		t.Errorf("interrupted %v, opened %d, still waiting %d; want true, 8, 8", r.Interrupted, r.Opened, r.StillWaiting)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the run took %v after Ctrl-C", d)
	}
	if got := f.leaves.Load(); got != 8 {
		t.Errorf("%d leaves, want 8", got)
	}
	if got := f.target.Load(); got != 7 {
		t.Errorf("targetActive after the run = %d, want the original 7", got)
	}
}
