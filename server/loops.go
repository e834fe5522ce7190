package server

import (
	"context"

	"waitingroom/queue/loop"
)

// Loops are the instance's background loops. Serve does not start them:
// whoever composes the instance does (cmd/waitingroom), with
// loop.Start before Serve, and stops them after Serve has returned, so the
// shutdown order stays streams, HTTP, the loops, then Redis and Postgres.
//
//	admission   creates the configured rooms and admits every WR_ADMIT_INTERVAL
//	hub         the pub/sub subscription and the streams' fan-out
//	access      reloads the access lists every second
//	presence    marks the waiting users seen here present in Redis
//	signals     flushes the order signals for adaptive admission
//	controller  steps the adaptive limit of the rooms that use it
//	faults      reloads the injected faults twice a second
//	history     records every room's point of the shared history every second
//	gateway     reloads the rooms' gateway settings every second (gateway mode)
//	readiness   checks Redis and Postgres every 5 s (waitingroom_dependency_up)
func (s *Server) Loops() []loop.Loop {
	loops := []loop.Loop{
		{Name: "admission", Run: s.admitter.Run},
		{Name: "hub", Run: s.hub.Run},
		{Name: "access", Run: s.acl.Run},
		{Name: "presence", Run: s.presence.Run},
		{Name: "signals", Run: func(ctx context.Context) { s.rec.Run(ctx, s.poolStats()) }},
		{Name: "controller", Run: s.ctl.Run},
		{Name: "faults", Run: s.faults.Run},
		{Name: "history", Run: s.history.Run},
		{Name: "readiness", Run: s.watchReadiness},
	}
	if s.gwSettings != nil {
		loops = append(loops, loop.Loop{Name: "gateway", Run: s.gwSettings.Run})
	}
	return loops
}
