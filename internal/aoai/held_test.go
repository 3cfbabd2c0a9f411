package aoai

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The request an attempt is made with has no headers: azcore's retry
// policy holds it for the whole wait on Azure OpenAI and sends a copy of
// it, which gets them at the transport (attemptHeaders). A header set here
// would be held twice, a 352-byte map group in each (TestAttemptOnTheWire
// checks that they all still reach Azure OpenAI).
func TestAttemptRequestHoldsNoHeaders(t *testing.T) {
	endpoint, _ := url.Parse("https://contoso.openai.azure.com")
	c, err := New(Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	a, err := c.newCall(context.Background(), &Request{Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 50, RequestID: "req-1"})
	require.NoError(t, err)
	req, err := a.request()
	require.NoError(t, err)
	assert.Empty(t, req.Raw().Header)
	assert.NotNil(t, req.Raw().Header, "the credential policy sets its header on the copy of this map")
	assert.Equal(t, int64(len(a.body)), req.Raw().ContentLength)
}
