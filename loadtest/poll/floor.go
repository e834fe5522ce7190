package poll

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
)

// The floor is the second yardstick of --limit: the plain handler, making
// one script call on the server's Redis per request before it answers —
// the least an enter can cost, as every enter makes one. The script is
// trivial on purpose: ZADD NX of a new member (the request's number) on a
// key of the floor's own, then ZRANK of it, as an enter takes a ticket and
// reads its place. It is go-redis's EVALSHA (redis.Script.Run), with the
// client's default pool, as the server's own client has it; nothing is
// batched. What an enter costs beyond the floor is then the enter's own:
// tokens, its script's work, its answer.

// floorLua is the floor's script: KEYS[1] the floor's key, ARGV[1] the
// request's number, both score and member.
const floorLua = `redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[1])
return redis.call('ZRANK', KEYS[1], ARGV[1])`

var floorScript = redis.NewScript(floorLua)

// floorKeyPrefix starts every floor key, so that one left behind by a
// killed run is recognised as the load tool's.
const floorKeyPrefix = "loadtest:floor:"

// newFloorKey is a key of its own for one run's floor.
func newFloorKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return floorKeyPrefix + hex.EncodeToString(b[:])
}

// floorArgs are PlainHandlerCmd's arguments that make it the floor.
func floorArgs(redisURL, key string) []string {
	return []string{"-redis", redisURL, "-key", key}
}

// serveFloor serves doc on ln as servePlain does, each request first
// running floorScript on key at redisURL (a 500 when it fails); it returns
// the app's stop, which closes the Redis client too.
func serveFloor(ln net.Listener, doc map[string]any, redisURL, key string) (stop func(), err error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Loaded first, so that every request's call is an EVALSHA.
	if err := floorScript.Load(ctx, rdb).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("floor: load the script: %w", err)
	}
	var n atomic.Int64
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.All("/position", func(c *fiber.Ctx) error {
		id := strconv.FormatInt(n.Add(1), 10)
		if err := floorScript.Run(c.Context(), rdb, []string{key}, id).Err(); err != nil {
			return c.Status(fiber.StatusInternalServerError).SendString(err.Error())
		}
		return c.JSON(doc)
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Listener(ln)
	}()
	return func() {
		_ = app.ShutdownWithTimeout(5 * time.Second)
		<-done
		_ = rdb.Close()
	}, nil
}

// floorMembers is the floor key's cardinality — every request that made
// its call — and deletes the key.
func floorMembers(ctx context.Context, rdb *redis.Client, key string) (int64, error) {
	n, err := rdb.ZCard(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("floor: ZCARD %s: %w", key, err)
	}
	return n, rdb.Del(ctx, key).Err()
}
