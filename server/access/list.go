package access

import (
	"fmt"
	"net"
	"strings"
)

// List is one parsed access list. Its zero value is empty.
type List struct {
	nets  []*net.IPNet
	users map[string]bool
	raw   []string
}

// EntryError is an entry that is neither an IP, a CIDR nor "user:<id>".
// List names the list when it is known ("deny", "allow", "bypass").
type EntryError struct {
	List   string
	Entry  string
	Reason string
}

func (e *EntryError) Error() string {
	msg := fmt.Sprintf("entry %q: %s", e.Entry, e.Reason)
	if e.List != "" {
		msg = e.List + ": " + msg
	}
	return msg
}

// Parse reads a list's entries; blank ones are skipped, others trimmed. An
// invalid entry is an *EntryError.
func Parse(entries []string) (List, error) {
	l := List{users: map[string]bool{}, raw: []string{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case strings.HasPrefix(e, "user:"):
			id := strings.TrimPrefix(e, "user:")
			if id == "" {
				return List{}, &EntryError{Entry: e, Reason: "empty user id"}
			}
			l.users[id] = true
		default:
			n, err := ParseNet(e)
			if err != nil {
				return List{}, &EntryError{Entry: e, Reason: "want an IP, a CIDR or user:<id>"}
			}
			l.nets = append(l.nets, n)
		}
		l.raw = append(l.raw, e)
	}
	return l, nil
}

// ParseNet reads an IP (as a one-address network) or a CIDR.
func ParseNet(s string) (*net.IPNet, error) {
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

// HasNets reports whether the list holds any address or network, so a
// caller can skip working out an address when it does not.
func (l *List) HasNets() bool { return len(l.nets) > 0 }

// HasIP reports whether ip is in one of the list's networks (a nil ip is
// in none).
func (l *List) HasIP(ip net.IP) bool { return ip != nil && InNets(l.nets, ip) }

// InNets reports whether ip is in one of nets (the trusted proxies use it
// too).
func InNets(nets []*net.IPNet, ip net.IP) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// HasUser reports whether the list names user id ("user:<id>").
func (l *List) HasUser(id string) bool { return l.users[id] }

// Entries returns the list's entries as stored (never nil; do not modify).
func (l *List) Entries() []string {
	if l.raw == nil {
		return []string{}
	}
	return l.raw
}
