package token

import (
	"hash/maphash"
	"strings"
	"sync"
)

// verified caches verified claims by the token's exact bytes. It is
// sharded (no lock shared by all requests) and bounded: a shard that
// reaches its size is emptied, so memory stays small under any load, and
// expired entries go with it.
type verified struct {
	shards [64]verifiedShard
}

type verifiedShard struct {
	mu sync.RWMutex
	m  map[string]*Claims
}

// verifiedShardSize bounds each shard: 64 × 4096 tokens in all.
const verifiedShardSize = 4096

var verifiedSeed = maphash.MakeSeed()

func (v *verified) shard(raw string) *verifiedShard {
	return &v.shards[maphash.String(verifiedSeed, raw)%uint64(len(v.shards))]
}

func (v *verified) get(raw string) *Claims {
	sh := v.shard(raw)
	sh.mu.RLock()
	c := sh.m[raw]
	sh.mu.RUnlock()
	return c
}

func (v *verified) put(raw string, c *Claims) {
	sh := v.shard(raw)
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= verifiedShardSize {
		sh.m = make(map[string]*Claims, 64)
	}
	sh.m[strings.Clone(raw)] = c
	sh.mu.Unlock()
}
