package admin

import (
	"cmp"
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/queue/estimate"
	"waitingroom/queue/history"
	"waitingroom/server/api"
)

// statsDoc is GET /admin/stats: this instance's live figures (its metrics)
// and, per room, what the waiting users see (from Redis, the same from
// every instance).
type statsDoc struct {
	// Streams are the push streams open on this instance, by transport
	// ("sse", "ws"; both always present).
	Streams map[string]int64 `json:"streams"`
	// RateLimited counts this instance's 429s by limit since it started
	// (only limits that refused someone).
	RateLimited map[string]int64 `json:"rateLimited"`
	// PoolAcquireWait: waits for a Postgres connection since the start.
	PoolAcquireWait poolWaitDoc `json:"poolAcquireWait"`
	// Rooms are one page of rooms (by default those with work: see
	// stats); Next is the after of the next page, null on the last.
	Rooms []roomStatsDoc `json:"rooms"`
	Next  *string        `json:"next"`
	// Shop is the origin as this instance's gateway sees it (shop.go);
	// null outside gateway and forward-auth modes.
	Shop *shopDoc `json:"shop"`
}

// poolWaitDoc is waitingroom_db_pool_acquire_wait_seconds so far.
type poolWaitDoc struct {
	Count       uint64  `json:"count"`       // acquires
	MeanSeconds float64 `json:"meanSeconds"` // mean wait per acquire (0: none yet)
}

// roomStatsDoc is what a room's waiting users see.
type roomStatsDoc struct {
	Room    string `json:"room"`
	Waiting int64  `json:"waiting"`
	Paused  bool   `json:"paused"`
	// LongestWaitSeconds is how long the oldest waiting user has waited
	// (since their ticket, to the second); null when nobody waits or it is
	// unknown. LongestWaitAtLeast: they waited before the history started
	// recording, so longer than that.
	LongestWaitSeconds *int64 `json:"longestWaitSeconds"`
	LongestWaitAtLeast bool   `json:"longestWaitAtLeast"`
	// MedianEtaSeconds is the ETA shown to the user in the middle of the
	// queue (position ⌈waiting/2⌉; ETAs grow with the position, so it is
	// the median of those shown); null when nobody waits or the estimate
	// is withheld (MedianEtaKnown false, with EtaWithheld saying why:
	// "halted" paused or closed, "nobody" targetActive 0, "measuring").
	MedianEtaSeconds *int64 `json:"medianEtaSeconds"`
	MedianEtaKnown   bool   `json:"medianEtaKnown"`
	EtaWithheld      string `json:"etaWithheld,omitempty"`
	// Estimate is what the ETA rests on now (null while withheld).
	Estimate *estimateDoc `json:"estimate"`
	// EtaError is how far the ETAs shown to the last in line and to the
	// one in the middle were from the waits that followed, over the last
	// hour of the history (null until one has been judged: see
	// history.ETAErrors).
	EtaError *history.ETAError `json:"etaError"`
}

// estimateDoc is what a room's forecast measured (queue/estimate): the
// mean time a slot is held by a user who orders, the share of admitted
// users who never order, the share of waiting users who leave before
// their turn, and the admission rate it settles at.
type estimateDoc struct {
	HoldSeconds   float64 `json:"holdSeconds"`
	NoShowShare   float64 `json:"noShowShare"`
	DepartShare   float64 `json:"departShare"`
	RatePerSecond float64 `json:"ratePerSecond"`
	// Provisional: the hold or the no-show share is the room's
	// expectation, not yet measured (queue/estimate's Prior).
	Provisional bool `json:"provisional"`
}

// stats answers GET /admin/stats (statsDoc). Its rooms are a page, as
// GET /admin/rooms pages them (limit, default 20 and at most 100; after;
// prefix; busy), but only rooms with work unless busy says otherwise:
// each costs a few reads (its figures, its longest wait, its last hour of
// history), so the call costs its page, not every room. ?room=NAME is
// that one room's, whatever its work. next is the cursor of the next page.
func (a *app) stats(c *fiber.Ctx) error {
	busy := true
	rq, err := roomsQuery(c, statsLimit, statsMaxLimit, &busy)
	if err != nil {
		return err
	}
	d, err := a.metricStats()
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if d.Shop != nil {
		d.Shop.Origin = a.originCheck(ctx)
	}
	var page queue.RoomPage
	if room := c.Query("room"); room != "" {
		if !queue.ValidRoom(room) {
			return api.BadRequest("room must be a room name (1-64 of a-z 0-9 - _)")
		}
		page.Names = []string{room}
	} else if page, err = a.Queue.ListRooms(ctx, rq); err != nil {
		return err
	}
	infos, err := a.Queue.RoomInfos(ctx, page.Names)
	if err != nil {
		return err
	}
	names := make([]string, len(infos))
	for i, r := range infos {
		names[i] = r.Name
	}
	waits, err := a.History.Waits(ctx, names)
	if err != nil {
		return err
	}
	d.Rooms = make([]roomStatsDoc, 0, len(infos))
	for i, r := range infos {
		rs := roomStats(r, waits[i], a.forecast(r.Name))
		if rs.EtaError, err = a.etaError(ctx, r.Name); err != nil {
			return err
		}
		d.Rooms = append(d.Rooms, rs)
	}
	d.Next = next(page)
	return c.JSON(d)
}

// etaError judges the estimates in room's last hour of history (nil:
// none judged yet).
func (a *app) etaError(ctx context.Context, room string) (*history.ETAError, error) {
	pts, err := a.History.Since(ctx, room, time.Now().Add(-time.Hour).UnixMilli())
	if err != nil {
		return nil, err
	}
	if e := history.ETAErrors(pts); e.Count > 0 {
		return &e, nil
	}
	return nil, nil
}

// forecast is room's forecast (unknown when the app has no hub).
func (a *app) forecast(room string) estimate.Forecast {
	if a.Forecast == nil {
		return estimate.Forecast{}
	}
	return a.Forecast(room)
}

// roomStats is a room's roomStatsDoc from its figures, longest wait and
// forecast.
func roomStats(r queue.RoomInfo, w history.Wait, fc estimate.Forecast) roomStatsDoc {
	d := roomStatsDoc{Room: r.Name, Waiting: r.Waiting, Paused: r.Paused}
	if w.Known && w.Waiting > 0 {
		secs := int64(w.Longest.Seconds())
		d.LongestWaitSeconds, d.LongestWaitAtLeast = &secs, w.AtLeast
	}
	if !fc.Known {
		d.EtaWithheld = cmp.Or(fc.Why, estimate.WhyMeasuring)
	} else {
		d.Estimate = &estimateDoc{HoldSeconds: fc.Hold.Seconds(), NoShowShare: fc.NoShow, DepartShare: fc.Depart, RatePerSecond: fc.Rate(),
			Provisional: fc.Provisional}
	}
	if r.Waiting == 0 || r.Paused || r.Method == queue.MethodReject {
		return d
	}
	if secs, ok := fc.ETA((r.Waiting + 1) / 2); ok {
		d.MedianEtaSeconds, d.MedianEtaKnown = &secs, true
	}
	return d
}

// Metric names statsDoc reads from the instance's registry.
const (
	metricStreams     = "waitingroom_stream_connections"
	metricRateLimited = "waitingroom_rate_limited_total"
	metricPoolWait    = "waitingroom_db_pool_acquire_wait_seconds"
)

// metricStats reads the instance's figures from its Prometheus gatherer.
func (a *app) metricStats() (statsDoc, error) {
	d := statsDoc{Streams: map[string]int64{"sse": 0, "ws": 0}, RateLimited: map[string]int64{}}
	if a.GatewayMode != "" {
		d.Shop = newShop(a.GatewayMode)
	}
	mfs, err := a.Metrics.Gather()
	if err != nil {
		return d, err
	}
	for _, mf := range mfs {
		if d.Shop != nil && d.Shop.add(mf) {
			continue
		}
		for _, m := range mf.GetMetric() {
			label := "" // streams and 429s have one label each: transport, limit
			if ls := m.GetLabel(); len(ls) > 0 {
				label = ls[0].GetValue()
			}
			switch mf.GetName() {
			case metricStreams:
				d.Streams[label] += int64(m.GetGauge().GetValue())
			case metricRateLimited:
				d.RateLimited[label] += int64(m.GetCounter().GetValue())
			case metricPoolWait:
				h := m.GetHistogram()
				d.PoolAcquireWait.Count += h.GetSampleCount()
				if n := h.GetSampleCount(); n > 0 {
					d.PoolAcquireWait.MeanSeconds = h.GetSampleSum() / float64(n)
				}
			}
		}
	}
	if d.Shop != nil {
		d.Shop.Latency.settle()
	}
	return d, nil
}
