package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"waitingroom/queue/loop"
)

// Access lists, managed through the admin API and shared by every instance
// through Redis (three sets), read by each instance once a second into
// memory, so checking them costs no Redis call:
//
//	deny    IPs/CIDRs and user ids refused with 403 before any work
//	allow   IPs/CIDRs and user ids exempt from the rate limits (not the queue)
//	bypass  user ids admitted at once when they enter (staff testing a live
//	        sale); every use is logged at WARN as an audit record
//
// An entry is an IP ("198.51.100.7"), a CIDR ("203.0.113.0/24") or
// "user:<id>".
type accessList struct {
	nets  []*net.IPNet
	users map[string]bool
	raw   []string
}

type accessLists struct {
	deny, allow, bypass accessList
}

var errDenied = &apiError{status: fiber.StatusForbidden, code: "denied", message: "access denied"}

func parseAccessList(entries []string) (accessList, error) {
	l := accessList{users: map[string]bool{}, raw: []string{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case strings.HasPrefix(e, "user:"):
			id := strings.TrimPrefix(e, "user:")
			if id == "" {
				return accessList{}, fmt.Errorf("entry %q: empty user id", e)
			}
			l.users[id] = true
		default:
			n, err := parseNet(e)
			if err != nil {
				return accessList{}, fmt.Errorf("entry %q: want an IP, a CIDR or user:<id>", e)
			}
			l.nets = append(l.nets, n)
		}
		l.raw = append(l.raw, e)
	}
	return l, nil
}

// parseNet reads an IP (as a one-address network) or a CIDR.
func parseNet(s string) (*net.IPNet, error) {
	if !strings.Contains(s, "/") {
		if strings.Contains(s, ":") {
			s += "/128"
		} else {
			s += "/32"
		}
	}
	_, n, err := net.ParseCIDR(s)
	return n, err
}

func (l *accessList) hasIP(ip string) bool {
	if len(l.nets) == 0 {
		return false
	}
	p := net.ParseIP(ip)
	for _, n := range l.nets {
		if p != nil && n.Contains(p) {
			return true
		}
	}
	return false
}

func (s *Server) aclKey(list string) string { return s.keyPrefix + "{acl}:" + list }

// access returns the current lists (never nil).
func (s *Server) access() *accessLists {
	if a := s.acl.Load(); a != nil {
		return a
	}
	return &accessLists{}
}

// loadAccess reads the lists from Redis.
func (s *Server) loadAccess(ctx context.Context) error {
	var cmds [3]*redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, name := range []string{"deny", "allow", "bypass"} {
			cmds[i] = p.SMembers(ctx, s.aclKey(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	var a accessLists
	for i, l := range []*accessList{&a.deny, &a.allow, &a.bypass} {
		if *l, err = parseAccessList(cmds[i].Val()); err != nil {
			return err
		}
	}
	s.acl.Store(&a)
	return nil
}

// runAccessRefresh keeps the lists fresh until ctx is done; while Redis is
// unreachable the last lists stay in force.
func (s *Server) runAccessRefresh(ctx context.Context) {
	loop.NowAndEvery(ctx, time.Second, func(ctx context.Context) { _ = s.loadAccess(ctx) })
}

// denyIPs refuses denied addresses before any work, then hands over to
// apiGate (origin.go: the cookie's names, cross-site refusals, security
// events), the rest of the /api/v1 group's gate.
func (s *Server) denyIPs(c *fiber.Ctx) error {
	if a := s.access(); len(a.deny.nets) > 0 && a.deny.hasIP(s.clientIP(c)) {
		return errDenied
	}
	return s.apiGate(c)
}

// checkUser refuses denied users.
func (s *Server) checkUser(user string) error {
	if s.access().deny.users[user] {
		return errDenied
	}
	return nil
}

// exempt reports whether the request's address or user is on the allow list.
func (s *Server) exempt(c *fiber.Ctx, user string) bool {
	a := s.access()
	return (user != "" && a.allow.users[user]) || a.allow.hasIP(s.clientIP(c))
}

// accessDoc is the admin API's view of the lists.
type accessDoc struct {
	Deny   []string `json:"deny"`
	Allow  []string `json:"allow"`
	Bypass []string `json:"bypass"`
}

func (s *Server) adminGetAccess(c *fiber.Ctx) error {
	if err := s.loadAccess(c.UserContext()); err != nil {
		return errors.Join(errDBUnavailable, err)
	}
	a := s.access()
	return c.JSON(accessDoc{Deny: a.deny.raw, Allow: a.allow.raw, Bypass: a.bypass.raw})
}

// adminPutAccess replaces the lists given in the body (absent lists stay).
func (s *Server) adminPutAccess(c *fiber.Ctx) error {
	var req struct {
		Deny   *[]string `json:"deny"`
		Allow  *[]string `json:"allow"`
		Bypass *[]string `json:"bypass"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for name, l := range map[string]*[]string{"deny": req.Deny, "allow": req.Allow, "bypass": req.Bypass} {
			if l == nil {
				continue
			}
			if _, err := parseAccessList(*l); err != nil {
				return errBadRequest(name + ": " + err.Error())
			}
			p.Del(ctx, s.aclKey(name))
			for _, e := range *l {
				if e = strings.TrimSpace(e); e != "" {
					p.SAdd(ctx, s.aclKey(name), e)
				}
			}
		}
		return nil
	})
	if err != nil {
		if _, ok := err.(*apiError); ok {
			return err
		}
		return errors.Join(errDBUnavailable, err)
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "access lists changed by admin",
		slog.Any("deny", req.Deny), slog.Any("allow", req.Allow), slog.Any("bypass", req.Bypass))
	return s.adminGetAccess(c)
}
