package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// requestID settles the request's id: the caller's x-request-id when it is
// safe to echo and log (saneID), else a new one. Every answer carries it in
// x-request-id, and the log line and error bodies name it.
func (s *server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("x-request-id")
		if !saneID(id) {
			id = newID()
		}
		w.Header().Set("x-request-id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idKey{}, id)))
	})
}

type idKey struct{}

// requestID is the id requestID settled for the request of ctx.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// saneID accepts a caller's correlation id that is safe to echo and log:
// 1-128 characters of A-Za-z0-9._:-.
func saneID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := range len(id) {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
