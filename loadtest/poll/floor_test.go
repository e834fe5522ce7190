package poll

import (
	"net"
	"net/http"
	"testing"

	"waitingroom/queue/queuetest"
)

// TestFloorCallsRedis: every answer of the floor made its script call —
// the key holds one member per request — and the answer is the plain
// handler's document; a floor that stopped calling Redis would leave the
// key empty.
func TestFloorCallsRedis(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	key := prefix + "floor"
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop, err := serveFloor(ln, map[string]any{"status": "WAITING", "position": 1}, queuetest.URL(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := "http://" + ln.Addr().String() + "/position"
	const n = 25
	for i := range n {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, nil)
		body, err := readOK(http.DefaultClient, req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if string(body) != `{"position":1,"status":"WAITING"}` {
			t.Fatalf("request %d: body %s", i, body)
		}
	}
	if got, err := rdb.ZCard(t.Context(), key).Result(); err != nil || got != n {
		t.Fatalf("ZCARD %s = %d (%v), want %d: one member per request", key, got, err, n)
	}
	if rank, err := rdb.ZRank(t.Context(), key, "25").Result(); err != nil || rank != n-1 {
		t.Errorf("ZRANK of the last request = %d (%v), want %d", rank, err, n-1)
	}
	members, err := floorMembers(t.Context(), rdb, key)
	if err != nil || members != n {
		t.Errorf("floorMembers = %d (%v), want %d", members, err, n)
	}
	if ex, _ := rdb.Exists(t.Context(), key).Result(); ex != 0 {
		t.Error("floorMembers left the key")
	}
}
