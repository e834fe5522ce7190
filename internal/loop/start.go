package loop

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

// Start runs each loop on a goroutine of its own, and returns the
// function that stops them: it cancels their context and waits until every
// one has returned, or until ctx is done — then the error names the loops
// still running (each stops on its own context; the wait only bounds a
// shutdown).
func Start(loops []Loop) (stop func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = map[string]bool{}
	)
	for _, l := range loops {
		running[l.Name] = true // all named before any starts: a loop may return at once
	}
	for _, l := range loops {
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
		return errors.New("shutdown timed out; loops still running: " + strings.Join(names, ", "))
	}
}
