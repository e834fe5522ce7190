// Package estimate computes the wait a waiting user is shown: from what a
// room measures, once a second, a forecast of how many people the room
// will admit over the coming seconds, and from it the time until a given
// position is reached.
//
// # The model
//
// A room admits a user whenever one of its targetActive (T) slots frees.
// An admitted user holds a slot until their order ends — a shower, whose
// hold lasts h on average (the time to decide plus the order) — or, when
// they never order (a no-show, a share p of those admitted), until the
// entry window (TTL) ends. So in the long run the room admits
//
//	A = T ÷ ((1 − p)·h + p·TTL)   users a second   (Little's law),
//
// but not at once: right after an opening every slot is held by people
// who will order soon, and no-shows pile up over a whole entry window
// before the rate settles. The forecast therefore runs the slots forward
// in time, in steps of about h/4 (between 50 ms and 1 s), over one entry
// window and two holds:
//
//   - the slots held now free as Redis says: each active user's deadline is
//     known (Sample.Remaining). A user admitted less than τ = 3h (at most
//     a quarter of the window) ago is
//     still likely to order: they free their slot after the rest of a hold
//     with the odds (1 − p)·S(a) ÷ ((1 − p)·S(a) + p), S(a) = e^(−a/h), a
//     their age; everyone older frees at the deadline (a no-show, or an
//     order in flight);
//   - every freed slot, and the free ones (T − active), admit at once; of
//     those admitted, (1 − p) free again after a hold (spread evenly over
//     0.5h…1.5h) and p at the end of their window;
//   - past the horizon the room admits A a second.
//
// Positions advance faster than admissions: some of the people ahead leave
// (or are dropped as idle) before their turn. With d the share of those
// leaving among those leaving or admitted over the last minute, a position
// P is reached when the admissions forecast reach P·(1 − d). The ETA is
// that time, rounded up to a second.
//
// # What is measured
//
//   - h: the mean time from admission to the release of the slot, over the
//     orders that ended in the last 10 s (extended back to 2 min until 20
//     have ended; the room's all-time mean when the estimator has seen too
//     few — a fresh instance).
//   - p: the share of the users admitted between τ and ¾·TTL ago who still
//     hold their slot unused (slow deciders are few after 3h), together with
//     the share of those admitted a window earlier whose window has since
//     expired unused (over the window's length, 10 s to a minute), smoothed
//     like h; once measured, a second with too few users of those ages
//     keeps the last value. The room's all-time expired ÷ admitted stands
//     in only on an instance that joined a room mid-sale.
//   - d: departures (left or idle) against admissions over the last minute.
//
// # When there is no estimate
//
// Forecast.Known is false — and the API withholds etaSeconds — while the
// room is paused or closed, admits nobody (targetActive 0), or has not
// measured enough: no order has ended yet (h unknown), or no admitted user
// is old enough to tell a no-show from a slow decider (p unknown). In a
// sale that has just opened that lasts about 3h — 15 s with a typical five
// second decision — and is never bridged by a guess: a guess from
// targetActive alone was measured off by a median 84 %.
//
// # Stability
//
// The forecast changes only as the measurements do; with a steady drain
// a user's estimate falls about a second a second. It can rise when the
// room truly slows (orders take longer, the limit drops, more no-shows):
// the estimate follows the room, not a promise made earlier.
//
// Concurrency: an Estimator is not safe for concurrent use (its owner feeds
// it from one goroutine); a Forecast is an immutable value, safe to share.
package estimate
