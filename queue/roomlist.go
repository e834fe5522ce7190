package queue

import (
	"context"
	"slices"
	"strings"
)

// RoomQuery selects one page of room names (ListRooms), in name order.
type RoomQuery struct {
	// After: only names after it ("" from the first); the Next of the
	// previous page.
	After string
	// Prefix: only names that start with it ("": every name).
	Prefix string
	// Limit is the most names of the page (at least 1).
	Limit int
	// Busy, when set, keeps only rooms that have work (true) or only rooms
	// that have none (false), as Busy says.
	Busy *bool
}

// RoomPage is one page of room names.
type RoomPage struct {
	Names []string
	// Next is the After of the next page; "" when no name is left.
	Next string
}

// ScanLimit bounds the names ListRooms looks at in one call with a Busy
// filter: a page of busy rooms among many idle ones may end short (even
// empty) with a Next, and the next call goes on from there.
const ScanLimit = 5000

// ListRooms returns the page of room names q selects. The names are one
// read of the room set, whatever their number (a few dozen bytes a room);
// without a Busy filter nothing else is read, and with one each name
// looked at costs one EXISTS (Busy), pipelined a chunk at a time, and at
// most ScanLimit names are looked at.
func (q *Queue) ListRooms(ctx context.Context, rq RoomQuery) (RoomPage, error) {
	names, err := q.Rooms(ctx)
	if err != nil {
		return RoomPage{}, err
	}
	limit := max(rq.Limit, 1)
	// The first name after After that may start with Prefix: the names
	// are sorted, so those with the prefix follow one another from there.
	from, _ := slices.BinarySearch(names, rq.Prefix)
	if rq.After >= rq.Prefix {
		i, found := slices.BinarySearch(names, rq.After)
		if found {
			i++
		}
		from = i
	}
	end := from
	for end < len(names) && strings.HasPrefix(names[end], rq.Prefix) {
		end++
	}
	match := names[from:end]
	if rq.Busy == nil {
		if len(match) <= limit {
			return RoomPage{Names: match}, nil
		}
		return RoomPage{Names: match[:limit], Next: match[limit-1]}, nil
	}
	var page RoomPage
	chunk := max(2*limit, 64)
	scanned := 0
	for scanned < len(match) {
		if scanned >= ScanLimit {
			page.Next = match[scanned-1]
			return page, nil
		}
		part := match[scanned:min(scanned+chunk, len(match), ScanLimit)]
		busy, err := q.Busy(ctx, part)
		if err != nil {
			return RoomPage{}, err
		}
		for i, b := range busy {
			if b != *rq.Busy {
				continue
			}
			page.Names = append(page.Names, part[i])
			if len(page.Names) == limit {
				if scanned+i+1 < len(match) {
					page.Next = part[i]
				}
				return page, nil
			}
		}
		scanned += len(part)
	}
	return page, nil
}
