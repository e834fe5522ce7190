package queuetest

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster starts a Redis Cluster of n masters of tb's own (redis-server
// --cluster-enabled on free loopback ports, each with its bus port given,
// joined with redis-cli --cluster create, no replicas, no persistence),
// waits until every master reports cluster_state:ok and returns their
// addresses. The servers are killed when tb's test ends. It fails the
// test (never skips it) when redis-server or redis-cli is missing.
func Cluster(tb testing.TB, n int) []string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("queuetest: redis-server is not installed (%v)", err)
	}
	var addrs []string
	for range n {
		var url string
		var errs []string
		for range startTries {
			dir := tb.TempDir()
			bus, err := freeAddr()
			if err != nil {
				tb.Fatal(err)
			}
			_, busPort, _ := net.SplitHostPort(bus)
			url, err = startServer(tb, bin, dir, "--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-port", busPort,
				"--cluster-node-timeout", "2000")
			if err == nil {
				break
			}
			errs = append(errs, err.Error())
		}
		if url == "" {
			tb.Fatalf("queuetest: cluster node did not start:\n%s", strings.Join(errs, "\n"))
		}
		addrs = append(addrs, strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"))
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("queuetest: redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		WaitFor(tb, "cluster_state:ok on "+a, func() bool {
			info, err := c.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		c.Close()
	}
	return addrs
}

// ClusterClient is a client on the cluster of addrs (Cluster), closed
// when tb ends. It waits until every slot is served.
func ClusterClient(tb testing.TB, addrs []string) *redis.ClusterClient {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	tb.Cleanup(func() { c.Close() })
	WaitFor(tb, "the cluster to serve every slot", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }) == nil &&
			c.Set(ctx, "queuetest:probe", 1, time.Second).Err() == nil
	})
	return c
}
