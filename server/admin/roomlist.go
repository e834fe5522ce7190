package admin

import (
	"context"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
)

// Paging of GET /admin/rooms and GET /admin/stats: with thousands of
// rooms a call reads the room names (one read, whatever their number) and
// then only its page's rooms, so it costs about its page's size.
const (
	// roomsLimit and roomsMaxLimit are GET /admin/rooms' default and
	// largest limit.
	roomsLimit, roomsMaxLimit = 100, 1000
	// statsLimit and statsMaxLimit are GET /admin/stats': each of its
	// rooms also reads the room's last hour of history.
	statsLimit, statsMaxLimit = 20, 100
)

// roomsQuery reads the paging parameters of c: limit (1 to max, default
// def), after (a room name: the page starts after it), prefix (names
// starting with it) and busy (1 or true: rooms with work only, 0 or
// false: rooms without, any: all; absent: busyDef).
// A value out of range is a 400.
func roomsQuery(c *fiber.Ctx, def, maxLimit int, busyDef *bool) (queue.RoomQuery, error) {
	rq := queue.RoomQuery{Limit: def, Busy: busyDef}
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return rq, api.BadRequest("limit must be from 1 to " + strconv.Itoa(maxLimit))
		}
		rq.Limit = n
	}
	if s := c.Query("after"); s != "" {
		if !queue.ValidRoom(s) {
			return rq, api.BadRequest("after must be a room name (1-64 of a-z 0-9 - _): the next of the previous page")
		}
		rq.After = s
	}
	if s := c.Query("prefix"); s != "" {
		if !queue.ValidRoom(s) { // the start of a room name is one too
			return rq, api.BadRequest("prefix must be the start of a room name (1-64 of a-z 0-9 - _)")
		}
		rq.Prefix = s
	}
	switch s := c.Query("busy"); s {
	case "":
	case "1", "true":
		yes := true
		rq.Busy = &yes
	case "0", "false":
		no := false
		rq.Busy = &no
	case "any":
		rq.Busy = nil
	default:
		return rq, api.BadRequest("busy must be 1 (rooms with work), 0 (rooms without) or any")
	}
	return rq, nil
}

// next is a page's cursor as the API shows it: null on the last page.
func next(p queue.RoomPage) *string {
	if p.Next == "" {
		return nil
	}
	return &p.Next
}

// rooms answers GET /admin/rooms: one page of rooms in name order,
//
//	{"rooms": [roomDoc…], "next": "name" | null}
//
// next is the after of the next page (null: this page is the last). A
// page with busy may hold fewer than limit rooms, even none, and still
// have a next: a call looks at no more than queue.ScanLimit names.
func (a *app) rooms(c *fiber.Ctx) error {
	rq, err := roomsQuery(c, roomsLimit, roomsMaxLimit, nil)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	page, err := a.Queue.ListRooms(ctx, rq)
	if err != nil {
		return err
	}
	infos, err := a.Queue.RoomInfos(ctx, page.Names)
	if err != nil {
		return err
	}
	docs, err := a.roomDocs(ctx, infos)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"rooms": docs, "next": next(page)})
}

// docReaders bounds the rooms whose adaptive state a page reads at once.
const docReaders = 8

// roomDocs builds the documents of rooms, reading their adaptive states
// a few at a time.
func (a *app) roomDocs(ctx context.Context, rooms []queue.RoomInfo) ([]roomDoc, error) {
	docs := make([]roomDoc, len(rooms))
	errs := make([]error, len(rooms))
	sem := make(chan struct{}, docReaders)
	var wg sync.WaitGroup
	for i, r := range rooms {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			docs[i], errs[i] = a.roomDocOf(ctx, r)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return docs, nil
}
