package admin

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/gateway"
)

// gatewayDoc is a room's gateway settings in the admin API (gateway mode
// only): how visitors enter (challenge, difficulty), what the pass allows
// (pass, sessionTtl, sessionMaxTtl, and a session's limits) and which
// requests need one (protect, and whether those routes are the room's own
// or the configured ones).
type gatewayDoc struct {
	Challenge            string   `json:"challenge"`
	Difficulty           int      `json:"difficulty"`
	Pass                 string   `json:"pass"`
	VisitTTL             string   `json:"visitTtl"`
	VisitTTLSeconds      float64  `json:"visitTtlSeconds"`
	SessionTTL           string   `json:"sessionTtl"`
	SessionTTLSeconds    float64  `json:"sessionTtlSeconds"`
	SessionMaxTTL        string   `json:"sessionMaxTtl"`
	SessionMaxTTLSeconds float64  `json:"sessionMaxTtlSeconds"`
	SessionRate          float64  `json:"sessionRate"`
	SessionBurst         int      `json:"sessionBurst"`
	SessionInFlight      int      `json:"sessionInFlight"`
	SessionNetwork       bool     `json:"sessionNetwork"`
	Protect              []string `json:"protect"`
	// ProtectFrom is "room" when the room has routes of its own, else
	// Names.Protect (the configured routes').
	ProtectFrom string `json:"protectFrom"`
}

// gatewayPut is the "gateway" object of PUT /admin/rooms/{room}; absent
// fields stay. protect: a list of "METHOD /pattern" (this room's), [] for
// none, null to go back to the configured ones.
type gatewayPut struct {
	Challenge     *string         `json:"challenge"`
	Difficulty    *int            `json:"difficulty"`
	Pass          *string         `json:"pass"`
	VisitTTL      json.RawMessage `json:"visitTtl"`      // "5m" or seconds
	SessionTTL    json.RawMessage `json:"sessionTtl"`    // "10m" or seconds
	SessionMaxTTL json.RawMessage `json:"sessionMaxTtl"` // "1h" or seconds
	// A session's limits (gateway.Settings): requests a second, at once
	// after a quiet spell, in flight on one instance; bound to the
	// client's network.
	SessionRate     *float64        `json:"sessionRate"`
	SessionBurst    *int            `json:"sessionBurst"`
	SessionInFlight *int            `json:"sessionInFlight"`
	SessionNetwork  *bool           `json:"sessionNetwork"`
	Protect         json.RawMessage `json:"protect"`
}

// gatewayDocOf builds room's document from the settings in force.
func (a *app) gatewayDocOf(room string) *gatewayDoc {
	if a.Gateway == nil {
		return nil
	}
	s := a.Gateway.Get(room)
	d := &gatewayDoc{Challenge: s.Challenge, Difficulty: s.Difficulty, Pass: s.Pass,
		VisitTTL: fmtDuration(s.VisitTTL), VisitTTLSeconds: s.VisitTTL.Seconds(),
		SessionTTL: fmtDuration(s.SessionTTL), SessionTTLSeconds: s.SessionTTL.Seconds(),
		SessionMaxTTL: fmtDuration(s.SessionMax), SessionMaxTTLSeconds: s.SessionMax.Seconds(),
		SessionRate: s.SessionRate, SessionBurst: s.SessionBurst, SessionInFlight: s.SessionInFlight, SessionNetwork: s.SessionNetwork,
		Protect: []string{}, ProtectFrom: a.Names.Protect}
	if s.Protect != nil {
		d.ProtectFrom = "room"
	}
	for _, r := range a.Gateway.Routes().Routes() {
		if r.Room == room {
			d.Protect = append(d.Protect, r.Method+" "+r.Pattern)
		}
	}
	return d
}

// putGateway applies req to room's gateway settings.
func (a *app) putGateway(c *fiber.Ctx, room string, req *gatewayPut) error {
	if req == nil {
		return nil
	}
	if a.Gateway == nil {
		return api.BadRequest("gateway settings need gateway mode (" + a.Names.Upstream + ")")
	}
	s := a.Gateway.Get(room)
	if req.Challenge != nil {
		s.Challenge = *req.Challenge
	}
	if req.Difficulty != nil {
		s.Difficulty = *req.Difficulty
	}
	if req.Pass != nil {
		s.Pass = *req.Pass
	}
	if req.SessionRate != nil {
		s.SessionRate = *req.SessionRate
	}
	if req.SessionBurst != nil {
		s.SessionBurst = *req.SessionBurst
	}
	if req.SessionInFlight != nil {
		s.SessionInFlight = *req.SessionInFlight
	}
	if req.SessionNetwork != nil {
		s.SessionNetwork = *req.SessionNetwork
	}
	if err := sessionTTLs(req, &s); err != nil {
		return api.BadRequest(err.Error())
	}
	if len(req.Protect) > 0 {
		if err := json.Unmarshal(req.Protect, &s.Protect); err != nil {
			return api.BadRequest(`protect must be a list of "METHOD /path" (this room's routes), [] for none, or null for ` + a.Names.Protect + `'s`)
		}
	}
	_, err := a.Gateway.Put(c.UserContext(), room, s)
	if errors.Is(err, gateway.ErrInvalid) {
		return api.BadRequest(err.Error())
	}
	if err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	a.Logger.Info("gateway settings changed by admin", "room", room, "challenge", s.Challenge, "difficulty", s.Difficulty,
		"pass", s.Pass, "visitTtl", s.VisitTTL, "sessionTtl", s.SessionTTL, "sessionMaxTtl", s.SessionMax, "sessionRate", s.SessionRate,
		"sessionBurst", s.SessionBurst, "sessionInFlight", s.SessionInFlight, "sessionNetwork", s.SessionNetwork, "protect", s.Protect)
	return nil
}

// sessionTTLs reads visitTtl (10s to 1 day), sessionTtl and sessionMaxTtl
// (10s to 7 days).
func sessionTTLs(req *gatewayPut, s *gateway.Settings) error {
	for _, f := range []struct {
		raw     json.RawMessage
		name    string
		example string
		most    time.Duration
		dst     *time.Duration
	}{
		{req.VisitTTL, "visitTtl", "5m", 24 * time.Hour, &s.VisitTTL},
		{req.SessionTTL, "sessionTtl", "10m", 7 * 24 * time.Hour, &s.SessionTTL},
		{req.SessionMaxTTL, "sessionMaxTtl", "1h", 7 * 24 * time.Hour, &s.SessionMax},
	} {
		if len(f.raw) == 0 {
			continue
		}
		d, err := parseDurationField(f.raw, f.name, f.example, time.Second, 10*time.Second, f.most)
		if err != nil {
			return err
		}
		*f.dst = d
	}
	return nil
}
