package systemtest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"waitingroom/stream/sseclient"
)

// DialerFrom binds outgoing sockets to the loopback source address src.
func DialerFrom(src string) *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
}

// ClientFrom is an HTTP client whose connections come from src (no idle
// pool: each request or stream holds its own connection while it lasts),
// read once asked on: a connection past the cap is answered 503 at accept
// (askingTransport).
func ClientFrom(src string) *http.Client {
	tr := askingTransport(DialerFrom(src))
	tr.MaxIdleConnsPerHost = -1
	return &http.Client{Transport: tr}
}

// SSEFrom opens an SSE stream from src with extra headers and returns it
// once its first event (the current status) has arrived.
func SSEFrom(t testing.TB, in *Instance, src, room, queueToken string, headers ...string) *SSEStream {
	t.Helper()
	req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/"+room+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := ClientFrom(src).Do(req)
	if err != nil {
		t.Fatalf("events from %s: %v", src, err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("events from %s = %d %s", src, res.StatusCode, b)
	}
	s := &SSEStream{Res: res, R: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
	t.Cleanup(func() { res.Body.Close() })
	if typ, m := s.Next(t); typ != "status" || m.Status != "WAITING" {
		t.Fatalf("first event from %s: %s %+v", src, typ, m)
	}
	return s
}

// RefusedBy returns waitingroom_connections_refused_total{reason}.
func (in *Instance) RefusedBy(reason string) float64 {
	in.t.Helper()
	mfs, err := in.Parts.Metrics.Registry.Gather()
	if err != nil {
		in.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "waitingroom_connections_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// sseEvent reads the next raw event of s.
func (s *SSEStream) Event(t testing.TB) (typ string, data map[string]any) {
	t.Helper()
	ev, err := s.R.Next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	_ = json.Unmarshal([]byte(ev.Data), &data)
	return ev.Type, data
}
