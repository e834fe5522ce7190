package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Loop is one of an instance's background loops: Run works until its
// context is done, then returns.
type Loop struct {
	Name string
	Run  func(ctx context.Context)
}

// Loops are the instance's background loops. Serve does not start them:
// whoever composes the instance does (cmd/waitingroom, the tests), with
// StartLoops before Serve, and stops them after Serve has returned, so the
// shutdown order stays streams, HTTP, the loops, then Redis and Postgres.
//
//	admission   creates the configured rooms and admits every WR_ADMIT_INTERVAL
//	hub         the pub/sub subscription and the streams' fan-out
//	access      reloads the access lists every second
//	presence    marks the waiting users seen here present in Redis
//	signals     flushes the order signals for adaptive admission
//	controller  steps the adaptive limit of the rooms that use it
//	faults      reloads the injected faults twice a second
func (s *Server) Loops() []Loop {
	return []Loop{
		{"admission", s.admitter.Run},
		{"hub", s.hub.Run},
		{"access", s.acl.Run},
		{"presence", s.presence.Run},
		{"signals", func(ctx context.Context) { s.rec.Run(ctx, s.poolStats()) }},
		{"controller", s.ctl.Run},
		{"faults", s.faults.Run},
	}
}

// StartLoops runs each loop on a goroutine of its own, and returns the
// function that stops them: it cancels their context and waits until every
// one has returned, or until ctx is done — then the error names the loops
// still running (each stops on its own context; the wait only bounds a
// shutdown).
func StartLoops(loops []Loop) (stop func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = map[string]bool{}
	)
	for _, l := range loops {
		running[l.Name] = true
		wg.Go(func() {
			l.Run(ctx)
			mu.Lock()
			delete(running, l.Name)
			mu.Unlock()
		})
	}
	return func(wait context.Context) error {
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-wait.Done():
		}
		mu.Lock()
		defer mu.Unlock()
		names := make([]string, 0, len(running))
		for n := range running {
			names = append(names, n)
		}
		slices.Sort(names)
		return errors.New("server: shutdown timed out; loops still running: " + strings.Join(names, ", "))
	}
}
