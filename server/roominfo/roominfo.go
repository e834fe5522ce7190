package roominfo

import (
	"context"
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

// roomInfoFresh is how long the room directory is served before it is
// read again: at most one Redis read of every room's configuration per
// second per instance, whatever the number of pages asking.
const roomInfoFresh = time.Second

// roomDirectory is every room's public document, held in memory: the
// endpoint never reads Redis per request. An unknown room is answered from
// the directory too (404), so made-up names cost nothing either; that is
// why it needs no rate limit of its own (layer 1's connection and request
// guards apply as to every request).
type roomDirectory struct {
	q   *queue.Queue
	cur atomic.Pointer[roomDirSnapshot]
	mu  sync.Mutex // one refresh at a time
}

// roomDirSnapshot is one read of the directory; err is set when the read
// failed and there was nothing to keep.
type roomDirSnapshot struct {
	docs map[string]roomInfoDoc
	at   time.Time
	err  error
}

// get returns the directory, reading it again when it is older than
// roomInfoFresh. While one request reads it, others are answered from
// the previous one. When Redis cannot be read the last directory is kept
// (and tried again a second later); with none, the answer is 503.
func (d *roomDirectory) get(ctx context.Context) (map[string]roomInfoDoc, error) {
	cur := d.cur.Load()
	if cur != nil && time.Since(cur.at) < roomInfoFresh {
		return cur.docs, cur.err
	}
	if cur != nil && cur.docs != nil {
		if !d.mu.TryLock() {
			return cur.docs, nil // another request is reading it
		}
	} else {
		d.mu.Lock() // nothing to serve yet: wait for the read
	}
	defer d.mu.Unlock()
	if now := d.cur.Load(); now != cur {
		return now.docs, now.err // read meanwhile
	}
	next := d.read(ctx)
	if next.err != nil && cur != nil && cur.docs != nil {
		next = &roomDirSnapshot{docs: cur.docs, at: next.at}
	}
	d.cur.Store(next)
	return next.docs, next.err
}

// read reads every room's configuration (one pipeline) into documents.
func (d *roomDirectory) read(ctx context.Context) *roomDirSnapshot {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	cfgs, err := d.q.RoomConfigs(rctx)
	now := time.Now()
	if err != nil {
		return &roomDirSnapshot{at: now, err: err}
	}
	docs := make(map[string]roomInfoDoc, len(cfgs))
	for name, c := range cfgs {
		doc := roomInfoDoc{Room: name, DisplayName: c.DisplayName, Description: c.Description,
			Paused: c.Paused, Message: c.Message, Method: string(c.Method)}
		if !c.OpensAt.IsZero() {
			at := c.OpensAt
			doc.OpensAt = &at
		}
		docs[name] = doc
	}
	return &roomDirSnapshot{docs: docs, at: now}
}

// Handler returns the handler of GET /api/v1/rooms/{room}: no token, from
// a room directory of q's in this instance's memory; 404 room_not_found
// for an unknown room.
func Handler(q *queue.Queue) fiber.Handler {
	dir := &roomDirectory{q: q}
	return func(c *fiber.Ctx) error {
		docs, err := dir.get(c.UserContext())
		if err != nil {
			return err // queue.ErrUnavailable: 503
		}
		doc, ok := docs[c.Params("room")]
		if !ok {
			return queue.ErrRoomNotFound
		}
		return c.JSON(doc)
	}
}
