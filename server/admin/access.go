package admin

import (
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/access"
	"waitingroom/server/api"
)

// The access lists (package access: deny, allow, bypass, shared through
// Redis) in the admin API, which reads and replaces them.

// accessDoc is the admin API's view of the lists.
type accessDoc struct {
	Deny   []string `json:"deny"`
	Allow  []string `json:"allow"`
	Bypass []string `json:"bypass"`
}

// getAccess shows the lists as Redis holds them (loaded afresh).
func (a *app) getAccess(c *fiber.Ctx) error {
	if err := a.Access.Load(c.UserContext()); err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	l := a.Access.Current()
	return c.JSON(accessDoc{Deny: l.Deny.Entries(), Allow: l.Allow.Entries(), Bypass: l.Bypass.Entries()})
}

// putAccess replaces the lists given in the body (absent lists stay).
func (a *app) putAccess(c *fiber.Ctx) error {
	var req struct {
		Deny   *[]string `json:"deny"`
		Allow  *[]string `json:"allow"`
		Bypass *[]string `json:"bypass"`
	}
	if err := api.DecodeStrict(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := a.Access.Replace(ctx, access.Update{Deny: req.Deny, Allow: req.Allow, Bypass: req.Bypass}); err != nil {
		var ee *access.EntryError
		if errors.As(err, &ee) {
			return api.BadRequest(ee.Error())
		}
		return errors.Join(api.ErrUnavailable, err)
	}
	a.Logger.LogAttrs(ctx, slog.LevelWarn, "access lists changed by admin",
		slog.Any("deny", req.Deny), slog.Any("allow", req.Allow), slog.Any("bypass", req.Bypass))
	return a.getAccess(c)
}
