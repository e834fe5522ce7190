package resilience

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue/queuetest"
)

// openTopology opens a client the way the server does, from environment
// variables (REDIS_URL's host is ignored with cluster seeds or sentinels).
func openTopology(t *testing.T, vars ...string) redis.UniversalClient {
	t.Helper()
	env := map[string]string{"WR_DEV": "1", "REDIS_URL": "redis://127.0.0.1:1/0"}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := compose.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := compose.OpenRedis(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func port(t *testing.T) string {
	_, p, _ := net.SplitHostPort(systemtest.FreePort(t))
	return p
}

// startCluster runs n masters with cluster mode on spare ports, joined
// with redis-cli --cluster create, and returns their addresses once the
// cluster reports ok (queuetest.Cluster, which the queue's own cluster
// tests use too).
func startCluster(t *testing.T, n int) []string {
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	t.Helper()
	return queuetest.Cluster(t, n)
}

// TestRedisCluster: the core flow (enter, poll, admission, order) and the
// push flow (streams on another instance, positions = ZRANK) run for
// rooms on three different shards of a 3-master Redis Cluster, with two
// server instances (one a separate process) sharing the rooms. The access
// lists, written in one MULTI, and the rate limiter work there too.
func TestRedisCluster(t *testing.T) {
	addrs := startCluster(t, 3)
	seeds := "WR_REDIS_CLUSTER=" + strings.Join(addrs, ",")
	rdb := openTopology(t, seeds)
	ctx := context.Background()

	// One room per master: the hash tag {room} decides the slot.
	owner := map[int64]string{} // slot -> master address
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		for i := s.Start; i <= s.End; i++ {
			owner[int64(i)] = s.Nodes[0].Addr
		}
	}
	var rooms []string
	used := map[string]bool{}
	for i := 0; len(rooms) < 3 && i < 100; i++ {
		room := fmt.Sprintf("sale-%d", i)
		slot, err := rdb.ClusterKeySlot(ctx, "x{"+room+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		if node := owner[slot]; !used[node] {
			used[node] = true
			rooms = append(rooms, room)
		}
	}
	if len(rooms) != 3 {
		t.Fatalf("rooms on distinct masters: %v", rooms)
	}

	base := systemtest.NewEnv(t)
	e := &systemtest.Env{T: t, DBURL: base.DBURL, Redis: rdb, Prefix: queuetest.Prefix(),
		RedisEnv: []string{"REDIS_URL=redis://127.0.0.1:1/0", seeds}}
	roomList := strings.Join(rooms, ",")
	a := e.Start(map[string]string{"WR_ROOMS": roomList, "WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b, _ := e.StartChild("1024", "WR_ROOMS="+roomList, "WR_ADMIT_INTERVAL=20ms", "WR_TARGET_ACTIVE=0", "WR_RATE_LIMITS=on")

	const perRoom = 4
	type waiter struct {
		id, token string
		s         *systemtest.SSEStream
	}
	waiters := map[string][]waiter{}
	for r, room := range rooms {
		for i := range perRoom {
			n := 1 + r*perRoom + i
			tok := a.Enter(systemtest.User(n), room).Str("queueToken")
			s := systemtest.OpenSSE(t, b, room, tok) // pushed by the other instance
			if _, m := s.Next(t); m.Position != int64(i+1) {
				t.Fatalf("%s user%d first pushed position %d", room, n, m.Position)
			}
			if p := a.Position(room, tok); p.Num("position") != int64(i+1) {
				t.Fatalf("%s user%d polled %s", room, n, p.Raw)
			}
			waiters[room] = append(waiters[room], waiter{strconv.Itoa(n), tok, s})
		}
	}
	for _, room := range rooms {
		a.SetTarget(room, 2)
	}
	entries := map[string][]string{}
	for _, room := range rooms {
		for i, w := range waiters[room] {
			if i < 2 {
				entries[room] = append(entries[room], w.s.Until(t, "READY", systemtest.IsReady).EntryToken)
				continue
			}
			want := int64(i - 1)
			w.s.Until(t, "position "+strconv.FormatInt(want, 10), func(_ string, m systemtest.StreamMsg) bool { return m.Position == want })
			if got := systemtest.Zrank(t, e, room, w.id); got != want {
				t.Fatalf("%s user%s: pushed %d, ZRANK+1 %d", room, w.id, want, got)
			}
		}
	}

	// Orders free the slots (a finished order releases it): the next two
	// of each room are admitted.
	for _, room := range rooms {
		for i, entry := range entries[room] {
			if o := a.Order(waiters[room][i].token, entry, 1, 1); o.Status != 201 {
				t.Fatalf("%s order: %d %s", room, o.Status, o.Raw)
			}
		}
		for _, w := range waiters[room][2:] {
			w.s.Until(t, "READY", systemtest.IsReady)
		}
	}

	// The access lists are one MULTI over keys of one slot; the limiter's
	// scripts run on their keys' nodes (b has limits on).
	if r := systemtest.Do(t, "PUT", a.Admin+"/admin/access", systemtest.TestAdminToken, map[string]any{"deny": []string{"10.9.8.7"}, "allow": []string{"127.0.0.9"}}); r.Status != 200 {
		t.Fatalf("PUT access on a cluster: %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "POST", b.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(50), "password": systemtest.TestPassword}); r.Status != 200 {
		t.Fatalf("login through the limiter on a cluster: %d %s", r.Status, r.Raw)
	}
	// Enter's two limits (address, user) are keys of different slots:
	// decided by one script each, in one round trip.
	b.Enter(systemtest.User(51), rooms[0])
	if r := systemtest.Do(t, "GET", b.Admin+"/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz on a cluster: %d %s", r.Status, r.Raw)
	}
}

// TestSentinelFailover: one master, one replica, one sentinel. Users wait
// with open streams; the master is killed (SIGKILL) and the sentinel
// promotes the replica. The server follows the new master without a
// restart: nobody lost their place, enter and admission work again, and the
// streams receive the admissions made after the failover.
func TestSentinelFailover(t *testing.T) {
	// Its own Redis processes on ports of its own, and no process-wide
	// state: it mostly waits for the sentinel (INFO periods, the
	// failover), so it waits beside the other long ones.
	systemtest.Parallel(t)
	mport, rport, sport := port(t), port(t), port(t)
	master := systemtest.StartRedis(t, t.TempDir(), mport)
	systemtest.StartRedis(t, t.TempDir(), rport, "--replicaof", "127.0.0.1", mport)
	// The sentinel learns the replicas from the master's INFO when it
	// connects, then only every 10 s: start it once the master lists the
	// replica online, so that its first INFO has it.
	mc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + mport})
	t.Cleanup(func() { mc.Close() })
	systemtest.WaitFor(t, "the replica online at the master", func() bool {
		info, err := mc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "state=online")
	})
	sdir := t.TempDir()
	conf := filepath.Join(sdir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(
		"port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor wr 127.0.0.1 %s 1\n"+
			"sentinel down-after-milliseconds wr 500\nsentinel failover-timeout wr 5000\n", sport, sdir, mport)), 0o600); err != nil {
		t.Fatal(err)
	}
	systemtest.StartProc(t, sdir, sport, conf, "--sentinel")
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: "127.0.0.1:" + sport})
	t.Cleanup(func() { sentinel.Close() })
	// Within one more INFO period, should the first have missed it.
	systemtest.WaitWithin(t, 25*time.Second, "the sentinel to see the replica", func() bool {
		r, err := sentinel.Replicas(context.Background(), "wr").Result()
		return err == nil && len(r) == 1 && r[0]["flags"] == "slave"
	})

	rdb := openTopology(t, "WR_REDIS_SENTINELS=127.0.0.1:"+sport, "WR_REDIS_MASTER=wr")
	base := systemtest.NewEnv(t)
	e := &systemtest.Env{T: t, DBURL: base.DBURL, Redis: rdb, Prefix: queuetest.Prefix()}
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	const users = 6
	streams := make([]*systemtest.SSEStream, users)
	tokens := make([]string, users)
	for i := range users {
		tokens[i] = in.Enter(systemtest.User(i+1), "default").Str("queueToken")
		streams[i] = systemtest.OpenSSE(t, in, "default", tokens[i])
		if _, m := streams[i].Next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
	}
	// Every write has reached the replica before the crash (replication is
	// asynchronous: what a master never shipped is lost with it).
	systemtest.WaitFor(t, "the replica to acknowledge every write", func() bool {
		n, err := rdb.Do(context.Background(), "WAIT", 1, 500).Int64()
		return err == nil && n == 1
	})

	master.Kill()
	// The sentinel's own pace: down after 500 ms, then a failover; one
	// that does not complete (a replica slow to answer on a loaded
	// machine) is tried again only after twice failover-timeout (10 s),
	// longer than WaitFor's 10 s.
	systemtest.WaitWithin(t, 30*time.Second, "the sentinel to promote the replica", func() bool {
		addr, err := sentinel.GetMasterAddrByName(context.Background(), "wr").Result()
		return err == nil && len(addr) == 2 && addr[1] == rport
	})
	systemtest.WaitFor(t, "the server to reach the new master", func() bool {
		return systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil).Status == 200
	})
	var late systemtest.Response
	systemtest.WaitFor(t, "enter on the new master", func() bool {
		late = systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", in.Login(systemtest.User(40)), nil)
		return late.Status == 200
	})
	if late.Num("position") != users+1 {
		t.Fatalf("after the failover a newcomer is at %s, want %d (places kept)", late.Raw, users+1)
	}
	for i := range users {
		if got := systemtest.Zrank(t, e, "default", strconv.Itoa(i+1)); got != int64(i+1) {
			t.Fatalf("user%d at %d after the failover, want %d", i+1, got, i+1)
		}
	}
	in.SetTarget("default", 2)
	for i := range users {
		if i < 2 {
			m := streams[i].Until(t, "READY", systemtest.IsReady)
			if o := in.Order(tokens[i], m.EntryToken, 1, 1); o.Status != 201 {
				t.Fatalf("order after the failover: %d %s", o.Status, o.Raw)
			}
			continue
		}
		want := int64(i - 1)
		streams[i].Until(t, "position "+strconv.FormatInt(want, 10), func(_ string, m systemtest.StreamMsg) bool { return m.Position == want })
	}
}
