package checkout

import (
	"context"
	"errors"
	"sync"
	"time"

	"waitingroom/server/pgstore"
)

// Product ids an order may name are checked against a per-instance cache
// before the entry token is spent. A known id is trusted for
// productKnownTTL, an unknown one for productUnknownTTL (short: a product
// created a moment ago must not be refused for long, and an id guessed by
// a scanner costs at most one query per this period per id). The cache
// holds at most productCacheMax ids; when full it is emptied.
const (
	productKnownTTL   = time.Minute
	productUnknownTTL = 5 * time.Second
	productCacheMax   = 10_000
)

type productCache struct {
	mu sync.Mutex
	m  map[int64]productEntry
}

type productEntry struct {
	known bool
	until time.Time
}

func (p *productCache) get(id int64, now time.Time) (known, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[id]
	if !ok || now.After(e.until) {
		return false, false
	}
	return e.known, true
}

func (p *productCache) put(id int64, known bool, now time.Time) {
	ttl := productKnownTTL
	if !known {
		ttl = productUnknownTTL
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= productCacheMax {
		p.m = make(map[int64]productEntry)
	}
	p.m[id] = productEntry{known: known, until: now.Add(ttl)}
}

// Product returns one product from the store and remembers that it exists.
// A store error is returned as is.
func (c *Checkout) Product(ctx context.Context, id int64) (pgstore.Product, error) {
	p, err := c.o.Store.Product(ctx, id)
	if err != nil {
		return p, err
	}
	c.products.put(id, true, time.Now())
	return p, nil
}

// knownProduct returns pgstore.ErrProductNotFound for a product id that does
// not exist, from the cache or one query; a store failure is a *StoreError.
func (c *Checkout) knownProduct(ctx context.Context, id int64) error {
	now := time.Now()
	known, ok := c.products.get(id, now)
	if !ok {
		_, err := c.o.Store.Product(ctx, id)
		switch {
		case err == nil:
			known = true
		case errors.Is(err, pgstore.ErrProductNotFound):
		default:
			return &StoreError{Err: err}
		}
		c.products.put(id, known, now)
	}
	if !known {
		return pgstore.ErrProductNotFound
	}
	return nil
}
