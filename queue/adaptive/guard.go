package adaptive

import (
	"math"
	"time"
)

// More reasons, those of Guard.
const (
	ReasonHoldGrowth = "hold_growth" // back to the limit before a growth that raised the hold time
	ReasonSettling   = "settling"    // hold: the window after a cut, read while admitted users drained
	ReasonCapped     = "capped"      // hold: growth stopped at the ceiling a recent step set
)

// The guard's constants.
const (
	// holdRiseMin: a growth raised the hold time when the mean hold after
	// it grew by at least half the growth's ratio (×1.5 after a ×2) and
	// by this much, which sets sub-millisecond noise apart.
	holdRiseMin = 2 * time.Millisecond
	// queuedFor is how many windows a pool_wait cut caps growth below
	// the limit that queued; heldFor, how many a hold_growth one caps it
	// at the limit where the hold was flat (the database or its machine,
	// not the pool, bound, and that lasts).
	queuedFor = 5
	heldFor   = 15
	// fillShare: growth needs the room's mean active count to fill at
	// least this share of the window's limit: bursts of arrivals bind a
	// limit the room does not fill, and the slack above the mean becomes
	// a burst on the pool when the database slows (a limit of 200 filled
	// to 55 queued 120 acquires at a 300 ms delay's onset).
	fillShare = 0.8
)

// Ceiling caps an adaptive room's growth until a time (Limit 0: none).
type Ceiling struct {
	Limit int64
	Until time.Time
}

// Guard tempers NextLimit's answer (next, reason) for a room at limit
// with what the step before showed (prev: the stored state, its Signals
// those of the window the last step read). The capacity rule reads one
// window as if the hold time did not depend on the limit; where it grows
// with concurrency (a hot row, a database sharing a saturated CPU) more
// slots raise the hold and the queue, not throughput. In order:
//
//  1. a stop, a bounds move or a stress cut stands;
//  2. when the last step grew the limit to the current one and this
//     window's mean hold rose by half the growth's ratio or more (at
//     least 2 ms) while its orders rose by less than a quarter, the
//     limit goes back to where it grew from, or to next if lower
//     (ReasonHoldGrowth), and growth is capped there for heldFor
//     windows;
//  3. a pool_wait cut stands and caps growth below the limit that queued
//     for queuedFor windows (a lower ceiling still in force stays);
//  4. a growth right after a cut holds (ReasonSettling): the window was
//     read while the users admitted before the cut drained;
//  5. a growth of a limit the room's mean active count filled to less
//     than 0.8 holds (ReasonUnderused); after a growth at the last step
//     the window's limit is the mean of the two, as it changed halfway;
//  6. a growth stops at the ceiling (ReasonCapped when it stops it), and
//     while a ceiling is in force it is at most ×1.25 (at least +1): a
//     pool that queued recently looked idle in a window of clumped
//     orders, not in the steady state that the ×2 of an idle pool is for.
//
// It returns the limit, the reason and the ceiling to keep.
func Guard(limit, next int64, reason string, s Signals, prev State, now time.Time) (int64, string, Ceiling) {
	ceil, win := prev.Ceiling, s.Window
	if !now.Before(ceil.Until) {
		ceil = Ceiling{}
	}
	if reason != ReasonCapacity && reason != ReasonSteady && reason != ReasonGated && reason != ReasonUnderused && reason != ReasonPoolWait {
		return next, reason, ceil
	}
	last := prev.LastChange
	recent := last != nil && win > 0 && now.Sub(last.At) <= win*3/2
	if recent && last.To > last.From && last.To == limit && heldNotServed(prev.Signals, s, float64(last.To)/float64(last.From)) {
		return min(next, last.From), ReasonHoldGrowth, Ceiling{Limit: last.From, Until: now.Add(heldFor * win)}
	}
	switch {
	case reason == ReasonPoolWait && next < limit:
		if ceil.Limit == 0 || ceil.Limit >= limit {
			ceil = Ceiling{Limit: limit - 1, Until: now.Add(queuedFor * win)}
		}
		return next, reason, ceil
	case next <= limit:
		return next, reason, ceil
	case recent && last.To < last.From:
		return limit, ReasonSettling, ceil
	case s.Active < fillShare*windowLimit(limit, last, recent):
		return limit, ReasonUnderused, ceil
	case ceil.Limit > 0:
		next = min(next, max(int64(math.Floor(busyGrowth*float64(limit))), limit+1))
		if next > ceil.Limit {
			if next = max(ceil.Limit, limit); next == limit {
				return limit, ReasonCapped, ceil
			}
		}
	}
	return next, reason, ceil
}

// heldNotServed reports whether a growth by ratio went into holding
// connections rather than serving orders: from the window before to the
// one after, the mean hold rose by at least half the ratio and by
// holdRiseMin, and the orders by less than a quarter of it (the window
// after runs half at the old limit; a hold that rises because the window
// before mixed in fast acquires, with orders rising with the limit, is
// not the database slowing with concurrency).
func heldNotServed(before, after Signals, ratio float64) bool {
	half, quarter := 1+(ratio-1)/2, 1+(ratio-1)/4
	return before.Hold > 0 && after.Hold-before.Hold >= holdRiseMin && float64(after.Hold) >= half*float64(before.Hold) &&
		float64(after.Orders) < quarter*float64(before.Orders)
}

// windowLimit is the limit over the window a step reads: the step before
// changed it halfway through (recent: last is that step's change).
func windowLimit(limit int64, last *LimitChange, recent bool) float64 {
	if recent && last.To == limit {
		return float64(last.From+last.To) / 2
	}
	return float64(limit)
}
