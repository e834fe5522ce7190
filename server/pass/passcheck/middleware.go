package passcheck

import (
	"context"
	"io"
	"net/http"
)

// ctxKey is the request context's key for the verified claims.
type ctxKey struct{}

// refusalBody is the whole body of a refusal.
const refusalBody = `{"error":"pass_required"}`

// Middleware lets through the requests whose HeaderName header holds a
// valid pass, with its claims in the request's context (FromContext), and
// answers every other with 403 and {"error":"pass_required"}.
func (c *Checker) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := c.Verify(r.Header.Get(HeaderName))
		if err != nil {
			refuse(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, claims)))
	})
}

func refuse(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, refusalBody)
}

// FromContext returns the claims of the pass Middleware verified.
func FromContext(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(ctxKey{}).(*Claims)
	return c, ok
}
