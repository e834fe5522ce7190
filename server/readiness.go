package server

import (
	"context"
	"sync"
	"time"

	"waitingroom/queue/loop"
)

// readinessEvery is how often the readiness loop checks the dependencies.
const readinessEvery = 5 * time.Second

// watchReadiness is the readiness loop: every readinessEvery it pings Redis
// and Postgres as GET /readyz does (in parallel, a second each) and sets
// waitingroom_dependency_up{dependency}, so an alert sees an instance that
// cannot reach them without probing /readyz itself.
func (s *Server) watchReadiness(ctx context.Context) {
	deps := map[string]func(context.Context) error{"redis": s.pingRedis, "postgres": s.store.Ping}
	loop.NowAndEvery(ctx, readinessEvery, func(ctx context.Context) {
		var wg sync.WaitGroup
		for name, ping := range deps {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				up := 0.0
				if ping(pctx) == nil {
					up = 1
				}
				if ctx.Err() == nil { // a stop is no outage
					s.m.dependencyUp.WithLabelValues(name).Set(up)
				}
			})
		}
		wg.Wait()
	})
}
