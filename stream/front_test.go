package stream_test

import (
	"context"
	"strconv"
	"testing"

	"waitingroom/stream"
)

// TestPositionNowIsExact: right after an admission or a departure returns,
// PositionNow never answers from a state that misses it — it answers the
// exact place (ZRANK + 1) or sends the caller to Redis — and once this
// hub has applied the event it answers from memory.
func TestPositionNowIsExact(t *testing.T) {
	f := newFixture(t, stream.Options{})
	ctx := context.Background()
	const n = 24
	tickets := map[string]int64{}
	var users []string
	for i := range n {
		u := "u" + strconv.Itoa(i)
		st, err := f.q.Enter(ctx, "r1", u)
		if err != nil {
			t.Fatal(err)
		}
		tickets[u] = st.Ticket
		users = append(users, u)
	}
	f.hub.Position("r1", tickets["u0"]) // starts tracking the room
	waitFor(t, "a fresh room state", func() bool { _, ok := f.hub.Position("r1", tickets["u0"]); return ok })

	// check asks PositionNow for every user still waiting, right after a
	// change returned: each answer is Redis's place or "ask Redis".
	check := func(step string) {
		t.Helper()
		for _, u := range users {
			got, ok := f.hub.PositionNow(ctx, "r1", tickets[u])
			want, err := f.q.Status(ctx, "r1", u)
			if err != nil {
				t.Fatal(err)
			}
			if ok && got.Position != want.Position {
				t.Fatalf("%s: PositionNow(%s) = %d from memory, Redis says %d", step, u, got.Position, want.Position)
			}
		}
	}
	// caughtUp waits for this hub to apply the change — every waiting
	// user's place in memory is Redis's (a departure behind the front
	// leaves the front's place as it was, so the front alone cannot
	// tell) — then PositionNow must answer the front user from memory,
	// exactly.
	caughtUp := func(step string) {
		t.Helper()
		front := users[0]
		waitFor(t, step+" applied", func() bool {
			for _, u := range users {
				st, ok := f.hub.Position("r1", tickets[u])
				want, err := f.q.Status(ctx, "r1", u)
				if err != nil {
					t.Fatal(err)
				}
				if !ok || st.Position != want.Position {
					return false
				}
			}
			return true
		})
		if st, ok := f.hub.PositionNow(ctx, "r1", tickets[front]); !ok || st.Position != 1 {
			t.Fatalf("%s: PositionNow(%s) = %+v, %v; want position 1 from memory", step, front, st, ok)
		}
	}
	for round := int64(1); len(users) > 4; round++ {
		f.setTarget(round)
		admitted := f.admit()
		if len(admitted) != 1 || admitted[0] != users[0] {
			t.Fatalf("round %d admitted %v, want [%s]", round, admitted, users[0])
		}
		if _, ok := f.hub.PositionNow(ctx, "r1", tickets[users[0]]); ok {
			t.Fatalf("round %d: PositionNow answered WAITING for %s right after it was admitted", round, users[0])
		}
		users = users[1:]
		check("after an admission")
		caughtUp("the admission")

		leaver := users[1]
		if _, err := f.q.Leave(ctx, "r1", leaver); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.hub.PositionNow(ctx, "r1", tickets[leaver]); ok {
			t.Fatalf("round %d: PositionNow answered WAITING for %s right after it left", round, leaver)
		}
		users = append(users[:1], users[2:]...)
		check("after a departure")
		caughtUp("the departure")
	}
}
