package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
)

// besideKeys are the names (for queue.RoomKey) of the keys other packages
// keep under a room's hash tag that would outlive a deleted room or be
// inherited by a room created again under its name: the adaptive
// controller's state (queue/adaptive, "adaptive": no expiry) and the
// history's points, clock and ticket clock (queue/history: two hours
// after the last point). The queue removes them with the room's own keys
// in its delete script. TestAdminDeleteLeavesNothing fails when a package
// adds a key that is left behind.
var besideKeys = []string{"adaptive", "history", "history:meta", "history:tickets"}

// deleteRoom answers DELETE /admin/rooms/{room}[?force=true] with 204.
//
// Refusals: 400 for an invalid name or force value; 409 room_configured
// for a room of Options.Configured (every instance would create it again
// at once); 409 room_not_empty while anyone waits, is pre-queued or is
// admitted, unless force; 404 room_not_found when nothing of the room is
// left anywhere; 503 when Postgres or Redis does not answer.
//
// The order of the writes: the definition in Postgres first (so that no
// instance creates the room again from it), then the room in Redis in one
// script (queue.DeleteRoom: checked and removed at once, so an enter
// racing the delete is either refused or counted), then its gateway
// settings. A failure after the first write is a 503 that says to repeat
// the DELETE, which finishes the work; a room the script finds not empty
// after all gets its definition back.
func (a *app) deleteRoom(c *fiber.Ctx) error {
	room, err := roomName(c)
	if err != nil {
		return err
	}
	var force bool
	switch c.Query("force") {
	case "", "false", "0":
	case "true", "1":
		force = true
	default:
		return api.BadRequest("force must be true or false")
	}
	if slices.Contains(a.Configured, room) {
		return &api.Error{Status: fiber.StatusConflict, Code: "room_configured",
			Message: "room " + room + " is in " + a.Names.Rooms + ", so every instance would create it again at once: remove it from " + a.Names.Rooms + " everywhere first"}
	}
	ctx := c.UserContext()
	r, err := a.Queue.Room(ctx, room)
	inRedis := err == nil
	if err != nil && !errors.Is(err, queue.ErrRoomNotFound) {
		return err
	}
	if inRedis && !force {
		if d := (queue.Deleted{Waiting: r.Waiting, PreQueue: r.PreQueue, Admitted: r.Active}); d.Anyone() {
			return notEmpty(room, d)
		}
	}
	var def []byte // the deleted definition; none without Definitions
	if a.Definitions != nil {
		if def, err = a.Definitions.DeleteRoomDefinition(ctx, room); err != nil {
			return errors.Join(api.ErrUnavailable, err) // nothing changed
		}
	}
	d, err := a.Queue.DeleteRoom(ctx, room, force, besideKeys...)
	switch {
	case errors.Is(err, queue.ErrRoomNotEmpty):
		// Someone entered since the check: the room stays, and so must
		// its definition.
		if a.Definitions == nil {
			return notEmpty(room, d)
		}
		if rerr := a.Definitions.RestoreRoomDefinition(ctx, room, def); rerr != nil {
			a.Logger.LogAttrs(ctx, slog.LevelError, "room definition lost: a refused delete could not put it back; a PUT of the room records it again",
				slog.String("room", room), slog.String("error", rerr.Error()))
		}
		return notEmpty(room, d)
	case errors.Is(err, queue.ErrRoomNotFound):
		inRedis = false
	case err != nil:
		return errors.Join(errDeleteUnfinished, err)
	}
	hadGateway := false
	if a.Gateway != nil {
		if hadGateway, err = a.Gateway.Delete(ctx, room); err != nil {
			return errors.Join(errDeleteUnfinished, err)
		}
	}
	if !inRedis && def == nil && !hadGateway {
		return queue.ErrRoomNotFound
	}
	a.Logger.LogAttrs(ctx, slog.LevelInfo, "room deleted by admin", slog.String("room", room), slog.Bool("force", force),
		slog.Int64("waiting", d.Waiting), slog.Int64("preQueue", d.PreQueue), slog.Int64("admitted", d.Admitted))
	return c.SendStatus(fiber.StatusNoContent)
}

// notEmpty is the 409 of a delete refused because of who is in the room.
func notEmpty(room string, d queue.Deleted) error {
	return &api.Error{Status: fiber.StatusConflict, Code: "room_not_empty",
		Message: fmt.Sprintf("room %s is not empty (%d waiting, %d pre-queued, %d admitted): wait until it is, or DELETE with ?force=true to remove them",
			room, d.Waiting, d.PreQueue, d.Admitted)}
}

// errDeleteUnfinished answers a delete cut short after its definition
// went: repeating it finishes it.
var errDeleteUnfinished = &api.Error{Status: fiber.StatusServiceUnavailable, Code: "unavailable",
	Message: "the room was only partly deleted (Redis did not answer): repeat the DELETE", RetryAfter: 1}
