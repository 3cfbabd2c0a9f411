package api

import (
	"io"
	"net/http"
	"time"
)

// A request body ties up its connection until it has arrived. net/http,
// when a handler answers without reading the body (a 415, a 404, a 403),
// reads what is left of it before sending the answer, so that the
// connection can serve the next request: a body that stalled after one
// byte held the answer back and the connection open for ever (2,000 such
// held 2,000 descriptors). bodyConn bounds that. The read deadline of a
// request with a body is the request's budget from its first line; and
// when the handler has answered before the body was in, the read is ended
// at once, so net/http's drain fails, and it sends the answer with
// Connection: close and closes the connection instead of waiting.
type bodyConn struct {
	rc   *http.ResponseController
	body *watchedBody
}

// watchBody arms the bound for r, and returns nil for a request without a
// body (net/http is already reading the connection for the next request
// then, and a deadline would break that read).
func watchBody(w http.ResponseWriter, r *http.Request, deadline time.Time) *bodyConn {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	c := &bodyConn{rc: http.NewResponseController(w), body: &watchedBody{ReadCloser: r.Body}}
	// A ResponseWriter that cannot set it has no connection to stall.
	_ = c.rc.SetReadDeadline(deadline)
	r.Body = c.body
	return c
}

// endRead ends the connection's read now if the handler has answered before
// the body was in (see bodyConn). finish calls it before the answer is sent.
func (c *bodyConn) endRead() {
	if c.unread() {
		_ = c.rc.SetReadDeadline(time.Now())
	}
}

// unread reports whether the handler answered before the body was in.
func (c *bodyConn) unread() bool {
	return c != nil && !c.body.eof
}

// watchedBody notes when the body has been read to its end.
type watchedBody struct {
	io.ReadCloser
	eof bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}
