package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestListRooms: pages follow the names in order from After (exclusive),
// within Prefix, Limit at a time, Next leading to the next page and empty
// on the last; a Busy filter keeps the rooms with work (or without).
func TestListRooms(t *testing.T) {
	q, _ := queuetest.Queue(t, 1, time.Minute) // and its room r1
	ctx := context.Background()
	var all []string
	for i := range 12 {
		for _, p := range []string{"a", "b"} {
			name := fmt.Sprintf("%s-%02d", p, i)
			all = append(all, name)
			if err := q.EnsureRoom(ctx, name, queue.RoomConfig{Target: 1, EntryTTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
	}
	all = append(all, "r1")
	slices.Sort(all)
	for _, room := range []string{"a-03", "a-07", "a-08", "b-01"} {
		if _, err := q.Enter(ctx, room, "u"); err != nil {
			t.Fatal(err)
		}
	}
	yes, no := true, false
	for _, c := range []struct {
		name string
		q    queue.RoomQuery
		want []string
	}{
		{"all", queue.RoomQuery{Limit: 5}, all},
		{"prefix", queue.RoomQuery{Prefix: "a-", Limit: 5}, all[:12]},
		{"prefix, after before it", queue.RoomQuery{Prefix: "b-", After: "a-05", Limit: 5}, all[12:24]},
		{"prefix, after inside", queue.RoomQuery{Prefix: "b-", After: "b-09", Limit: 5}, []string{"b-10", "b-11"}},
		{"after a missing name", queue.RoomQuery{After: "b-105", Limit: 5}, []string{"b-11", "r1"}},
		{"prefix matching nothing", queue.RoomQuery{Prefix: "c", Limit: 5}, nil},
		{"busy", queue.RoomQuery{Busy: &yes, Limit: 2}, []string{"a-03", "a-07", "a-08", "b-01"}},
		{"busy with prefix", queue.RoomQuery{Busy: &yes, Prefix: "a-0", Limit: 1}, []string{"a-03", "a-07", "a-08"}},
		{"idle", queue.RoomQuery{Busy: &no, Prefix: "a-0", Limit: 3}, []string{"a-00", "a-01", "a-02", "a-04", "a-05", "a-06", "a-09"}},
	} {
		var got []string
		rq := c.q
		for pages := 0; ; pages++ {
			p, err := q.ListRooms(ctx, rq)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if len(p.Names) > rq.Limit || (p.Next != "" && len(p.Names) == 0) {
				t.Fatalf("%s: page %+v for limit %d", c.name, p, rq.Limit)
			}
			got = append(got, p.Names...)
			if p.Next == "" {
				break
			}
			if pages > len(all) {
				t.Fatalf("%s: no last page", c.name)
			}
			rq.After = p.Next
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}
	// A full last page says it is the last.
	if p, err := q.ListRooms(ctx, queue.RoomQuery{Prefix: "a-", After: "a-07", Limit: 4}); err != nil || p.Next != "" || len(p.Names) != 4 {
		t.Fatalf("full last page: %+v, %v; want 4 names and no next", p, err)
	}
}

// TestRoomInfos: rooms read in one pipeline, in the order asked, missing
// ones and invalid names left out.
func TestRoomInfos(t *testing.T) {
	q, _ := queuetest.Queue(t, 3, time.Minute)
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r2", queue.RoomConfig{Target: 7, EntryTTL: time.Minute, Paused: true}); err != nil {
		t.Fatal(err)
	}
	queuetest.Enter(t, q, "a", "b")
	infos, err := q.RoomInfos(ctx, []string{"r2", "nosuch", "Bad{Room}", "r1"})
	if err != nil || len(infos) != 2 {
		t.Fatalf("%+v, %v; want r2 and r1", infos, err)
	}
	if r := infos[0]; r.Name != "r2" || r.Target != 7 || !r.Paused || r.Waiting != 0 {
		t.Errorf("r2: %+v", r)
	}
	one, err := q.Room(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r := infos[1]; r.Name != "r1" || r.Waiting != 2 || r.Entered != 2 || r != one {
		t.Errorf("r1: %+v; Room says %+v", r, one)
	}
}
