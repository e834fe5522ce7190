package roominfo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
)

// roomInfoDoc is the public document of GET /api/v1/rooms/{room}: what the
// page shows of a room before entering it. Absent fields are omitted;
// method is always present.
type roomInfoDoc struct {
	Room        string     `json:"room"`
	DisplayName string     `json:"displayName,omitempty"`
	Description string     `json:"description,omitempty"`
	Paused      bool       `json:"paused,omitempty"`
	Message     string     `json:"message,omitempty"`
	OpensAt     *time.Time `json:"opensAt,omitempty"`
	Method      string     `json:"method"`
}

// roomInfoFresh is how long a read is served before it is read again:
// the room set at most once a second per instance, and a room's
// configuration at most once a second per room asked for.
const roomInfoFresh = time.Second

// readTimeout bounds one read; it does not end with the request that
// started it, since the others asking share it.
const readTimeout = 2 * time.Second

// rooms is what the directory reads: the queue's room set and one room's
// configuration.
type rooms interface {
	Rooms(ctx context.Context) ([]string, error)
	ConfigOf(ctx context.Context, room string) (queue.RoomConfig, error)
}

// directory answers for the rooms from memory. It holds the set of room
// names, read again at most once a second, so an unknown room (a
// made-up name) is answered 404 from it without a read of its own; and
// the document of each room asked for, read again at most once a second
// per room. The documents kept are those of the rooms in the set that
// were asked for: made-up names add none.
type directory struct {
	q     rooms
	now   func() time.Time
	names cached[map[string]string] // each name to itself: the copy kept

	mu     sync.RWMutex
	docs   map[string]*cached[roomInfoDoc]
	pruned *snapshot[map[string]string] // the set docs was last pruned to
}

func newDirectory(q rooms, now func() time.Time) *directory {
	return &directory{q: q, now: now, docs: map[string]*cached[roomInfoDoc]{}}
}

// get returns room's document: queue.ErrRoomNotFound for a room not in
// the set (or gone from Redis), queue.ErrUnavailable when Redis cannot be
// read and there is nothing to keep.
func (d *directory) get(ctx context.Context, room string) (roomInfoDoc, error) {
	names, err := d.names.get(ctx, d.now, d.readNames)
	if err != nil {
		return roomInfoDoc{}, err
	}
	room, ok := names[room] // the set's copy: the request's may be reused after it
	if !ok {
		return roomInfoDoc{}, queue.ErrRoomNotFound
	}
	return d.doc(room).get(ctx, d.now, func(ctx context.Context) (roomInfoDoc, error) { return d.readDoc(ctx, room) })
}

// doc is room's cached document, made when first asked for. After each
// read of the set, the first caller also forgets the documents of rooms
// no longer in it, so deleted rooms do not stay in memory.
func (d *directory) doc(room string) *cached[roomInfoDoc] {
	set := d.names.cur.Load()
	d.mu.RLock()
	c, pruned := d.docs[room], d.pruned == set
	d.mu.RUnlock()
	if c != nil && pruned {
		return c
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if set != nil && set.ok && d.pruned != set {
		for r := range d.docs {
			if _, ok := set.v[r]; !ok {
				delete(d.docs, r)
			}
		}
		d.pruned = set
	}
	if c = d.docs[room]; c == nil {
		c = &cached[roomInfoDoc]{}
		d.docs[room] = c
	}
	return c
}

// readNames reads the room set.
func (d *directory) readNames(ctx context.Context) (map[string]string, error) {
	list, err := d.q.Rooms(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(list))
	for _, n := range list {
		names[n] = n
	}
	return names, nil
}

// readDoc reads room's configuration into its document.
func (d *directory) readDoc(ctx context.Context, room string) (roomInfoDoc, error) {
	c, err := d.q.ConfigOf(ctx, room)
	if err != nil {
		return roomInfoDoc{}, err
	}
	doc := roomInfoDoc{Room: room, DisplayName: c.DisplayName, Description: c.Description,
		Paused: c.Paused, Message: c.Message, Method: string(c.Method)}
	if !c.OpensAt.IsZero() {
		at := c.OpensAt
		doc.OpensAt = &at
	}
	return doc, nil
}

// cached is one value read from Redis and served for roomInfoFresh.
type cached[T any] struct {
	cur atomic.Pointer[snapshot[T]]
	mu  sync.Mutex // one read at a time
}

// snapshot is one read; err is set when the read failed and there was
// nothing to keep, or when the thing read is not there (ErrRoomNotFound).
type snapshot[T any] struct {
	v   T
	ok  bool // v was read
	at  time.Time
	err error
}

// get returns the value, reading it again with read when it is older
// than roomInfoFresh. While one caller reads it, the others are answered
// from the previous read; with none yet, they wait for that read and
// share it. When Redis cannot be read the last value is kept (and tried
// again a second later).
func (c *cached[T]) get(ctx context.Context, now func() time.Time, read func(context.Context) (T, error)) (T, error) {
	cur := c.cur.Load()
	if cur != nil && now().Sub(cur.at) < roomInfoFresh {
		return cur.v, cur.err
	}
	if cur != nil && cur.ok {
		if !c.mu.TryLock() {
			return cur.v, nil // another caller is reading it
		}
	} else {
		c.mu.Lock() // nothing to serve yet: wait for the read
	}
	defer c.mu.Unlock()
	if s := c.cur.Load(); s != cur {
		return s.v, s.err // read meanwhile
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	v, err := read(rctx)
	next := &snapshot[T]{v: v, ok: err == nil, at: now(), err: err}
	if err != nil && !errors.Is(err, queue.ErrRoomNotFound) && cur != nil && cur.ok {
		next = &snapshot[T]{v: cur.v, ok: true, at: next.at} // Redis failed: keep the last
	}
	c.cur.Store(next)
	return next.v, next.err
}

// Handler returns the handler of GET /api/v1/rooms/{room}: no token, from
// a directory of q's rooms in this instance's memory; 404 room_not_found
// for an unknown room.
func Handler(q *queue.Queue) fiber.Handler {
	dir := newDirectory(q, time.Now)
	return func(c *fiber.Ctx) error {
		doc, err := dir.get(c.UserContext(), c.Params("room"))
		if err != nil {
			return err // queue.ErrRoomNotFound: 404; queue.ErrUnavailable: 503
		}
		return c.JSON(doc)
	}
}
