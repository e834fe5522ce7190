package compose

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisTopology says which Redis deployment the server talks to. Exactly one
// of three:
//
//   - a single node: REDIS_URL alone (the default);
//   - Sentinel: WR_REDIS_SENTINELS (comma-separated host:port of the
//     sentinels) and WR_REDIS_MASTER (the monitored master's name); the
//     client asks the sentinels for the master and follows a failover;
//   - Cluster: WR_REDIS_CLUSTER (comma-separated host:port seed nodes); the
//     client learns the slot map and follows resharding and failovers.
//
// In all three, REDIS_URL still supplies the username, password, TLS
// (rediss://) and, for a single node or Sentinel, the database number; the
// host in REDIS_URL is ignored when sentinels or cluster seeds are given.
// WR_REDIS_SENTINEL_PASSWORD is the sentinels' own password, if any.
//
// Every key of a room shares the hash tag {room}, so each script runs on one
// slot of a Cluster and rooms spread over the shards. Pushes use classic
// pub/sub (PUBLISH / PSUBSCRIBE): a Cluster forwards every classic message to
// all nodes, so the one pattern subscription per instance — on whichever node
// — hears every room. Sharded pub/sub (SSUBSCRIBE) would need one
// subscription per shard and per room and cannot match a pattern; at a few
// events per room per admission tick the cluster bus carries classic pub/sub
// easily.
type RedisTopology struct {
	Sentinels        []string // WR_REDIS_SENTINELS
	Master           string   // WR_REDIS_MASTER
	SentinelPassword string   // WR_REDIS_SENTINEL_PASSWORD
	Cluster          []string // WR_REDIS_CLUSTER
}

// Kind is "single", "sentinel" or "cluster".
func (t RedisTopology) Kind() string {
	switch {
	case len(t.Cluster) > 0:
		return "cluster"
	case len(t.Sentinels) > 0:
		return "sentinel"
	}
	return "single"
}

// redisTopology reads the topology variables; url is REDIS_URL's value.
func (p *envParser) redisTopology(url string) RedisTopology {
	t := RedisTopology{
		Sentinels:        addrList(p.str("WR_REDIS_SENTINELS", "")),
		Master:           p.str("WR_REDIS_MASTER", ""),
		SentinelPassword: p.getenv("WR_REDIS_SENTINEL_PASSWORD"),
		Cluster:          addrList(p.str("WR_REDIS_CLUSTER", "")),
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		p.fail("REDIS_URL", "(hidden)", "want redis://[user:password@]host:port/db or rediss://…: "+err.Error())
		return t
	}
	for _, v := range [][2]string{{"WR_REDIS_SENTINELS", strings.Join(t.Sentinels, ",")}, {"WR_REDIS_CLUSTER", strings.Join(t.Cluster, ",")}} {
		for _, a := range addrList(v[1]) {
			if i := strings.LastIndexByte(a, ':'); i <= 0 || i == len(a)-1 {
				p.fail(v[0], v[1], "want comma-separated host:port addresses")
				return t
			}
		}
	}
	switch {
	case len(t.Cluster) > 0 && len(t.Sentinels) > 0:
		p.fail("WR_REDIS_CLUSTER", strings.Join(t.Cluster, ","), "set either WR_REDIS_CLUSTER or WR_REDIS_SENTINELS, not both")
	case len(t.Sentinels) > 0 && t.Master == "":
		p.fail("WR_REDIS_MASTER", "", "required with WR_REDIS_SENTINELS: the name the sentinels monitor")
	case len(t.Sentinels) == 0 && t.Master != "":
		p.fail("WR_REDIS_SENTINELS", "", "required with WR_REDIS_MASTER: the sentinels' addresses")
	case len(t.Cluster) > 0 && opt.DB != 0:
		p.fail("REDIS_URL", "(hidden)", "a Redis Cluster has only database 0")
	}
	return t
}

func addrList(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// OpenRedis returns the client of cfg's Redis topology, with bounded
// timeouts: an outage turns into quick 503s, never hung requests. The
// client connects lazily; a Redis that is down at start is retried by the
// admission loop and by requests.
func OpenRedis(cfg Config) (redis.UniversalClient, error) {
	base, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	o := &redis.UniversalOptions{
		Addrs:            []string{base.Addr},
		Username:         base.Username,
		Password:         base.Password,
		DB:               base.DB,
		TLSConfig:        base.TLSConfig,
		DialTimeout:      2 * time.Second,
		ReadTimeout:      time.Second,
		WriteTimeout:     time.Second,
		PoolTimeout:      2 * time.Second,
		PoolSize:         redisPoolSize(),
		SentinelPassword: cfg.Redis.SentinelPassword,
	}
	t := cfg.Redis
	switch t.Kind() {
	case "cluster":
		o.Addrs = t.Cluster
		o.DB = 0
		return redis.NewClusterClient(o.Cluster()), nil
	case "sentinel":
		o.Addrs = t.Sentinels
		o.MasterName = t.Master
		return redis.NewFailoverClient(o.Failover()), nil
	}
	return redis.NewClient(o.Simple()), nil
}

// redisPoolSize is the connection pool per Redis node: go-redis's default,
// 10 per CPU, stated so the descriptor budget below can count it.
func redisPoolSize() int { return 10 * runtime.GOMAXPROCS(0) }

// descriptors is how many descriptors the Redis client may hold: a pool per
// node (a Cluster's node count is not known before it answers, so at least
// three masters and every seed are assumed) plus the pub/sub connection and,
// with Sentinel, the sentinel connections.
func (t RedisTopology) descriptors() int {
	switch t.Kind() {
	case "cluster":
		return redisPoolSize()*max(len(t.Cluster), 3) + 1
	case "sentinel":
		return redisPoolSize() + 2 + len(t.Sentinels)
	}
	return redisPoolSize() + 1
}
