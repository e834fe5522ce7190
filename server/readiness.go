package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"waitingroom/queue/loop"
)

// readinessEvery is how often the readiness loop checks the dependencies.
const readinessEvery = 5 * time.Second

// watchReadiness is the readiness loop: every readinessEvery it runs the
// checks of GET /readyz (in parallel, a second each) and sets
// waitingroom_dependency_up{dependency} from the pings of Redis and
// Postgres and waitingroom_rooms_missing from the rooms check, so an alert
// sees an instance that is not ready without probing /readyz itself.
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
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if missing, err := s.missingRooms(rctx); err == nil {
				s.m.roomsMissing.Set(float64(len(missing)))
			}
		})
		wg.Wait()
	})
}

// checkRooms is /readyz's rooms check: nil when every configured room
// (WR_ROOMS) exists in Redis, else an error naming those that do not.
//
// Redis answering is not enough to queue anyone: the admission loop
// creates the configured rooms, one interval after the start and again
// after Redis lost its data (a restart without persistence, a failover to
// an empty replica), and until then every enter to them answers 404. An
// instance in that state must not be given users. It is not in
// waitingroom_dependency_up, as Redis is up; it has its own gauge,
// waitingroom_rooms_missing, because the case where it lasts is invisible
// otherwise: Redis answers pings but refuses the loop's writes (out of
// memory under noeviction, a read-only replica) or the loop is not
// running, and the instance leaves the load balancer with every
// dependency up. A room lost for one admission interval is seldom
// sampled, so the gauge stays quiet for the ordinary recoveries — except
// at start, where the loop's first sample may come before the admission
// loop's first run and count the rooms it is about to create, until the
// next sample 5 s later (the alert waits 2 minutes).
//
// Only the configured rooms count: they are the ones the loop recreates
// (so waiting ends the failure) and those gateway mode's WR_PROTECT routes
// may name. A room created through the admin API is not recreated after a
// loss, and failing on it would keep every instance out for good. No
// configured room: the check passes without calling Redis.
func (s *Server) checkRooms(ctx context.Context) error {
	missing, err := s.missingRooms(ctx)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return errors.New("missing: " + strings.Join(missing, ", "))
	}
	return nil
}

// missingRooms are the configured rooms absent from Redis (one round trip).
func (s *Server) missingRooms(ctx context.Context) ([]string, error) {
	return s.q.MissingRooms(ctx, s.cfg.Admission.Rooms)
}
