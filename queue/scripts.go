package queue

import (
	"embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

func mustScript(name string) *redis.Script { return redis.NewScript(scriptSource(name)) }

// scriptSource is the source of the embedded script name.
func scriptSource(name string) string {
	src, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("queue: missing embedded script %s: %v", name, err))
	}
	return string(src)
}

var (
	enterScript    = redis.NewScript(noGuard + scriptSource("enter"))
	statusScript   = mustScript("status")
	admitScript    = mustScript("admit")
	consumeScript  = mustScript("consume")
	releaseScript  = mustScript("release")
	restoreScript  = mustScript("restore")
	holdScript     = mustScript("hold")
	leaveScript    = mustScript("leave")
	snapshotScript = mustScript("snapshot")
	grantScript    = mustScript("grant")
	touchScript    = mustScript("touch")
	openScript     = mustScript("open")
	scheduleScript = mustScript("schedule")
	measuredScript = mustScript("measured")
)

// reply is a script's array reply, read with checked conversions: an
// unexpected shape is an error, never a panic.
type reply struct {
	script string
	v      []any
	err    error
}

func asReply(script string, v any) *reply {
	arr, ok := v.([]any)
	if !ok {
		return &reply{script: script, err: fmt.Errorf("queue: %s: reply is %T, want array", script, v)}
	}
	return &reply{script: script, v: arr}
}

func (r *reply) fail(i int, want string) {
	if r.err == nil {
		var got any
		if i < len(r.v) {
			got = r.v[i]
		}
		r.err = fmt.Errorf("queue: %s: reply[%d] = %#v, want %s", r.script, i, got, want)
	}
}

func (r *reply) str(i int) string {
	if r.err != nil {
		return ""
	}
	if i >= len(r.v) {
		r.fail(i, "string")
		return ""
	}
	switch x := r.v[i].(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	r.fail(i, "string")
	return ""
}

func (r *reply) int(i int) int64 {
	if r.err != nil {
		return 0
	}
	if i >= len(r.v) {
		r.fail(i, "integer")
		return 0
	}
	switch x := r.v[i].(type) {
	case int64:
		return x
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err == nil {
			return n
		}
		// Redis replies scores as strings; tickets are integral floats.
		f, ferr := strconv.ParseFloat(x, 64)
		if ferr == nil && f == float64(int64(f)) {
			return int64(f)
		}
	}
	r.fail(i, "integer")
	return 0
}

// optInt reads an optional trailing integer: 0 when the reply is shorter.
func (r *reply) optInt(i int) int64 {
	if i >= len(r.v) {
		return 0
	}
	return r.int(i)
}

func (r *reply) float(i int) float64 {
	s := r.str(i)
	if r.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.fail(i, "number")
		return 0
	}
	return f
}

func (r *reply) strs(i int) []string {
	if r.err != nil {
		return nil
	}
	if i >= len(r.v) {
		r.fail(i, "array")
		return nil
	}
	arr, ok := r.v[i].([]any)
	if !ok {
		r.fail(i, "array")
		return nil
	}
	out := make([]string, len(arr))
	for j, x := range arr {
		s, ok := x.(string)
		if !ok {
			r.fail(i, "array of strings")
			return nil
		}
		out[j] = s
	}
	return out
}

// flow reads a snapshot's ETA figures starting at i (see snapshot.lua):
// admitted, expired, departed, ttlMs (i to i+3), then after paused and
// message active, holds, holdMs, binMs, nbins and the bins. It returns
// them and the index after the bins.
func (r *reply) flow(i int) (Flow, int) {
	f := Flow{Admitted: r.int(i), Expired: r.int(i + 1), Departed: r.int(i + 2),
		EntryTTL: time.Duration(r.int(i+3)) * time.Millisecond,
		Active:   r.int(i + 6), Holds: r.int(i + 7), HoldTime: time.Duration(r.int(i+8)) * time.Millisecond,
		Bin: time.Duration(r.int(i+9)) * time.Millisecond}
	n := int(min(max(r.int(i+10), 0), 1000))
	next := i + 11
	if r.err != nil || next+n > len(r.v) {
		r.fail(next, "the bins")
		return f, len(r.v)
	}
	f.Remaining = make([]int64, n)
	for j := range n {
		f.Remaining[j] = r.int(next + j)
	}
	return f, next + n
}
