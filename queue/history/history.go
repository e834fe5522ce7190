package history

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
	"waitingroom/queue"
	"waitingroom/queue/estimate"
)

//go:embed scripts/claim.lua
var claimSource string

//go:embed scripts/append.lua
var appendSource string

var (
	claimScript  = redis.NewScript(claimSource)
	appendScript = redis.NewScript(appendSource)
)

const (
	// Keep is how many points a room's history holds: the last hour at one
	// point a second.
	Keep = 3600
	// clockKeep bounds the ticket clock: a day of seconds in which new
	// tickets were issued while someone waited.
	clockKeep = 86400
	// lifetime: a room's history keys expire this long after the last
	// point (a room that was removed leaves nothing behind for long).
	lifetime = 2 * time.Hour
	// offset is how far past each second of the instance's clock the loop
	// records, so a tick does not straddle a second boundary.
	offset = 100 * time.Millisecond
)

// Rooms is what the history needs of the queue (*queue.Queue has it): the
// rooms, a room's figures and snapshot, and the keys under a room's hash
// tag.
type Rooms interface {
	Rooms(ctx context.Context) ([]string, error)
	Room(ctx context.Context, room string) (queue.RoomInfo, error)
	Snapshots(ctx context.Context, rooms []string) ([]queue.RoomSnapshot, error)
	RoomKey(room, name string) string
	RecordMeasured(ctx context.Context, room string, hold time.Duration, noShow, absent float64) error
}

// History records and reads the rooms' history. It is safe for concurrent
// use.
type History struct {
	rdb      redis.UniversalClient
	rooms    Rooms
	log      *slog.Logger
	forecast func(room string) estimate.Forecast
	judged   func(room string, e ETAError)
	shownTo  func(room string, eta int64)
	running  func() []string
}

// New returns a History reading the rooms of rooms and keeping their
// history with rdb; log receives unexpected failures (nil: slog.Default).
func New(rdb redis.UniversalClient, rooms Rooms, log *slog.Logger) *History {
	if log == nil {
		log = slog.Default()
	}
	return &History{rdb: rdb, rooms: rooms, log: log}
}

// WithForecasts makes each point record the ETA the room's last in line
// is shown, from forecast (the stream hub's), so the estimates can be
// checked against the waits that followed (ETAErrors). Call it before
// the History is used; it returns h.
func (h *History) WithForecasts(forecast func(room string) estimate.Forecast) *History {
	h.forecast = forecast
	return h
}

// WithJudge makes Run judge every room's recorded estimates (ETAErrors
// over the last hour) every judgeEvery and hand the result to judged (a
// metric). Call it before Run; it returns h.
func (h *History) WithJudge(judged func(room string, e ETAError)) *History {
	h.judged = judged
	return h
}

// WithShown hands the ETA each recorded point holds for the room's last
// in line (WithForecasts; -1: withheld, or nobody waits) to shown (a
// metric), once the point is appended. Call it before Run; it returns h.
func (h *History) WithShown(shown func(room string, eta int64)) *History {
	h.shownTo = shown
	return h
}

// WithRunning makes Run record and judge only the rooms running returns:
// the rooms this instance runs (admission.Admitter.Running), those with work
// and owned by it, so that each busy room gets one point a second for the
// cluster and an idle room none. Without it Run covers every room. Call it
// before Run; it returns h.
func (h *History) WithRunning(running func() []string) *History {
	h.running = running
	return h
}

// covered returns the rooms Run records and judges.
func (h *History) covered(ctx context.Context) ([]string, error) {
	if h.running != nil {
		return h.running(), nil
	}
	return h.rooms.Rooms(ctx)
}

// judgeEvery is how often Run judges the recorded estimates (WithJudge).
const judgeEvery = 30 * time.Second

// Run records every room's point once a second, shortly after each second
// of the instance's clock, and judges the estimates every judgeEvery,
// until ctx is done.
func (h *History) Run(ctx context.Context) {
	var judgedAt time.Time
	loop.Paced(ctx, untilNext(time.Now()), func(ctx context.Context) time.Duration {
		h.recordAll(ctx)
		if h.judged != nil && time.Since(judgedAt) >= judgeEvery {
			judgedAt = time.Now()
			h.judgeAll(ctx)
		}
		return untilNext(time.Now())
	})
}

// judgeAll judges every room's estimates of the last hour.
func (h *History) judgeAll(ctx context.Context) {
	rooms, err := h.covered(ctx)
	if err != nil {
		return
	}
	for _, room := range rooms {
		pts, err := h.Since(ctx, room, time.Now().Add(-time.Hour).UnixMilli())
		if err != nil {
			return
		}
		h.judged(room, ETAErrors(pts))
	}
}

// untilNext is the wait from now until offset past the next second.
func untilNext(now time.Time) time.Duration {
	next := now.Truncate(time.Second).Add(offset)
	if !next.After(now) {
		next = next.Add(time.Second)
	}
	return next.Sub(now)
}

// recordAll records every room, logging what is neither an outage (the
// admission loop logs those) nor a room removed meanwhile.
func (h *History) recordAll(ctx context.Context) {
	rooms, err := h.covered(ctx)
	if err != nil {
		return
	}
	for _, room := range rooms {
		_, err := h.Record(ctx, room)
		if err != nil && ctx.Err() != nil {
			return // shutting down
		}
		if err != nil && !errors.Is(err, queue.ErrRoomNotFound) && !errors.Is(err, queue.ErrUnavailable) {
			h.log.LogAttrs(ctx, slog.LevelWarn, "history record failed", slog.String("room", room), slog.String("error", err.Error()))
		}
	}
}

// Record records room's point for the current second of Redis's clock,
// unless another caller (this or another instance) has claimed that second
// already; recorded says whether this call did. Errors:
// queue.ErrRoomNotFound, queue.ErrUnavailable.
func (h *History) Record(ctx context.Context, room string) (recorded bool, err error) {
	if !queue.ValidRoom(room) {
		return false, queue.ErrRoomNotFound
	}
	k := keysOf(h.rooms, room)
	sec, err := claimScript.Run(ctx, h.rdb, []string{k.meta, k.cfg}, int64(lifetime.Seconds())).Int64()
	if err != nil {
		return false, unavailable("claim", err)
	}
	switch sec {
	case -1: // deleted since the caller listed it
		return false, queue.ErrRoomNotFound
	case 0:
		return false, nil
	}
	info, err := h.rooms.Room(ctx, room)
	if err != nil {
		return false, err
	}
	snaps, err := h.rooms.Snapshots(ctx, []string{room})
	if err != nil {
		return false, err
	}
	seq, head := tickets(snaps[0])
	mid := (info.Waiting + 1) / 2
	eta, etaMid := h.shown(room, info, info.Waiting), h.shown(room, info, mid)
	n, err := appendScript.Run(ctx, h.rdb, []string{k.points, k.meta, k.tickets, k.cfg},
		sec, info.Waiting, info.Active, info.Target, info.Admitted, formatRate(info.Rate), seq, head,
		Keep, clockKeep, int64(lifetime.Seconds()), eta, etaMid, ticketAt(snaps[0], mid)).Int64()
	if err != nil {
		return false, unavailable("append", err)
	}
	if n == -1 { // deleted since its figures were read
		return false, queue.ErrRoomNotFound
	}
	if n == 1 && h.shownTo != nil {
		h.shownTo(room, eta)
	}
	if n == 1 && info.Waiting > 0 {
		h.keepMeasured(ctx, room)
	}
	return n == 1, nil
}

// keepMeasured keeps what room's forecast measured (not a provisional
// one) for the room's next sale (queue.Queue.RecordMeasured), with each
// point while people wait: one small write a second, by the instance that
// records it. Once nobody waits the sale is over for the figures: what the
// last slots do then (expire, or leave) is not what the next sale's first
// shoppers will wait behind.

func (h *History) keepMeasured(ctx context.Context, room string) {
	if h.forecast == nil {
		return
	}
	fc := h.forecast(room)
	if !fc.Known || fc.Provisional || fc.Hold <= 0 {
		return
	}
	if err := h.rooms.RecordMeasured(ctx, room, fc.Hold, fc.NoShow, fc.Absent); err != nil && ctx.Err() == nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "keeping the measured figures failed", slog.String("room", room), slog.String("error", err.Error()))
	}
}

// shown is the ETA a waiting user at position pos of room is shown (-1:
// withheld, or nobody there).
func (h *History) shown(room string, info queue.RoomInfo, pos int64) int64 {
	if h.forecast == nil || pos <= 0 || pos > info.Waiting || info.Paused {
		return -1
	}
	if secs, ok := h.forecast(room).ETA(pos); ok {
		return secs
	}
	return -1
}

// ticketAt derives the ticket at position pos (1-based) from a room's
// snapshot: the pos-th ticket above Serving that is not gone; 0 when
// nobody is there.
func ticketAt(s queue.RoomSnapshot, pos int64) int64 {
	if pos <= 0 || pos > s.Waiting {
		return 0
	}
	t := s.Serving + pos
	for _, g := range s.Gone { // ascending, all above Serving
		if g > t {
			break
		}
		t++
	}
	return t
}

// tickets derives from a room's snapshot the last ticket issued and the
// oldest waiting ticket (0 when nobody waits): every ticket above Serving
// is either waiting or gone, so the last is Serving + Waiting + |Gone|,
// and the oldest waiting is the first above Serving that is not gone.
func tickets(s queue.RoomSnapshot) (seq, head int64) {
	seq = s.Serving + s.Waiting + int64(len(s.Gone))
	if s.Waiting == 0 {
		return seq, 0
	}
	head = s.Serving + 1
	for _, g := range s.Gone { // ascending, all above Serving
		if g == head {
			head++
		} else if g > head {
			break
		}
	}
	return seq, head
}

// formatRate writes a rate with at most three decimals ("0" for none).
func formatRate(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		return "0"
	}
	return strconv.FormatFloat(math.Round(r*1000)/1000, 'f', -1, 64)
}

// unavailable marks err as a failure to reach Redis.
func unavailable(op string, err error) error {
	return fmt.Errorf("history: %s: %w: %w", op, queue.ErrUnavailable, err)
}
