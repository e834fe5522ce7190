package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
	"waitingroom/queue"
)

// Challenge and pass modes of a room.
const (
	ChallengeOff = "off"
	ChallengePoW = "pow"
	PassOnce     = "once"
	PassSession  = "session"
)

// Settings are one room's gateway settings, shared by every instance
// through Redis and changed live by the admin API.
type Settings struct {
	// Challenge: ChallengeOff, or ChallengePoW (enter needs a solved
	// proof-of-work challenge of Difficulty leading zero bits).
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
	// Pass: PassOnce (the first protected request consumes the entry
	// token and opens a visit: the room's protected requests for VisitTTL
	// after it) or PassSession (protected requests for SessionTTL after
	// the last one, up to SessionMax after the first).
	Pass       string        `json:"pass"`
	VisitTTL   time.Duration `json:"visitTtl"`
	SessionTTL time.Duration `json:"sessionTtl"`
	SessionMax time.Duration `json:"sessionMaxTtl"`
	// What one session may do, so that a shared cookie serves no crowd:
	// SessionRate requests a second over every instance, SessionBurst at
	// once after a quiet spell (GCRA, in Redis with the session),
	// SessionInFlight requests at once on one instance, and, with
	// SessionNetwork, only from the client network (/24, /64) that opened
	// it.
	SessionRate     float64 `json:"sessionRate"`
	SessionBurst    int     `json:"sessionBurst"`
	SessionInFlight int     `json:"sessionInFlight"`
	SessionNetwork  bool    `json:"sessionNetwork"`
	// Protect, when set, replaces the room's configured routes: each
	// "METHOD /pattern" (the room is this one).
	Protect []string `json:"protect"`
}

// Bounds of the settings.
const (
	MinDifficulty = 1
	MaxDifficulty = 32
	minSession    = 10 * time.Second
	maxSession    = 7 * 24 * time.Hour
	maxVisit      = 24 * time.Hour
	// MaxSessionRate is the highest sessionRate (requests a second): the
	// rate is kept in whole milliseconds between requests.
	MaxSessionRate  = 1000
	MaxSessionBurst = 10000
	MaxInFlight     = 1000
)

// Defaults of a session's limits: a browser on a protected page makes a
// burst of requests (the page, its scripts and calls), then a few a second;
// it opens at most 6 connections to a host over HTTP/1.1, more through an
// HTTP/2 front.
const (
	// DefaultVisitTTL is how long a once pass's visit lasts: long enough
	// for a checkout page, its calls and the order it places.
	DefaultVisitTTL        = 5 * time.Minute
	DefaultSessionRate     = 10
	DefaultSessionBurst    = 60
	DefaultSessionInFlight = 16
)

// Default are the settings of a room nobody has changed: a proof of work of
// difficulty leading zero bits (package pow's default unless the operator
// chose another), and once passes; an operator who turns the challenge off
// has the composition root set Challenge to ChallengeOff. Anonymous enters
// are free to make; the proof is what each costs a bot (docs/security.md,
// "Queue stuffing by anonymous visitors").
func Default(difficulty int) Settings {
	return Settings{Challenge: ChallengePoW, Difficulty: difficulty, Pass: PassOnce, VisitTTL: DefaultVisitTTL,
		SessionTTL: 10 * time.Minute, SessionMax: time.Hour,
		SessionRate: DefaultSessionRate, SessionBurst: DefaultSessionBurst, SessionInFlight: DefaultSessionInFlight}
}

// Check validates s and returns its routes for room.
func (s Settings) Check(room string) ([]Route, error) {
	switch {
	case s.Challenge != ChallengeOff && s.Challenge != ChallengePoW:
		return nil, errors.New("challenge must be off or pow")
	case s.Difficulty < MinDifficulty || s.Difficulty > MaxDifficulty:
		return nil, fmt.Errorf("difficulty must be %d to %d (leading zero bits)", MinDifficulty, MaxDifficulty)
	case s.Pass != PassOnce && s.Pass != PassSession:
		return nil, errors.New("pass must be once or session")
	case s.VisitTTL < minSession || s.VisitTTL > maxVisit:
		return nil, fmt.Errorf("visitTtl must be %v to %v", minSession, maxVisit)
	case s.SessionTTL < minSession || s.SessionTTL > maxSession:
		return nil, fmt.Errorf("sessionTtl must be %v to %v", minSession, maxSession)
	case s.SessionMax < s.SessionTTL || s.SessionMax > maxSession:
		return nil, fmt.Errorf("sessionMaxTtl must be sessionTtl to %v", maxSession)
	case !(s.SessionRate >= 0.01 && s.SessionRate <= MaxSessionRate):
		return nil, fmt.Errorf("sessionRate must be 0.01 to %d requests a second", MaxSessionRate)
	case s.SessionBurst < 1 || s.SessionBurst > MaxSessionBurst:
		return nil, fmt.Errorf("sessionBurst must be 1 to %d requests", MaxSessionBurst)
	case s.SessionInFlight < 1 || s.SessionInFlight > MaxInFlight:
		return nil, fmt.Errorf("sessionInFlight must be 1 to %d requests", MaxInFlight)
	}
	var routes []Route
	for _, spec := range s.Protect {
		r, err := ParseRoute(spec, room)
		if err != nil {
			return nil, fmt.Errorf("protect %q: %w", spec, err)
		}
		routes = append(routes, r)
	}
	return routes, nil
}

// snapshot is every room's settings and the route table at one moment.
type snapshot struct {
	rooms map[string]Settings // rooms with settings of their own
	table *Table
}

// Store keeps the rooms' settings in one Redis hash (room → JSON) and
// their last copy in memory, with the routes they imply.
type Store struct {
	rdb      redis.UniversalClient
	key      string
	defaults []Route // the configured routes
	base     Settings
	cur      loop.Latest[snapshot]
}

// NewStore returns the settings stored under prefix (the instance's key
// prefix). Until the first Load every room has base settings and the
// routes are defaults. It does no I/O.
func NewStore(rdb redis.UniversalClient, prefix string, defaults []Route, base Settings) *Store {
	st := &Store{rdb: rdb, key: prefix + "gw:rooms", defaults: defaults, base: base}
	st.cur.Put(0, st.build(nil))
	return st
}

// build compiles the route table: a room with its own Protect replaces
// its configured routes.
func (st *Store) build(rooms map[string]Settings) *snapshot {
	var routes []Route
	for _, r := range st.defaults {
		if s, ok := rooms[r.Room]; !ok || s.Protect == nil {
			routes = append(routes, r)
		}
	}
	for room, s := range rooms {
		own, err := s.Check(room)
		if err == nil && s.Protect != nil {
			routes = append(routes, own...)
		}
	}
	return &snapshot{rooms: rooms, table: NewTable(routes)}
}

// Routes returns the route table in force.
func (st *Store) Routes() *Table { return st.cur.Get().table }

// Get returns room's settings in force (base settings unless changed).
func (st *Store) Get(room string) Settings {
	if s, ok := st.cur.Get().rooms[room]; ok {
		return s
	}
	return st.base
}

// Load reads every room's settings from Redis into memory. Entries that
// do not parse or validate (written by a newer version, say) are skipped.
// A read never replaces one that began after it (loop.Latest): the
// periodic read under way when Put stored a change would otherwise put the
// old settings back for a second, on the very instance that made it.
func (st *Store) Load(ctx context.Context) error {
	read := st.cur.Begin()
	all, err := st.rdb.HGetAll(ctx, st.key).Result()
	if err != nil {
		return err
	}
	rooms := make(map[string]Settings, len(all))
	for room, raw := range all {
		s := st.base
		if json.Unmarshal([]byte(raw), &s) != nil || !queue.ValidRoom(room) {
			continue
		}
		if _, err := s.Check(room); err != nil {
			continue
		}
		rooms[room] = s
	}
	st.cur.Put(read, st.build(rooms))
	return nil
}

// RefreshEvery is how often Run reads the settings: a change made on one
// instance is in force on every instance within this time.
const RefreshEvery = time.Second

// Run loads the settings at once and then every RefreshEvery until ctx is
// done; a failed load keeps the last settings in force.
func (st *Store) Run(ctx context.Context) {
	loop.NowAndEvery(ctx, RefreshEvery, func(ctx context.Context) { _ = st.Load(ctx) })
}

// ErrInvalid wraps a refused settings change; its text says why.
var ErrInvalid = errors.New("invalid gateway settings")

// Put validates and stores room's settings, then reloads them here (other
// instances follow within RefreshEvery). Concurrent puts to one room: the
// last one wins whole.
func (st *Store) Put(ctx context.Context, room string, s Settings) (Settings, error) {
	if !queue.ValidRoom(room) {
		return Settings{}, fmt.Errorf("%w: the room name must be 1-64 of a-z 0-9 - _", ErrInvalid)
	}
	if _, err := s.Check(room); err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return Settings{}, err
	}
	if err := st.rdb.HSet(ctx, st.key, room, raw).Err(); err != nil {
		return Settings{}, err
	}
	return s, st.Load(ctx)
}

// Delete removes room's settings — a deleted room's, so that a room
// created again under its name starts from the base settings and the
// configured routes — and reports whether it had any; then it reloads
// the settings here (other instances follow within RefreshEvery).
func (st *Store) Delete(ctx context.Context, room string) (bool, error) {
	n, err := st.rdb.HDel(ctx, st.key, room).Result()
	if err != nil {
		return false, err
	}
	return n > 0, st.Load(ctx)
}
