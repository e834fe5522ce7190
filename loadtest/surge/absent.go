package surge

import (
	"context"
	"fmt"
	"os"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/report"
)

// What the shoppers who gave up cost the room. The tool cannot see an
// abandoner once its tab is closed; the room's counters can: read at the
// start and when every user has finished (before the leftovers leave),
// the users the room admitted that the tool never saw READY are the
// abandoners admitted anyway — no-shows who hold a slot for the whole
// entry window — and the room's passedOver counts those presence-aware
// admission passed over instead. It assumes the run is the room's only
// traffic, as the rest of the report does.

// absentFigures is the report's account of the abandoners.
type absentFigures struct {
	Known bool `json:"known"` // both room reads succeeded
	// Admitted: admitted by the room during the run (its counter's
	// difference); Ready: of them the users the tool saw READY.
	Admitted int64 `json:"admitted"`
	Ready    int64 `json:"ready"`
	// AbandonedAdmitted: admitted after they had given up (Admitted −
	// Ready): no-shows the room could not tell from the present ones.
	AbandonedAdmitted int64 `json:"abandonedAdmitted"`
	// PassedOver: absent users the admission passed over (each once).
	PassedOver int64 `json:"passedOver"`
	// Dropped: waiting users dropped as idle during the run.
	Dropped int64 `json:"droppedIdle"`
	// SlotSeconds: the slot time the abandoners admitted held, at most one
	// entry window each (their window may outlast the run).
	SlotSeconds float64 `json:"slotSeconds"`
	EntryTTL    float64 `json:"entryTtlSeconds"`
}

// readCounters reads the room's counters, or says on stderr why not.
func (s *Surge) readCounters(ctx context.Context) (client.RoomState, bool) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := s.Adm.RoomState(cctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "surge: could not read the room's counters: %v\n", err)
		return st, false
	}
	return st, true
}

// absentFrom derives the figures from the room's counters before and
// after the run and the READY users the tool saw.
func absentFrom(before, after client.RoomState, ready int64, ttl time.Duration) absentFigures {
	a := absentFigures{Known: true, Admitted: after.Admitted - before.Admitted, Ready: ready,
		PassedOver: after.PassedOver - before.PassedOver, Dropped: after.Abandoned - before.Abandoned,
		EntryTTL: ttl.Seconds()}
	a.AbandonedAdmitted = max(a.Admitted-a.Ready, 0)
	a.SlotSeconds = float64(a.AbandonedAdmitted) * ttl.Seconds()
	return a
}

// share is the abandoners admitted as a share of the admissions, in %.
func (a absentFigures) share() float64 {
	if a.Admitted <= 0 {
		return 0
	}
	return 100 * float64(a.AbandonedAdmitted) / float64(a.Admitted)
}

// noShowString says the no-shows by cause.
func (a absentFigures) noShowString(present int) string {
	if !a.Known {
		return fmt.Sprintf("%s never ordered while present; the abandoners admitted: unknown (the room's counters were not read)", report.Commas(present))
	}
	return fmt.Sprintf("%s never ordered while present; %s abandoned before their admission and admitted anyway (%.1f %% of %s admissions); %s passed over as absent instead; %s dropped as idle",
		report.Commas(present), report.Commas(int(a.AbandonedAdmitted)), a.share(), report.Commas(int(a.Admitted)),
		report.Commas(int(a.PassedOver)), report.Commas(int(a.Dropped)))
}

// slotString says the slot time the abandoners admitted held, against the
// room's slot time over the drain.
func (a absentFigures) slotString(target int64, drain float64) string {
	if !a.Known {
		return "-"
	}
	out := fmt.Sprintf("%.0f slot-seconds (%s × a %.0f s entry window, at most)", a.SlotSeconds, report.Commas(int(a.AbandonedAdmitted)), a.EntryTTL)
	if room := float64(target) * drain; room > 0 {
		out += fmt.Sprintf(", %.1f %% of the room's %.0f over the drain", 100*a.SlotSeconds/room, room)
	}
	return out
}
