package systemtest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PostgresConns is how many connections to Postgres the system tests hold
// at once, across every test binary. The server's max_connections is 100
// (the CI machine's, Postgres's default) less 3 for superusers; the other
// packages' tests and pgtest's own connections (one a test, while it makes
// or drops its schema) take the rest. Each instance's pool opens
// connections as its statements need them, up to WR_DB_POOL (40 by
// default), and keeps them until it closes: with the packages side by side
// (go test -p 4, -parallel 4) sixteen tests could hold hundreds at worst.
const PostgresConns = 60

// budgetURL is dbURL through a relay that t runs until it ends: every
// connection made to it waits for one of PostgresConns slots, held while
// the connection lasts, then is joined to the server. An instance, a child
// server, the seeding all connect to Postgres through it; a connection
// that would pass the budget waits for one to close (a pool's first
// connections, each test's, are seldom the ones that wait: pools keep few).
func budgetURL(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	server := u.Host
	if u.Port() == "" {
		server = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{t: t, ln: ln, server: server, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	u.Host = ln.Addr().String()
	return u.String()
}

// relay joins the connections made to ln to Postgres at server.
type relay struct {
	t      testing.TB
	ln     net.Listener
	server string
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool // both ends of every joined connection
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go r.join(c)
	}
}

// track adds c to the connections close ends; false once closed.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = true
	return true
}

// untrack closes c and forgets it.
func (r *relay) untrack(c net.Conn) {
	c.Close()
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// join waits for a slot, dials the server and copies both ways until
// either end closes.
func (r *relay) join(c net.Conn) {
	defer r.wg.Done()
	defer r.untrack(c)
	slot, err := r.slot()
	if err != nil {
		return
	}
	defer slot.Close()
	s, err := net.DialTimeout("tcp", r.server, 10*time.Second)
	if err != nil {
		return
	}
	if !r.track(s) {
		s.Close()
		return
	}
	defer r.untrack(s)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(s, c)
		s.Close()
		c.Close()
		close(done)
	}()
	_, _ = io.Copy(c, s)
	c.Close()
	s.Close()
	<-done
}

// slot takes one of PostgresConns slots, each an exclusive flock on a file
// of slotDir, waiting until one is free or the relay closes.
func (r *relay) slot() (*os.File, error) {
	if err := os.MkdirAll(slotDir, 0o755); err != nil {
		return nil, err
	}
	for {
		start := rand.IntN(PostgresConns) // spread the tries over the files
		for i := range PostgresConns {
			name := filepath.Join(slotDir, fmt.Sprintf("postgres-%d", (start+i)%PostgresConns))
			f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				return nil, err
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
				return f, nil
			}
			f.Close()
		}
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// close stops accepting, ends every joined connection and waits for the
// relay's goroutines.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}
