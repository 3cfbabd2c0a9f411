package aoai

import (
	"context"
	"io"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The request an attempt is made with has no headers: azcore's retry
// policy holds it for the whole wait on Azure OpenAI and sends a copy of
// it, which gets them at the transport (prepareSend). A header set here
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
	assert.Nil(t, req.Raw().Body, "a body given with azcore's SetBody fills the header map")
}

// The body the transport is given is one net/http writes straight from its
// bytes (an io.WriterTo inside io.NopCloser, which net/http takes off), not
// the reader azcore's retry policy wraps SetBody's body in: net/http reads
// the end of such a body with an 8 KB buffer from io.Discard's pool, 4.6 KB
// allocated per request on average in a burst of held requests. Each send
// gets it whole, and GetBody gives it again.
func TestSentBodyIsWrittenFromItsBytes(t *testing.T) {
	endpoint, _ := url.Parse("https://contoso.openai.azure.com")
	c, err := New(Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	a, err := c.newCall(context.Background(), &Request{Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 50})
	require.NoError(t, err)
	req, err := a.request()
	require.NoError(t, err)
	for range 2 { // a request sent again is sent whole
		sent := req.Raw().Clone(req.Raw().Context()) // what the retry policy sends
		prepareSend(sent)
		assert.Implements(t, (*io.WriterTo)(nil), sent.Body)
		assert.Equal(t, int64(len(a.body)), sent.ContentLength)
		b, err := io.ReadAll(sent.Body)
		require.NoError(t, err)
		assert.Equal(t, string(a.body), string(b))
		again, err := sent.GetBody()
		require.NoError(t, err)
		b, err = io.ReadAll(again)
		require.NoError(t, err)
		assert.Equal(t, string(a.body), string(b))
	}
}
