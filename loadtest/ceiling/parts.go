package ceiling

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/queue"
)

// partsStep is one step of --parts: fresh arrivals before a scheduled
// opening into a room whose pre-queue has Parts parts, on a Redis Cluster.
type partsStep struct {
	Parts   int     `json:"parts"`
	Conns   int     `json:"conns"`
	Enters  int64   `json:"enters"`
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"entersPerSecond"`
	Errors  int64   `json:"errors"`
	// Masters: each master's Redis CPU over the step, and its share of
	// the cluster's (every master's) Redis CPU.
	Masters []masterCPU `json:"masters"`
	// Busiest is the largest share.
	Busiest float64 `json:"busiestShare"`
}

// masterCPU is one master's Redis CPU over a step.
type masterCPU struct {
	Addr  string  `json:"addr"`
	Core  float64 `json:"redisCore"` // CPU seconds ÷ wall seconds
	Share float64 `json:"share"`     // of the cluster's Redis CPU
	// Holds names what of the room lives there: "room", "part 0", …
	Holds []string `json:"holds,omitempty"`
}

// runParts drives the sharded enter directly on the cluster of
// cfg.cluster: for each S of cfg.parts a fresh random room with
// prequeueParts S opening in an hour, cfg.conns' largest number of
// connections each sending pipelines of cfg.pipeline fresh arrivals
// straight to their parts (queue.EntersParts; S = 1: the room's enter),
// for cfg.dur; each master's INFO cpu before and after.
func runParts(ctx context.Context, cfg ceilingConfig, rep *ceilingReport) error {
	conns := slices.Max(cfg.conns)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(cfg.cluster, ","), PoolSize: conns + 4})
	defer cc.Close()
	if err := cc.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ceiling: --cluster: %w", err)
	}
	addrs, err := clusterMasters(ctx, cc)
	if err != nil {
		return fmt.Errorf("ceiling: --cluster: %w", err)
	}
	stats := make([]*measure.RedisStats, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		defer c.Close()
		stats[i] = &measure.RedisStats{Client: c}
	}
	owner, err := keyOwner(ctx, cc)
	if err != nil {
		return fmt.Errorf("ceiling: --cluster: %w", err)
	}
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	q := queue.New(cc, queue.Options{Prefix: "cap" + hex.EncodeToString(salt[:]) + ":"})
	rep.Redis = "cluster " + strings.Join(addrs, ",")
	for _, s := range cfg.parts {
		if ctx.Err() != nil {
			break
		}
		room := "hot" + strconv.Itoa(s)
		now, err := cc.Time(ctx).Result()
		if err != nil {
			return fmt.Errorf("ceiling: %w", err)
		}
		at, m := now.Add(time.Hour), queue.MethodRandom
		if _, err := q.UpdateRoom(ctx, room, queue.RoomUpdate{Method: &m, OpensAt: &at, PrequeueParts: &s}, true,
			queue.RoomConfig{Target: 0, EntryTTL: time.Hour}); err != nil {
			return fmt.Errorf("ceiling: room %s: %w", room, err)
		}
		holds := roomHolds(owner, room, s)
		fmt.Fprintf(os.Stderr, "ceiling: %d parts, %d connections × pipelines of %d, %v\n", s, conns, cfg.pipeline, cfg.dur)
		st, err := partsStepRun(ctx, q, stats, room, s, conns, cfg)
		if err != nil {
			return err
		}
		for i := range st.Masters {
			st.Masters[i].Addr = addrs[i]
			st.Masters[i].Holds = holds[addrs[i]]
		}
		rep.Parts = append(rep.Parts, st)
		if _, err := q.DeleteRoom(context.WithoutCancel(ctx), room, true); err != nil {
			return fmt.Errorf("ceiling: delete %s: %w", room, err)
		}
		if !pace.Sleep(ctx, time.Second) { // the freeing of the sets falls outside the next step
			return ctx.Err()
		}
	}
	return nil
}

// clusterMasters are the addresses of the cluster's masters, sorted.
func clusterMasters(ctx context.Context, cc *redis.ClusterClient) ([]string, error) {
	var mu sync.Mutex
	var addrs []string
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		addrs = append(addrs, m.Options().Addr)
		mu.Unlock()
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Sort(addrs)
	return addrs, nil
}

// keyOwner is a function giving the address of the master that holds a
// key ("" when unknown), by the cluster's slots as they are now.
func keyOwner(ctx context.Context, cc *redis.ClusterClient) (func(key string) string, error) {
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	return func(key string) string {
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return ""
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				return s.Nodes[0].Addr
			}
		}
		return ""
	}, nil
}

// roomHolds is, by master address, what of room (sharded into parts
// parts) each master holds: "room", "part 0", ….
func roomHolds(owner func(string) string, room string, parts int) map[string][]string {
	holds := map[string][]string{owner("x{" + room + "}"): {"room"}}
	if parts > 1 {
		for p := range parts {
			a := owner("x{" + room + "~" + strconv.Itoa(p) + "}")
			holds[a] = append(holds[a], "part "+strconv.Itoa(p))
		}
	}
	return holds
}

func partsStepRun(ctx context.Context, q *queue.Queue, stats []*measure.RedisStats, room string, parts, conns int, cfg ceilingConfig) (partsStep, error) {
	read := func() ([]float64, error) {
		out := make([]float64, len(stats))
		for i, s := range stats {
			c, err := s.Read(ctx)
			if err != nil {
				return nil, err
			}
			out[i] = c.CPU
		}
		return out, nil
	}
	before, err := read()
	if err != nil {
		return partsStep{}, err
	}
	run, cancel := context.WithTimeout(ctx, cfg.dur)
	defer cancel()
	start := time.Now()
	n, errs := drive(run, conns, cfg.pipeline, func(ctx context.Context, ids []string) ([]error, error) {
		if parts > 1 {
			_, es, err := q.EntersParts(ctx, room, parts, ids...)
			return es, err
		}
		_, es, err := q.Enters(ctx, room, ids...)
		return es, err
	})
	secs := time.Since(start).Seconds()
	after, err := read()
	if err != nil {
		return partsStep{}, err
	}
	st := partsStep{Parts: parts, Conns: conns, Enters: n, Seconds: secs, Rate: float64(n) / secs, Errors: errs}
	total := 0.0
	for i := range stats {
		total += after[i] - before[i]
	}
	for i := range stats {
		d := after[i] - before[i]
		m := masterCPU{Core: d / secs}
		if total > 0 {
			m.Share = d / total
		}
		st.Busiest = max(st.Busiest, m.Share)
		st.Masters = append(st.Masters, m)
	}
	return st, nil
}

func (r *ceilingReport) printParts(w io.Writer) {
	fmt.Fprintf(w, "\nsharded pre-queue (--parts): fresh arrivals before a random room's opening, pipelines of %d straight to the parts (1 part: the room's enter), on %s\n", r.Pipeline, r.Redis)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parts\tconns\tenters\tseconds\tenters/s\terrors\tper master: Redis core, share of the cluster's Redis CPU (what of the room it holds)\tbusiest")
	for _, s := range r.Parts {
		var ms []string
		for _, m := range s.Masters {
			ms = append(ms, fmt.Sprintf("%s %.2f %.0f%% (%s)", m.Addr, m.Core, m.Share*100, strings.Join(m.Holds, ", ")))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%s\t%d\t%s\t%.0f%%\n", s.Parts, s.Conns, report.Commas(int(s.Enters)), s.Seconds,
			report.Commas(int(s.Rate+0.5)), s.Errors, strings.Join(ms, "; "), s.Busiest*100)
	}
	tw.Flush()
}
