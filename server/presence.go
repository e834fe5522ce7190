package server

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"waitingroom/queue/loop"
)

// presence collects the waiting users seen on this instance (polls; open
// streams are asked of the hub at flush time) and marks them present in
// Redis in batches — one pipeline per room every few seconds, not a Redis
// write per poll — so the admission run can remove those who abandoned the
// queue (WR_IDLE_TIMEOUT).
type presence struct {
	seed   maphash.Seed
	shards [16]presenceShard
}

type presenceShard struct {
	mu    sync.Mutex
	rooms map[string]map[string]struct{}
}

func newPresence() *presence { return &presence{seed: maphash.MakeSeed()} }

// seen records that user polled room.
func (p *presence) seen(room, user string) {
	sh := &p.shards[maphash.String(p.seed, user)%uint64(len(p.shards))]
	sh.mu.Lock()
	if sh.rooms == nil {
		sh.rooms = map[string]map[string]struct{}{}
	}
	m := sh.rooms[room]
	if m == nil {
		m = map[string]struct{}{}
		sh.rooms[room] = m
	}
	m[user] = struct{}{}
	sh.mu.Unlock()
}

// take returns and forgets everyone seen since the last take, by room.
func (p *presence) take() map[string][]string {
	out := map[string][]string{}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		rooms := sh.rooms
		sh.rooms = nil
		sh.mu.Unlock()
		for room, users := range rooms {
			for u := range users {
				out[room] = append(out[room], u)
			}
		}
	}
	return out
}

// runPresence flushes presence every idle/6 (at most every 10 s) until ctx
// is done.
func (s *Server) runPresence(ctx context.Context) {
	if s.cfg.IdleTimeout <= 0 {
		return
	}
	loop.Every(ctx, min(s.cfg.IdleTimeout/6, 10*time.Second), s.flushPresence)
}

// flushPresence marks everyone seen since the last flush present in Redis:
// pollers, and the users of the streams open on this instance.
func (s *Server) flushPresence(ctx context.Context) {
	seen := s.presence.take()
	for _, room := range s.hub.Rooms() {
		seen[room] = append(seen[room], s.hub.Users(room)...)
	}
	for room, users := range seen {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = s.q.Touch(tctx, room, users) // Redis down: nobody is removed meanwhile either
		cancel()
	}
}
