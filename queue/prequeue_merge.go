package queue

import (
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The opening of a sharded pre-queue (docs/sharded-prequeue.md) merges
// the room's parts into its one queue, in slices of openSlice users:
//
//   - seal: each part stops taking arrivals and is counted (pseal.lua);
//     the room records the seed, the method and the counts (mbegin.lua).
//   - shuffle (method random): each part is shuffled with PartSeed(seed,
//     p), as open.lua shuffles a room (pshuffle.lua).
//   - for each slice: take from each part the users the slice needs
//     (ptake.lua, read-only), append them to the room's queue with fresh
//     tickets (mappend.lua, which records the slice number and the parts'
//     cursors in the same step), then commit: remove them from the parts
//     (pcommit.lua).
//   - finish: the room's own pre-queue (arrivals after the seal) follows
//     in arrival order, and the opening is recorded (mfinish.lua).
//
// Every step is idempotent by the recorded slice number and cursors, so
// any number of instances may run it at once, and an instance that dies
// between two steps leaves the next one to whoever runs next. A user is
// in their part until their slice is committed and in the room from the
// moment it is appended, so a status read (room first, then the part,
// then the room again: partStatus) never finds them nowhere.
//
// The merged order (method random) is a uniformly random permutation of
// everyone sealed: each part is uniformly shuffled, and the parts are
// interleaved by a uniformly random sequence of part indices (Interleave).
// ShuffleParts rebuilds it from the recorded seed and the users.

// PartSeed is the seed part p of a sharded opening is shuffled with,
// derived from the opening's recorded seed: hex(sha1(seed ":part:" p)).
func PartSeed(seed string, p int) string {
	h := sha1.Sum([]byte(seed + ":part:" + strconv.Itoa(p)))
	return hex.EncodeToString(h[:])
}

// Interleave is the sequence of part indices of a sharded random opening:
// counts[p] copies of p, in a uniformly random order drawn from seed (a
// Fisher–Yates shuffle driven by ChaCha8 keyed with sha256("interleave:"
// seed), bounded draws by rejection, so without bias). The k-th user of
// the merged order is the next user of the part the k-th index names.
func Interleave(seed string, counts []int) []uint8 {
	n := 0
	for _, c := range counts {
		n += c
	}
	seq := make([]uint8, 0, n)
	for p, c := range counts {
		for range c {
			seq = append(seq, uint8(p))
		}
	}
	src := rand.NewChaCha8(sha256.Sum256([]byte("interleave:" + seed)))
	for i := n - 1; i > 0; i-- {
		j := uniform(src, uint64(i+1))
		seq[i], seq[j] = seq[j], seq[i]
	}
	return seq
}

// uniform is a draw from 0 … n−1 without modulo bias.
func uniform(src *rand.ChaCha8, n uint64) uint64 {
	threshold := -n % n
	for {
		if r := src.Uint64(); r >= threshold {
			return r % n
		}
	}
}

// ShuffleParts rebuilds the order of a sharded random opening from its
// recorded seed, its number of parts and the users it shuffled (those the
// parts held when sealed, in any order): each user's part is PartOf, each
// part is Shuffle(PartSeed(seed, p)), and the parts are interleaved by
// Interleave(seed, their sizes). Users who left before their slice moved
// are passed over by the opening; the others keep this order.
func ShuffleParts(seed string, parts int, users []string) []string {
	parts = min(max(parts, 1), MaxPrequeueParts)
	by := make([][]string, parts)
	for _, u := range users {
		p := PartOf(u, parts)
		by[p] = append(by[p], u)
	}
	counts := make([]int, parts)
	for p := range by {
		by[p] = Shuffle(PartSeed(seed, p), by[p])
		counts[p] = len(by[p])
	}
	out := make([]string, 0, len(users))
	next := make([]int, parts)
	for _, p := range Interleave(seed, counts) {
		out = append(out, by[p][next[p]])
		next[p]++
	}
	return out
}

// mergeRecord is the room's record of a merge (mbegin.lua).
type mergeRecord struct {
	state, seed, method, tag string
	counts, cursors          []int
	n, slice                 int
}

func csvInts(s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func intsCSV(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func sum(v []int) int {
	s := 0
	for _, n := range v {
		s += n
	}
	return s
}

// interleaves caches one merge's Interleave per room: every slice of an
// opening reads a window of it.
type interleaves struct {
	mu sync.Mutex
	m  map[string]cachedInterleave
}

type cachedInterleave struct {
	key string
	seq []uint8
}

func (c *interleaves) get(room, seed string, counts []int) []uint8 {
	key := seed + "/" + intsCSV(counts)
	c.mu.Lock()
	if e, ok := c.m[room]; ok && e.key == key {
		c.mu.Unlock()
		return e.seq
	}
	c.mu.Unlock()
	seq := Interleave(seed, counts)
	c.mu.Lock()
	if c.m == nil || len(c.m) > 64 {
		c.m = map[string]cachedInterleave{}
	}
	c.m[room] = cachedInterleave{key, seq}
	c.mu.Unlock()
	return seq
}

// Merge runs up to openRunsPerCall steps of the opening of room's sharded
// pre-queue, armed (the room's prequeueParts is above 1 and an opening was
// scheduled) and due (the admission run said so): seal, shuffle, then
// take/append/commit by slices, then finish. seed is used only if this
// call begins the merge; later calls use the recorded one. It reports
// like Open: Done false while more remains; Moved, Seed and Shuffled only
// from the call that finished the opening. Safe to run from any number of
// instances at once, and to stop at any point (see above).
func (q *Queue) Merge(ctx context.Context, room, seed string) (OpenResult, error) {
	if !ValidRoom(room) {
		return OpenResult{}, ErrRoomNotFound
	}
	for range q.openRuns {
		res, err := q.mergeStep(ctx, room, seed, -1)
		if err != nil || res.Done {
			return res, err
		}
	}
	return OpenResult{Room: room}, nil
}

// Merge phases a step may stop after (tests: a crash between them).
const (
	stopAfterTake   = 1
	stopAfterAppend = 2
	stopAfterSeal   = 3
)

// mergeStep does the next step of room's merge; stop ≥ 0 ends a slice's
// step early (after its take or its append), as an instance that died
// there would.
func (q *Queue) mergeStep(ctx context.Context, room, seed string, stop int) (OpenResult, error) {
	k := q.keys(room)
	rec, err := q.mergeRecord(ctx, room)
	if err != nil {
		return OpenResult{}, err
	}
	switch rec.state {
	case "":
		return OpenResult{Room: room, Done: true}, nil
	case "armed":
		if rec, err = q.mergeBegin(ctx, room, seed, stop); err != nil || rec.state != "moving" {
			return OpenResult{Room: room, Done: true}, err
		}
	}
	parts := len(rec.counts)
	if rec.method == string(MethodRandom) {
		for p := range parts {
			pk := q.partKeys(room, p)
			left, err := partShuffleScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state}, PartSeed(rec.seed, p), q.openSlice).Int64()
			if err != nil {
				return OpenResult{}, unavailable("merge shuffle", err)
			}
			if left != 0 {
				// More to shuffle (left > 0), or a stale caller (-1).
				return OpenResult{Room: room}, nil
			}
		}
	}
	if sum(rec.cursors) < rec.n {
		return OpenResult{Room: room}, q.mergeSlice(ctx, room, rec, stop)
	}
	for p := range parts {
		pk := q.partKeys(room, p)
		if err := partCommitScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state, pk.left}, rec.counts[p], 1, rec.tag).Err(); err != nil {
			return OpenResult{}, unavailable("merge commit", err)
		}
	}
	v, err := mergeFinishScript.Run(ctx, q.rdb, []string{k.seq, k.queue, k.prequeue, k.stats, k.seen, q.mergeKey(room)},
		rec.seed, q.openSlice, q.grace.Milliseconds(), k.channel, room, parts).Result()
	if err != nil {
		return OpenResult{}, unavailable("merge finish", err)
	}
	r := asReply("mfinish", v)
	res := OpenResult{Room: room, Moved: int(r.int(0)), Shuffled: int(r.int(1)), Seed: r.str(2), Waiting: r.int(3), Done: r.int(5) == 1}
	if res.Moved < 0 {
		res.Moved = 0 // a stale caller: another instance finished it
	}
	if res.Done {
		q.routes.forget(room)
	}
	return res, r.err
}

// mergeRecord reads room's merge record.
func (q *Queue) mergeRecord(ctx context.Context, room string) (mergeRecord, error) {
	v, err := q.rdb.HMGet(ctx, q.mergeKey(room), "state", "seed", "method", "tag", "counts", "n", "slice", "cursors").Result()
	if err != nil {
		return mergeRecord{}, unavailable("merge record", err)
	}
	return parseRecord(v), nil
}

func parseRecord(v []any) mergeRecord {
	str := func(i int) string {
		if i < len(v) {
			switch x := v[i].(type) {
			case string:
				return x
			case int64:
				return strconv.FormatInt(x, 10)
			}
		}
		return ""
	}
	rec := mergeRecord{state: str(0), seed: str(1), method: str(2), tag: str(3), counts: csvInts(str(4)), cursors: csvInts(str(7))}
	rec.n, _ = strconv.Atoi(str(5))
	rec.slice, _ = strconv.Atoi(str(6))
	if len(rec.cursors) != len(rec.counts) {
		rec.cursors = make([]int, len(rec.counts))
	}
	return rec
}

// mergeBegin seals and counts every part, then records the merge.
func (q *Queue) mergeBegin(ctx context.Context, room, seed string, stop int) (mergeRecord, error) {
	k := q.keys(room)
	c, err := q.rdb.HMGet(ctx, k.cfg, "opens_at", "prequeue_parts").Result()
	if err != nil {
		return mergeRecord{}, unavailable("merge begin", err)
	}
	tag, _ := c[0].(string)
	if tag == "" {
		tag = "none"
	}
	ps, _ := c[1].(string)
	parts, _ := strconv.Atoi(ps)
	parts = min(max(parts, 1), MaxPrequeueParts)
	counts := make([]int, parts)
	for p := range parts {
		pk := q.partKeys(room, p)
		n, err := partSealScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state}, tag).Int64()
		if err != nil {
			return mergeRecord{}, unavailable("merge seal", err)
		}
		counts[p] = int(n)
	}
	if stop == stopAfterSeal {
		return mergeRecord{}, nil
	}
	v, err := mergeBeginScript.Run(ctx, q.rdb, []string{k.cfg, k.stats, q.mergeKey(room), k.prequeue},
		seed, tag, intsCSV(counts), sum(counts)).Slice()
	if err != nil {
		return mergeRecord{}, unavailable("merge begin", err)
	}
	rec := parseRecord(v)
	if rec.state == "empty" {
		// Nobody to merge: the parts were sealed for nothing; let them
		// take arrivals again.
		for p := range parts {
			pk := q.partKeys(room, p)
			if err := partCommitScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state, pk.left}, 0, 1, tag).Err(); err != nil {
				return mergeRecord{}, unavailable("merge commit", err)
			}
		}
	}
	return rec, nil
}

// taken is one user a slice took from a part.
type taken struct {
	user  string
	score float64
	left  bool
	part  int
}

// mergeSlice takes, appends and commits the next slice of rec.
func (q *Queue) mergeSlice(ctx context.Context, room string, rec mergeRecord, stop int) error {
	want, window, ok := q.sliceWant(room, rec)
	if !ok {
		return nil
	}
	got, ok, err := q.sliceTake(ctx, room, rec, want)
	if err != nil || !ok {
		return err
	}
	order, used := sliceOrder(got, window, q.openSlice)
	if stop == stopAfterTake {
		return nil
	}
	next := slices.Clone(rec.cursors)
	for p := range next {
		next[p] += used[p]
	}
	if err := q.sliceAppend(ctx, room, rec, next, order); err != nil {
		return err
	}
	if stop == stopAfterAppend {
		return nil
	}
	// Commit what the room now records (another instance may have
	// appended this slice first, with the same cursors).
	return q.mergeCommit(ctx, room, rec.tag, next)
}

// sliceWant is how many users each part gives the next slice of rec and,
// for method random, the slice's window of the interleave (nil for fifo).
// ok is false when the cached interleave does not fit rec (a stale record).
func (q *Queue) sliceWant(room string, rec mergeRecord) (want []int, window []uint8, ok bool) {
	parts := len(rec.counts)
	pos := sum(rec.cursors)
	m := q.openSlice
	want = make([]int, parts)
	if rec.method == string(MethodRandom) {
		seq := q.interleaves.get(room, rec.seed, rec.counts)
		if len(seq) != rec.n {
			return nil, nil, false
		}
		window = seq[pos:min(pos+m, rec.n)]
		for _, p := range window {
			want[int(p)]++
		}
		return want, window, true
	}
	for p := range parts {
		want[p] = min(m, rec.counts[p]-rec.cursors[p])
	}
	return want, nil, true
}

// sliceTake reads from each part, from its cursor, the users want says it
// gives (ptake.lua, read-only). ok is false for a stale caller or a part
// that changed under a stale record: the next step reads the record again.
func (q *Queue) sliceTake(ctx context.Context, room string, rec mergeRecord, want []int) (got [][]taken, ok bool, err error) {
	got = make([][]taken, len(want))
	for p := range want {
		if want[p] <= 0 {
			continue
		}
		pk := q.partKeys(room, p)
		v, err := partTakeScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state, pk.left}, rec.cursors[p], want[p]).Slice()
		if err != nil {
			return nil, false, unavailable("merge take", err)
		}
		r := asReply("ptake", v)
		if r.int(0) != 1 || r.err != nil {
			return nil, false, r.err // a stale caller: the next step reads the record again
		}
		for i := 1; i+2 < len(v); i += 3 {
			got[p] = append(got[p], taken{user: r.str(i), score: r.float(i + 1), left: r.int(i+2) == 1, part: p})
		}
		if r.err != nil {
			return nil, false, r.err
		}
		if len(got[p]) != want[p] {
			return nil, false, nil // the part changed under a stale record
		}
	}
	return got, true, nil
}

// sliceOrder is the slice's users in merged order, and how many it used
// of each part: the window's part indices in turn (method random), or
// (fifo) the parts' heads in arrival time (µs, each part's Redis clock),
// ties by part, until the slice holds m users.
func sliceOrder(got [][]taken, window []uint8, m int) (order []taken, used []int) {
	used = make([]int, len(got))
	if window != nil {
		for _, p := range window {
			order = append(order, got[p][used[p]])
			used[p]++
		}
		return order, used
	}
	for len(order) < m {
		best := -1
		for p := range got {
			if used[p] >= len(got[p]) {
				continue
			}
			if best < 0 || cmp.Compare(got[p][used[p]].score, got[best][used[best]].score) < 0 {
				best = p
			}
		}
		if best < 0 {
			break
		}
		order = append(order, got[best][used[best]])
		used[best]++
	}
	return order, used
}

// sliceAppend appends the slice's users who are still there to the room's
// queue with fresh tickets, recording the slice number and the parts' next
// cursors in the same step (mappend.lua).
func (q *Queue) sliceAppend(ctx context.Context, room string, rec mergeRecord, next []int, order []taken) error {
	k := q.keys(room)
	args := []any{rec.seed, rec.slice, intsCSV(next), q.grace.Milliseconds(), k.channel, room}
	for _, t := range order {
		if !t.left {
			args = append(args, t.user)
		}
	}
	if err := mergeAppendScript.Run(ctx, q.rdb, []string{k.seq, k.queue, k.seen, k.tokens, k.active, q.mergeKey(room), k.stats, k.cfg}, args...).Err(); err != nil {
		return unavailable("merge append", err)
	}
	return nil
}

// mergeCommit removes from each part the users up to its cursor.
func (q *Queue) mergeCommit(ctx context.Context, room, tag string, cursors []int) error {
	for i, c := range cursors {
		pk := q.partKeys(room, i)
		if err := partCommitScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state, pk.left}, c, 0, tag).Err(); err != nil {
			return unavailable("merge commit", err)
		}
	}
	return nil
}
