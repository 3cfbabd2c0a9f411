package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A request keeps itself when its context stays as it was: a copy would be
// held through the whole wait on Azure OpenAI (with x-client-timeout-ms
// that does not shorten the budget, on every request from the SPFx client).
func TestRequestIsCopiedOnlyForANewContext(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
	assert.Same(t, r, withContext(r, r.Context()))
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	shortened := withContext(r, ctx)
	assert.NotSame(t, r, shortened)
	assert.Equal(t, ctx, shortened.Context())
}
