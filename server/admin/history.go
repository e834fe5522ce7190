package admin

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue/history"
	"waitingroom/server/api"
)

// roomHistory answers GET /admin/rooms/{room}/history?since=<Unix ms>: the
// room's points recorded after since (all of the last hour when absent),
// oldest first, one a second at most, the same from every instance:
//
//	{"room": "default",
//	 "intervalSeconds": 1,
//	 "fields": ["t","waiting","active","targetActive","admitted","rate"],
//	 "points": [[1764381600000, 120, 20, 20, 3, 2.5], …]}
//
// Each point is an array in the order of fields: t, the second it was
// read in (Unix ms, Redis's clock, a whole second); waiting; active;
// targetActive (the limit); admitted, users admitted since the previous
// point; rate, the measured admission rate (users/s, three decimals). A
// second no instance recorded is missing (so admitted may span several);
// pass the last point's t as since to get only what is new. 400 for an
// invalid room name or since, 404 room_not_found for an unknown room.
func (a *app) roomHistory(c *fiber.Ctx) error {
	room, err := roomName(c)
	if err != nil {
		return err
	}
	var since int64
	if s := c.Query("since"); s != "" {
		since, err = strconv.ParseInt(s, 10, 64)
		if err != nil || since < 0 {
			return api.BadRequest("since must be a time in Unix milliseconds")
		}
	}
	if _, err := a.Queue.Room(c.UserContext(), room); err != nil {
		return err
	}
	pts, err := a.History.Since(c.UserContext(), room, since)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"room": room, "intervalSeconds": 1, "fields": history.Fields, "points": pts})
}
