// Package fakeroom is a fake waiting room for the load tool's tests: the
// server's contract in miniature, over httptest.
package fakeroom

import (
	"context"
	"encoding/json"
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
)

// Server is the contract in miniature: login, enter, events (SSE), ws,
// orders, leave on the public side; /admin/rooms/{room} and /metrics on the
// management side. Every stream sends its status on connect; once
// targetActive is above 0 it sends one WAITING update at position 1 and
// then READY, both stamped with "ts".
type Server struct {
	NoTS      bool          // events without "ts"
	Gone      bool          // every stream answers gone at once
	Silent    bool          // nothing after the first event, not even heartbeats
	NoAdmit   bool          // never admit: streams only get heartbeats
	Heartbeat time.Duration // comment / ping interval (0: none)
	LagMs     int64         // how old each update's ts is when sent
	OnDrive   func()        // called when targetActive is set above 0

	Target  atomic.Int64
	conns   atomic.Int64
	tickets atomic.Int64
	Orders  atomic.Int64
	Leaves  atomic.Int64
	cpu     atomic.Int64

	Pub, adm *httptest.Server
}

// RSSPerConn is how much the fake's RSS grows per stream: 20 KiB.
const RSSPerConn = 20 << 10

// Start serves f's public and management sides until t ends; f.Target
// starts at 7.
func Start(t *testing.T, f *Server) *Server {
	t.Helper()
	f.Target.Store(7)
	f.Pub, f.adm = httptest.NewServer(f.public()), httptest.NewServer(f.management())
	t.Cleanup(f.Pub.Close)
	t.Cleanup(f.adm.Close)
	return f
}

// public is the public side: login, enter, events, ws, orders, leave.
func (f *Server) public() *http.ServeMux {
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
	pub.HandleFunc("GET /api/v1/rooms/{room}/events", f.events)
	pub.HandleFunc("GET /api/v1/rooms/{room}/ws", f.ws)
	pub.HandleFunc("POST /api/v1/orders", func(w http.ResponseWriter, r *http.Request) {
		q, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer q-")
		if r.Header.Get("X-Entry-Token") != "e-"+q {
			writeJSONDoc(w, 403, map[string]any{"error": "entry_token_invalid"})
			return
		}
		f.Orders.Add(1)
		writeJSONDoc(w, 201, map[string]any{"orderId": 1, "status": "PLACED"})
	})
	pub.HandleFunc("POST /api/v1/rooms/{room}/leave", func(w http.ResponseWriter, r *http.Request) {
		f.Leaves.Add(1)
		w.WriteHeader(204)
	})
	return pub
}

// events is GET events: one SSE stream.
func (f *Server) events(w http.ResponseWriter, r *http.Request) {
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
}

// ws is GET ws: one WebSocket stream.
func (f *Server) ws(w http.ResponseWriter, r *http.Request) {
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
}

// management is the management side: the room's targetActive and /metrics.
func (f *Server) management() *http.ServeMux {
	adm := http.NewServeMux()
	adm.HandleFunc("GET /admin/rooms/{room}", func(w http.ResponseWriter, r *http.Request) {
		writeJSONDoc(w, 200, map[string]any{"targetActive": f.Target.Load()})
	})
	adm.HandleFunc("PUT /admin/rooms/{room}", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ TargetActive int64 }
		if r.Header.Get("Authorization") != "Bearer adm" || json.NewDecoder(r.Body).Decode(&in) != nil {
			writeJSONDoc(w, 400, map[string]any{"error": "invalid_request"})
			return
		}
		f.Target.Store(in.TargetActive)
		if in.TargetActive > 0 && f.OnDrive != nil {
			f.OnDrive()
		}
		writeJSONDoc(w, 200, map[string]any{"targetActive": in.TargetActive})
	})
	adm.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		n := f.conns.Load()
		fmt.Fprintf(w, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", 100<<20+n*RSSPerConn)
		fmt.Fprintf(w, "process_cpu_seconds_total %d\n", f.cpu.Add(1))
		fmt.Fprintf(w, "waitingroom_stream_connections{transport=\"sse\"} %d\nwaitingroom_stream_connections{transport=\"ws\"} 0\n", n)
	})
	return adm
}

// writeJSONDoc answers code with doc as JSON.
func writeJSONDoc(w http.ResponseWriter, code int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(doc)
}

// serve is one stream of either transport.
func (f *Server) serve(ctx context.Context, tok string, send func(string, map[string]any) error, beat func() error) {
	f.conns.Add(1)
	defer f.conns.Add(-1)
	status := func(st string, pos int64) map[string]any {
		doc := map[string]any{"status": st, "room": "default"}
		if st == "READY" {
			doc["entryToken"] = "e-" + tok
		} else {
			doc["position"], doc["waiting"] = pos, 1000
		}
		if !f.NoTS {
			doc["ts"] = time.Now().UnixMilli() - f.LagMs
		}
		return doc
	}
	if f.Gone {
		send("gone", map[string]any{"error": "not_in_queue"})
		return
	}
	if send("status", status("WAITING", 500)) != nil || f.Silent {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var hb <-chan time.Time
	if f.Heartbeat > 0 {
		t := time.NewTicker(f.Heartbeat)
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
			if admitted || f.NoAdmit || f.Target.Load() == 0 {
				continue
			}
			admitted = true
			if send("status", status("WAITING", 1)) != nil || send("status", status("READY", 0)) != nil {
				return
			}
		}
	}
}

// Args are the common flags that point a scenario at f.
func (f *Server) Args(extra ...string) []string {
	return append([]string{"--base", f.Pub.URL, "--admin", f.adm.URL, "--admin-token", "adm", "--timeout", "5s"}, extra...)
}
