// Package checkout owns the order use case: a user admitted from the queue
// spends a one-time entry token on one order.
//
// Checkout.Place runs, in this order: the entry token is present; the
// caller's limits (the server's rate limits, which need the HTTP request)
// pass; the product exists (a per-instance cache, before anything is
// spent: a typo must not cost the wait); the token is consumed atomically
// (queue.Consume); the order transaction runs (pgstore.PlaceOrder, with
// the injected fault delay); then the slot is settled:
//
//	placed, or a business refusal  the active slot is released
//	a value the database refused   the token is restored (the client's
//	                               fault, not a reason to lose the turn)
//	an infrastructure failure      the token is restored, retrying while
//	                               Redis is briefly unreachable
//
// Every order's latency and kind of failure feed the adaptive signals. The
// result carries the outcome (the label of waitingroom_orders_total) and
// the error says why an order was not placed: the packages' sentinels,
// this package's (ErrNoEntryToken, ErrUnavailable, ErrEntryLost,
// ErrUnknownUser), a *RefusedError or a *StoreError; the server maps them
// to the contract (server/errors.go: its error table, and checkoutError
// for the last two).
//
// Checkout.Orders reads a user's own orders back (newest first, at most
// MaxOrdersRead), so a page can show the result of an order after a
// reload.
//
// Concurrency: a Checkout is safe for concurrent use; Place holds no lock
// while it waits on Redis or Postgres.
package checkout
