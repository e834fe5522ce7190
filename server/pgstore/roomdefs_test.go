package pgstore_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/server/pgstore"
)

func mustDefinitions(tb testing.TB, s *pgstore.Store) map[string]queue.RoomConfig {
	tb.Helper()
	defs, err := s.RoomDefinitions(context.Background())
	if err != nil {
		tb.Fatalf("RoomDefinitions: %v", err)
	}
	return defs
}

// TestRoomDefinitions: the first change records the room's whole
// configuration, later ones only their fields (the target the adaptive
// controller moved is not recorded over the operator's); a deleted
// definition is gone, and restored it is back as it was, unless the room
// was given one again meanwhile.
func TestRoomDefinitions(t *testing.T) {
	s := newStore(t, pgstore.Options{PoolSize: 2})
	ctx := context.Background()
	if defs := mustDefinitions(t, s.Store); len(defs) != 0 {
		t.Fatalf("fresh database: %v", defs)
	}
	opens := time.Date(2031, 5, 1, 12, 0, 0, 0, time.UTC)
	first := queue.RoomConfig{Target: 20, EntryTTL: 90 * time.Second, Mode: queue.ModeAdaptive, MinActive: 5, MaxActive: 50,
		Method: queue.MethodRandom, OpensAt: opens, Message: "soon\nvery soon", DisplayName: "Spring sale", Description: "shoes",
		ExpectedOrder: 8 * time.Second}
	paused := true
	if err := s.PutRoomDefinition(ctx, "sale", first, queue.RoomUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	if got := mustDefinitions(t, s.Store)["sale"]; !reflect.DeepEqual(got, first) {
		t.Fatalf("recorded %+v\nwant     %+v", got, first)
	}
	// The controller moved the target to 33 in Redis; the operator changes
	// the message and clears the opening.
	moved := first
	moved.Target, moved.Message, moved.OpensAt = 33, "", time.Time{}
	empty, zero := "", time.Time{}
	if err := s.PutRoomDefinition(ctx, "sale", moved, queue.RoomUpdate{Message: &empty, OpensAt: &zero}); err != nil {
		t.Fatal(err)
	}
	want := first
	want.Message, want.OpensAt = "", time.Time{}
	if got := mustDefinitions(t, s.Store)["sale"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the second change %+v\nwant %+v", got, want)
	}
	// Setting the target and the method records them.
	target, method, ttl, mode, order := int64(7), queue.MethodFIFO, 2*time.Minute, queue.ModeFixed, 2500*time.Millisecond
	if err := s.PutRoomDefinition(ctx, "sale", moved, queue.RoomUpdate{Target: &target, Method: &method, EntryTTL: &ttl, Mode: &mode,
		ExpectedOrder: &order}); err != nil {
		t.Fatal(err)
	}
	want.Target, want.Method, want.EntryTTL, want.Mode = 7, queue.MethodFIFO, 2*time.Minute, queue.ModeFixed
	want.ExpectedOrder = order
	if got := mustDefinitions(t, s.Store)["sale"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the third change %+v\nwant %+v", got, want)
	}

	def, err := s.DeleteRoomDefinition(ctx, "sale")
	if err != nil || def == nil {
		t.Fatalf("delete: %s, %v", def, err)
	}
	if defs := mustDefinitions(t, s.Store); len(defs) != 0 {
		t.Fatalf("after the delete: %v", defs)
	}
	if again, err := s.DeleteRoomDefinition(ctx, "sale"); err != nil || again != nil {
		t.Fatalf("deleted twice: %s, %v; want nil, nil", again, err)
	}
	if err := s.RestoreRoomDefinition(ctx, "sale", def); err != nil {
		t.Fatal(err)
	}
	if got := mustDefinitions(t, s.Store)["sale"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("restored %+v\nwant %+v", got, want)
	}
	// A definition given meanwhile wins over the one restored.
	if _, err := s.DeleteRoomDefinition(ctx, "sale"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRoomDefinition(ctx, "sale", queue.RoomConfig{Target: 1}, queue.RoomUpdate{}); err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreRoomDefinition(ctx, "sale", def); err != nil {
		t.Fatal(err)
	}
	if got := mustDefinitions(t, s.Store)["sale"]; got.Target != 1 {
		t.Fatalf("restore over a new definition: %+v; want the new one kept", got)
	}
	if err := s.PutRoomDefinition(ctx, "Bad{Room}", first, queue.RoomUpdate{}); err == nil {
		t.Fatal("an invalid room name was recorded")
	}
}

// TestRoomDefinitionsUnreachable: with the database gone every call is
// an error, never a panic, and not a business outcome.
func TestRoomDefinitionsUnreachable(t *testing.T) {
	s := newStore(t, pgstore.Options{PoolSize: 1})
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.RoomDefinitions(ctx); err == nil || pgstore.IsOutcome(err) {
		t.Errorf("RoomDefinitions: %v", err)
	}
	if err := s.PutRoomDefinition(ctx, "r", queue.RoomConfig{}, queue.RoomUpdate{}); err == nil || pgstore.IsOutcome(err) {
		t.Errorf("PutRoomDefinition: %v", err)
	}
	if _, err := s.DeleteRoomDefinition(ctx, "r"); err == nil || pgstore.IsOutcome(err) {
		t.Errorf("DeleteRoomDefinition: %v", err)
	}
	if err := s.RestoreRoomDefinition(ctx, "r", []byte(`{}`)); err == nil || pgstore.IsOutcome(err) {
		t.Errorf("RestoreRoomDefinition: %v", err)
	}
}
