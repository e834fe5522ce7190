package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"waitingroom/queue"
)

// Room definitions: the record of the rooms the operators created or
// changed through the admin API, kept here because Postgres keeps its data
// when Redis does not. Redis stays the live configuration every admission
// run reads; a definition is what a room is created again from when Redis
// lost it (queue.Queue.EnsureRoom, which never overwrites a room that
// exists).
//
// A definition is the operator's: PutRoomDefinition records a room's whole
// configuration once, then only the fields each change sets. The target
// the adaptive controller moves in Redis is never recorded over the one
// the operator set: an adaptive room comes back at the operator's target
// and the controller takes it from there.

// The fields of a stored definition (a JSON object), named as the admin
// API names them: targetActive, entryTtlMs, paused, mode, minActive,
// maxActive, method, opensAt (RFC 3339, null for none), message,
// displayName, description, expectedOrderMs (0: none), prequeueParts
// (absent from definitions recorded before it: 1).

// defOf is cfg's whole definition.
func defOf(cfg queue.RoomConfig) map[string]any {
	d := map[string]any{
		"targetActive": cfg.Target, "entryTtlMs": cfg.EntryTTL.Milliseconds(), "paused": cfg.Paused,
		"mode": string(cfg.Mode), "minActive": cfg.MinActive, "maxActive": cfg.MaxActive,
		"method": string(cfg.Method), "opensAt": nil,
		"message": cfg.Message, "displayName": cfg.DisplayName, "description": cfg.Description,
		"expectedOrderMs": cfg.ExpectedOrder.Milliseconds(), "prequeueParts": max(cfg.PrequeueParts, 1),
	}
	if !cfg.OpensAt.IsZero() {
		d["opensAt"] = cfg.OpensAt.UTC()
	}
	return d
}

// patchOf is the part of a definition that u sets.
func patchOf(u queue.RoomUpdate) map[string]any {
	d := map[string]any{}
	set := func(field string, ok bool, v func() any) {
		if ok {
			d[field] = v()
		}
	}
	set("targetActive", u.Target != nil, func() any { return *u.Target })
	set("entryTtlMs", u.EntryTTL != nil, func() any { return u.EntryTTL.Milliseconds() })
	set("paused", u.Paused != nil, func() any { return *u.Paused })
	set("mode", u.Mode != nil, func() any { return string(*u.Mode) })
	set("minActive", u.MinActive != nil, func() any { return *u.MinActive })
	set("maxActive", u.MaxActive != nil, func() any { return *u.MaxActive })
	set("method", u.Method != nil, func() any { return string(*u.Method) })
	set("opensAt", u.OpensAt != nil, func() any {
		if u.OpensAt.IsZero() {
			return nil
		}
		return u.OpensAt.UTC()
	})
	set("message", u.Message != nil, func() any { return *u.Message })
	set("displayName", u.DisplayName != nil, func() any { return *u.DisplayName })
	set("description", u.Description != nil, func() any { return *u.Description })
	set("expectedOrderMs", u.ExpectedOrder != nil, func() any { return max(u.ExpectedOrder.Milliseconds(), 0) })
	set("prequeueParts", u.PrequeueParts != nil, func() any { return *u.PrequeueParts })
	return d
}

// roomDef is a stored definition as read: an absent field reads as zero
// (a definition holds them all; only a hand-made row could lack one).
type roomDef struct {
	Target      *int64     `json:"targetActive"`
	EntryTTLMs  *int64     `json:"entryTtlMs"`
	Paused      *bool      `json:"paused"`
	Mode        *string    `json:"mode"`
	MinActive   *int64     `json:"minActive"`
	MaxActive   *int64     `json:"maxActive"`
	Method      *string    `json:"method"`
	OpensAt     *time.Time `json:"opensAt"`
	Message     *string    `json:"message"`
	DisplayName *string    `json:"displayName"`
	Description *string    `json:"description"`
	// ExpectedOrderMs is absent from definitions recorded before it.
	ExpectedOrderMs *int64 `json:"expectedOrderMs"`
	// PrequeueParts is absent from definitions recorded before it.
	PrequeueParts *int64 `json:"prequeueParts"`
}

// config reads a stored definition; values this version does not know
// read as the room's defaults would (fixed mode, method fifo).
func (d roomDef) config() queue.RoomConfig {
	var cfg queue.RoomConfig
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	cfg.Target, cfg.MinActive, cfg.MaxActive = val(d.Target), val(d.MinActive), val(d.MaxActive)
	cfg.EntryTTL = time.Duration(val(d.EntryTTLMs)) * time.Millisecond
	cfg.Paused = d.Paused != nil && *d.Paused
	cfg.Mode = queue.ModeFixed
	if m := queue.Mode(str(d.Mode)); queue.ValidMode(m) {
		cfg.Mode = m
	}
	cfg.Method = queue.MethodFIFO
	if m, ok := queue.ParseMethod(str(d.Method)); ok {
		cfg.Method = m
	}
	if d.OpensAt != nil {
		cfg.OpensAt = d.OpensAt.UTC()
	}
	cfg.Message, cfg.DisplayName, cfg.Description = str(d.Message), str(d.DisplayName), str(d.Description)
	cfg.ExpectedOrder = time.Duration(max(val(d.ExpectedOrderMs), 0)) * time.Millisecond
	if n := val(d.PrequeueParts); n > 1 {
		cfg.PrequeueParts = int(min(n, queue.MaxPrequeueParts)) // 1 reads as 0, as from Redis
	}
	return cfg
}

// errRoomName: a room name queue.ValidRoom refuses is never stored.
var errRoomName = errors.New("pgstore: invalid room name")

// RoomDefinitions returns every room definition, by room name: what the
// admission loop creates a room again from when Redis has lost it.
func (s *Store) RoomDefinitions(ctx context.Context) (map[string]queue.RoomConfig, error) {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: room definitions: %w", err)
	}
	defer release()
	rows, err := conn.Query(ctx, `SELECT name, config FROM room_definitions`)
	if err != nil {
		return nil, mapErr("room definitions", err)
	}
	out := map[string]queue.RoomConfig{}
	var name string
	var raw []byte
	_, err = pgx.ForEachRow(rows, []any{&name, &raw}, func() error {
		var d roomDef
		if !queue.ValidRoom(name) || json.Unmarshal(raw, &d) != nil {
			return nil // not written by this package: skipped
		}
		out[name] = d.config()
		return nil
	})
	if err != nil {
		return nil, mapErr("room definitions", err)
	}
	return out, nil
}

// PutRoomDefinition records room's definition after the change u: cfg
// whole (the room's configuration once u is applied) when the room has no
// definition yet, else the recorded definition with the fields u sets.
// Two changes at once both land, field by field.
func (s *Store) PutRoomDefinition(ctx context.Context, room string, cfg queue.RoomConfig, u queue.RoomUpdate) error {
	if !queue.ValidRoom(room) {
		return errRoomName
	}
	whole, err := json.Marshal(defOf(cfg))
	if err != nil {
		return fmt.Errorf("pgstore: put room definition: %w", err)
	}
	patch, err := json.Marshal(patchOf(u))
	if err != nil {
		return fmt.Errorf("pgstore: put room definition: %w", err)
	}
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: put room definition: %w", err)
	}
	defer release()
	_, err = conn.Exec(ctx, `INSERT INTO room_definitions (name, config) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET config = room_definitions.config || $3::jsonb, updated_at = now()`,
		room, whole, patch)
	if err != nil {
		return mapErr("put room definition", err)
	}
	return nil
}

// DeleteRoomDefinition removes room's definition and returns it as
// stored (nil when there was none), for RestoreRoomDefinition.
func (s *Store) DeleteRoomDefinition(ctx context.Context, room string) ([]byte, error) {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delete room definition: %w", err)
	}
	defer release()
	var raw []byte
	err = conn.QueryRow(ctx, `DELETE FROM room_definitions WHERE name = $1 RETURNING config`, room).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr("delete room definition", err)
	}
	return raw, nil
}

// RestoreRoomDefinition puts back a definition DeleteRoomDefinition
// removed (a delete that could not complete), unless the room has been
// given one again meanwhile. A nil definition restores nothing.
func (s *Store) RestoreRoomDefinition(ctx context.Context, room string, def []byte) error {
	if def == nil {
		return nil
	}
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: restore room definition: %w", err)
	}
	defer release()
	_, err = conn.Exec(ctx, `INSERT INTO room_definitions (name, config) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, room, def)
	if err != nil {
		return mapErr("restore room definition", err)
	}
	return nil
}
