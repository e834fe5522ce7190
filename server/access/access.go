package access

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
)

// RefreshEvery is how often Run reads the lists from Redis: a change made
// on one instance is in force on every instance within this time.
const RefreshEvery = time.Second

// Snapshot is the three lists at one moment. It is never modified.
type Snapshot struct {
	Deny, Allow, Bypass List
}

// Lists are the access lists in Redis and their last copy in memory.
type Lists struct {
	rdb  redis.UniversalClient
	keys keys
	cur  loop.Latest[Snapshot]
}

// New returns the lists stored under prefix (the server's key prefix).
// It does no I/O: the lists are empty until the first Load.
func New(rdb redis.UniversalClient, prefix string) *Lists {
	return &Lists{rdb: rdb, keys: newKeys(prefix)}
}

// Current returns the lists last loaded (empty ones before the first load;
// never nil).
func (l *Lists) Current() *Snapshot {
	if s := l.cur.Get(); s != nil {
		return s
	}
	return &Snapshot{}
}

// Load reads the lists from Redis into memory. A read never replaces one
// that began after it (loop.Latest): the periodic read under way when the
// lists were replaced would otherwise put the old lists back for a second.
func (l *Lists) Load(ctx context.Context) error {
	read := l.cur.Begin()
	var cmds [3]*redis.StringSliceCmd
	named := l.keys.named()
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range named {
			cmds[i] = p.SMembers(ctx, n.key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var s Snapshot
	for i, dst := range []*List{&s.Deny, &s.Allow, &s.Bypass} {
		if *dst, err = Parse(cmds[i].Val()); err != nil {
			return err
		}
	}
	l.cur.Put(read, &s)
	return nil
}

// Run loads the lists at once and then every RefreshEvery until ctx is
// done; a failed load keeps the last lists in force.
func (l *Lists) Run(ctx context.Context) {
	loop.NowAndEvery(ctx, RefreshEvery, func(ctx context.Context) { _ = l.Load(ctx) })
}

// Update replaces the lists that are not nil; nil ones stay as they are.
type Update struct {
	Deny, Allow, Bypass *[]string
}

// Replace validates every list of u, then replaces them in Redis in one
// transaction: all or nothing. An invalid entry is an *EntryError naming its
// list, and nothing is written. The copy in memory changes at the next Load.
func (l *Lists) Replace(ctx context.Context, u Update) error {
	named := l.keys.named()
	lists := [3]*[]string{u.Deny, u.Allow, u.Bypass}
	for i, entries := range lists {
		if entries == nil {
			continue
		}
		if _, err := Parse(*entries); err != nil {
			var ee *EntryError
			if errors.As(err, &ee) {
				ee.List = named[i].name
			}
			return err
		}
	}
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, entries := range lists {
			if entries == nil {
				continue
			}
			p.Del(ctx, named[i].key)
			for _, e := range *entries {
				if e = strings.TrimSpace(e); e != "" {
					p.SAdd(ctx, named[i].key, e)
				}
			}
		}
		return nil
	})
	return err
}
