package listener_test

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/server/listener"
)

// served is a Public on a loopback port whose accepted connections the
// test holds; refused counts the refusals by reason.
type served struct {
	ln       *listener.Public
	accepted chan net.Conn
	mu       sync.Mutex
	refused  map[string]int
	idle     atomic.Int64
}

func startPublic(t *testing.T, cfg listener.Config) *served {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &served{accepted: make(chan net.Conn, 16), refused: map[string]int{}}
	cfg.Refused = func(reason string) { s.mu.Lock(); s.refused[reason]++; s.mu.Unlock() }
	cfg.IdleClosed = func() { s.idle.Add(1) }
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s.ln = listener.NewPublic(raw, cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = s.ln.Close()
		<-done
		close(s.accepted)
		for c := range s.accepted {
			_ = c.Close()
		}
	})
	return s
}

// awaitRefusals waits until reason has been counted want times (the
// callback runs after the refused connection is closed).
func (s *served) awaitRefusals(t *testing.T, reason string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := s.refused[reason]
		s.mu.Unlock()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("refusals %q: got %d, want %d", reason, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustDial(t *testing.T, s *served) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mustAccept returns the server side of the next accepted connection.
func (s *served) mustAccept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// mustRefuse reads the refusal a dialed connection gets: a 503 in the
// contract's JSON, with Retry-After, then the end of the connection.
func mustRefuse(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "5" || res.Header.Get("Content-Type") != "application/json" ||
		!strings.HasPrefix(string(body), `{"error":"unavailable","message":"`) || !strings.Contains(string(body), want) {
		t.Fatalf("refusal: %d %v %s; want 503 unavailable mentioning %q", res.StatusCode, res.Header, body, want)
	}
}

func TestPublicCeiling(t *testing.T) {
	s := startPublic(t, listener.Config{MaxConns: 1})
	mustDial(t, s)
	first := s.mustAccept(t)
	mustRefuse(t, mustDial(t, s), "connection limit")
	s.awaitRefusals(t, listener.RefusedCeiling, 1)
	_ = first.Close() // its slot is given back
	mustDial(t, s)
	s.mustAccept(t)
}

func TestPublicPerAddress(t *testing.T) {
	s := startPublic(t, listener.Config{MaxConns: 100, PerAddr: 2})
	for range 2 {
		mustDial(t, s)
		s.mustAccept(t)
	}
	mustRefuse(t, mustDial(t, s), "from your address")
	s.awaitRefusals(t, listener.RefusedAddress, 1)

	exempt := startPublic(t, listener.Config{MaxConns: 100, PerAddr: 2, Exempt: func(net.IP) bool { return true }})
	for range 3 {
		mustDial(t, exempt)
		exempt.mustAccept(t)
	}
}

func TestPublicFirstRequestDeadline(t *testing.T) {
	s := startPublic(t, listener.Config{MaxConns: 100, FirstRequest: 100 * time.Millisecond})
	silent := mustDial(t, s)
	s.mustAccept(t)
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection without a request: read %v, want EOF (closed by the deadline)", err)
	}
	if got := s.idle.Load(); got != 1 {
		t.Fatalf("closed by the first-request deadline: got %d, want 1", got)
	}

	// Served in time: the deadline no longer applies. A silent connection
	// accepted after it is closed by its own deadline, which falls after
	// the served one's: by then only that one more was closed.
	mustDial(t, s)
	c := s.mustAccept(t)
	listener.MarkServed(c)
	later := mustDial(t, s)
	s.mustAccept(t)
	_ = later.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := later.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a later connection without a request: read %v, want EOF", err)
	}
	if got := s.idle.Load(); got != 2 {
		t.Fatalf("a served connection was closed by the first-request deadline (%d closed, want the 2 silent ones)", got)
	}
}

func TestPublicCloseUnused(t *testing.T) {
	s := startPublic(t, listener.Config{MaxConns: 100})
	unused := mustDial(t, s)
	s.mustAccept(t)
	used := mustDial(t, s)
	sc := s.mustAccept(t)
	if _, err := used.Write([]byte("G")); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	s.ln.CloseUnused()
	_ = unused.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := unused.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("unused connection: read %v, want EOF", err)
	}
	if _, err := sc.Write([]byte("x")); err != nil {
		t.Fatalf("used connection: write %v, want it open", err)
	}
}

func TestGuardHeaderLines(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := listener.GuardHeaderLines(raw)
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nX-Foo\r\n\r\n"))
		_, _ = c.Read(make([]byte, 1)) // held open until the server side closes
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	var got []byte
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !strings.Contains(err.Error(), "header line without a colon") {
				t.Fatalf("after %q: read %v, want the header-line error at once", got, err)
			}
			break
		}
	}
}
